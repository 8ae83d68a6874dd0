// `spade report RUN_DIR... --out FILE.html [--md FILE.md] [--overwrite]`: training runs compared on one
// self-contained page (trainer/run_report.h), and optionally the same tables in Markdown.
#include <cstdio>

#include "apps/commands.h"
#include "common/output_path.h"
#include "trainer/run_report.h"

namespace spade::apps {

void add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> runs;
    std::string out, md;
    bool overwrite = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("report", "compare training runs on one web page (curves, success with intervals)");
  c->add_option("runs", a->runs, "run directories of `spade train`")->required()->check(CLI::ExistingDirectory);
  c->add_option("--out", a->out, "the page (a new or empty file in an existing directory)")->required();
  c->add_option("--md", a->md, "also write the tables as Markdown here");
  c->add_flag("--overwrite", a->overwrite, "replace non-empty --out / --md files (never a run's own files)");
  c->callback([a] {
    set_action([a] {
      OutputRule rule;
      rule.what = "report --out";
      rule.overwrite = a->overwrite;
      rule.inputs = a->runs;
      check_output(a->out, OutputKind::file, rule);
      OutputRule md_rule = rule;
      md_rule.what = "report --md";
      if (!a->md.empty()) check_output(a->md, OutputKind::file, md_rule);
      std::vector<trainer::RunMetrics> runs;
      for (const std::string& d : a->runs) runs.push_back(trainer::load_run_metrics(d));
      write_output_file(a->out, trainer::runs_report_html(runs), rule);
      if (!a->md.empty()) write_output_file(a->md, trainer::runs_report_markdown(runs), md_rule);
      std::printf("report: %zu run%s -> %s%s\n", runs.size(), runs.size() == 1 ? "" : "s", a->out.c_str(),
                  a->md.empty() ? "" : (" and " + a->md).c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
