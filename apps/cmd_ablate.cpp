// `spade ablate --base CONFIG --variants OVERLAY... [--print | --collect]`: a base config and its
// variants (configs/ablations/*.yaml) trained one after another on the same seed and budget, each
// evaluated on the held-out sets before and after self-play, then compared in one table
// (trainer/ablation.h: Markdown + JSON) and one report page (trainer/run_report.h).
//
// Runs are named <base run.name>-<variant> ("base" for the base itself) under the base's run.out_dir.
// A run already complete there is kept, an interrupted one is resumed from its newest checkpoint, so an
// ablation killed mid-way continues where it stopped. When the base config has no eval section
// (eval.every = 0), each run evaluates at step 0 and after its last step on data/heldout_envs and on
// held-out reset seeds of its seed games (eval.reset_seeds: heldout; trainer/reset_seeds.h).
// --print only prints the launch lines (one `spade train` per variant, under torchrun or srun) and the
// --collect line that builds the table once the cluster's runs are done.
#include <cstdio>
#include <filesystem>

#include "apps/commands.h"
#include "apps/config_args.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "trainer/ablation.h"
#include "trainer/run_report.h"
#include "trainer/train.h"

namespace spade::apps {

namespace {

namespace fs = std::filesystem;

struct AblateArgs {
  ConfigArgs base;                    // --base (as --config), --set
  std::vector<std::string> variants;  // overlay files
  bool no_baseline = false, print = false, collect = false, overwrite = false;
  std::string out, launcher = "local";
  int nproc = 1;
};

struct Variant {
  std::string name;     // "base" or the overlay's stem
  ConfigArgs args;      // base + this overlay + --set + the run name (+ the eval section when absent)
  trainer::Config config;
  std::string run_dir() const { return (fs::path(config.run.out_dir) / config.run.name).string(); }
};

std::string quoted(const std::string& s) {
  if (s.find_first_of(" \t'\"$`\\[]*?;&|<>(){}") == std::string::npos && !s.empty()) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::vector<Variant> resolve_variants(const AblateArgs& a) {
  const trainer::Config base = load_config_args(a.base, /*inputs=*/false);
  std::vector<std::pair<std::string, std::string>> named;  // name, overlay ("" for the base)
  if (!a.no_baseline) named.push_back({"base", ""});
  for (const std::string& overlay : a.variants) named.push_back({fs::path(overlay).stem().string(), overlay});
  std::vector<Variant> out;
  for (const auto& [name, overlay] : named) {
    for (const Variant& v : out)
      if (v.name == name) throw Error("ablate: two variants are named '" + name + "' (" + overlay + "): rename one file");
    Variant v;
    v.name = name;
    v.args = a.base;
    if (!overlay.empty()) v.args.overlays.push_back(overlay);
    v.args.overrides.push_back("run.name=" + base.run.name + "-" + name);
    trainer::Config c = load_config_args(v.args, /*inputs=*/false);
    if (c.eval.every == 0 && c.selfplay.steps > 0) {  // before/after on both held-out sets
      v.args.overrides.push_back("eval.every=" + std::to_string(c.selfplay.steps));
      v.args.overrides.push_back("eval.sets=[" + resolve_data_path("data/heldout_envs") + ", " + c.seed_envs.dir + "]");
      v.args.overrides.push_back("eval.reset_seeds=heldout");
    }
    v.config = load_config_args(v.args, /*inputs=*/!a.print && !a.collect);
    out.push_back(std::move(v));
  }
  return out;
}

bool complete(const std::string& run_dir) {
  const fs::path summary = fs::path(run_dir) / "summary.json";
  if (!fs::exists(summary)) return false;
  const nlohmann::json j = nlohmann::json::parse(read_file(summary.string()), nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("finished", false);
}

// Trains one variant: kept when complete, resumed when interrupted after a checkpoint, else started.
void train_variant(const Variant& v, bool overwrite) {
  const std::string dir = v.run_dir();
  const auto log = [&v](const std::string& line) {
    std::printf("[%s] %s\n", v.name.c_str(), line.c_str());
    std::fflush(stdout);
  };
  trainer::TrainOptions options;
  options.inputs = config_inputs(v.args);
  if (!overwrite && complete(dir)) {
    log("complete in " + dir + ": kept (--overwrite retrains it)");
    return;
  }
  if (!overwrite && fs::exists(fs::path(dir) / "checkpoints") && !fs::is_empty(fs::path(dir) / "checkpoints")) {
    log("resuming " + dir);
    trainer::Config c = trainer::load_run_config(dir);  // its saved config: base, overlay, eval section
    c.seed_envs.dir = resolve_data_path(c.seed_envs.dir);
    options.resume = true;
    options.inputs.clear();
    trainer::run_train(c, options, log);
    return;
  }
  options.overwrite = overwrite && fs::exists(dir);
  log("training " + dir);
  trainer::run_train(v.config, options, log);
}

void print_launch_lines(const AblateArgs& a, const std::vector<Variant>& variants) {
  std::printf("# %zu runs, one after another or side by side (each its own run directory):\n", variants.size());
  for (const Variant& v : variants) {
    std::string line;
    if (a.launcher == "torchrun") {
      line = "torchrun --no-python --nproc-per-node " + std::to_string(a.nproc) + " spade train";
    } else if (a.launcher == "srun") {
      line = "sbatch scripts/launch/slurm.sbatch";
    } else {
      line = "spade train" + (a.nproc > 1 ? " --nproc " + std::to_string(a.nproc) : std::string());
    }
    for (const std::string& arg : config_argv(v.args)) line += " " + quoted(arg);
    std::printf("%s\n", line.c_str());
  }
  std::string collect = "spade ablate";
  if (!a.base.config.empty()) collect += " --base " + quoted(a.base.config);
  for (const std::string& o : a.base.overrides) collect += " --set " + quoted(o);
  if (!a.variants.empty()) collect += " --variants";
  for (const std::string& o : a.variants) collect += " " + quoted(o);
  if (a.no_baseline) collect += " --no-baseline";
  if (!a.out.empty()) collect += " --out " + quoted(a.out);
  std::printf("# then the comparison table and report:\n%s --collect\n", collect.c_str());
}

// Where the table and report go, and the rule for that folder: new, empty, or this command's own earlier
// output (it holds ablation.json); never one of the runs.
std::string output_dir(const AblateArgs& a, const std::vector<Variant>& variants) {
  if (!a.out.empty()) return a.out;
  const trainer::Config& base = variants.front().config;
  return (fs::path(base.run.out_dir) / (base.run.name + "-ablation")).string();
}

OutputRule output_rule(const AblateArgs& a, const std::vector<Variant>& variants) {
  OutputRule rule;
  rule.what = "ablate --out";
  rule.overwrite = a.overwrite;
  for (const Variant& v : variants) rule.inputs.push_back(v.run_dir());
  rule.own = [](const std::string& path) { return fs::exists(fs::path(path) / "ablation.json"); };
  rule.may_create_parent = a.out.empty();  // the default lies in run.out_dir, which training creates
  return rule;
}

void write_comparison(const AblateArgs& a, const std::vector<Variant>& variants) {
  std::vector<trainer::RunMetrics> runs;
  std::vector<trainer::AblationRow> rows;
  for (const Variant& v : variants) {
    if (!fs::exists(fs::path(v.run_dir()) / "metrics.jsonl"))
      throw Error("ablate --collect: variant " + v.name + ": no run at " + v.run_dir() + " (train it first)");
    runs.push_back(trainer::load_run_metrics(v.run_dir()));
    rows.push_back(trainer::ablation_row(v.name, runs.back()));
  }
  const std::string out = output_dir(a, variants);
  OutputRule files = output_rule(a, variants);
  check_output(out, OutputKind::directory, files);
  fs::create_directory(out);
  files.overwrite = true;  // inside its own folder: rewritten on every call
  write_output_file(out + "/ablation.md", trainer::ablation_markdown(rows), files);
  write_output_file(out + "/ablation.json", trainer::ablation_json(rows).dump(2) + "\n", files);
  write_output_file(out + "/report.html", trainer::runs_report_html(runs), files);
  std::printf("%s\nablate: %zu runs -> %s/ablation.md, ablation.json, report.html\n",
              trainer::ablation_markdown(rows).c_str(), rows.size(), out.c_str());
}

}  // namespace

void add_ablate_command(CLI::App& app) {
  auto a = std::make_shared<AblateArgs>();
  CLI::App* c = app.add_subcommand(
      "ablate", "train a base config and its variants (configs/ablations/*.yaml) on the same seed and budget, "
                "evaluate each before and after, and compare them (table + report page)");
  c->add_option("--base", a->base.config, "the base run config (YAML); default: the embedded configs/games-tiny.yaml");
  c->add_option("--variants", a->variants, "overlay files, one run each (e.g. configs/ablations/*.yaml)")
      ->check(CLI::ExistingFile);
  c->add_option("--set", a->base.overrides, "override a key of every run, e.g. --set selfplay.steps=16 (repeatable)");
  c->add_flag("--no-baseline", a->no_baseline, "do not train the base config itself");
  c->add_option("--out", a->out, "where the table and report go (default <run.out_dir>/<run.name>-ablation)");
  c->add_flag("--print", a->print, "print the launch lines (and the --collect line) instead of training");
  c->add_option("--launcher", a->launcher, "with --print: local (spade train), torchrun or srun")
      ->check(CLI::IsMember({"local", "torchrun", "srun"}));
  c->add_option("--nproc", a->nproc, "with --print: ranks per run (data parallel)")->check(CLI::Range(1, 1024));
  c->add_flag("--collect", a->collect, "only build the table and report from runs already trained");
  c->add_flag("--overwrite", a->overwrite, "retrain runs already complete (replacing their run directories)");
  c->callback([a] {
    set_action([a] {
      if (a->print && a->collect) throw Error("ablate: --print and --collect exclude each other");
      if (a->no_baseline && a->variants.empty()) throw Error("ablate: --no-baseline needs at least one --variants file");
      const std::vector<Variant> variants = resolve_variants(*a);
      if (a->print) {
        print_launch_lines(*a, variants);
        return 0;
      }
      // The output folder is checked before hours of training, not after.
      if (!a->collect) check_output(output_dir(*a, variants), OutputKind::directory, output_rule(*a, variants));
      if (!a->collect)
        for (const Variant& v : variants) train_variant(v, a->overwrite);
      write_comparison(*a, variants);
      return 0;
    });
  });
}

}  // namespace spade::apps
