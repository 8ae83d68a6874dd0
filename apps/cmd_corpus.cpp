// `spade corpus build [--from PATH...] --out F.jsonl [--overwrite]`: corpus documents from Python
// sources. --out follows common/output_path.h (checked before the sources are read).
#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "common/output_path.h"
#include "trainer/corpus.h"

namespace spade::apps {

void add_corpus_commands(CLI::App& app) {
  CLI::App* corpus = app.add_subcommand("corpus", "corpus documents that ground environment generation");
  corpus->require_subcommand(1);
  struct Args {
    std::vector<std::string> from;
    std::string out;
    int max_words = 6000, min_words = 20;
    bool overwrite = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* build = corpus->add_subcommand("build", "extract documentation text from Python sources into JSONL");
  build->add_option("--from", args->from, "files or directories to scan (default: the Python stdlib and sympy)");
  build->add_option("--out", args->out, "output JSONL path: a new or empty file in an existing directory")->required();
  build->add_flag("--overwrite", args->overwrite, "replace a non-empty --out (never one of the --from sources)");
  build->add_option("--max-words", args->max_words, "word cap per document (reference: 6000)");
  build->add_option("--min-words", args->min_words, "skip documents with fewer words");
  build->callback([args] {
    set_action([args] {
      std::vector<std::string> from = args->from.empty() ? trainer::default_corpus_sources() : args->from;
      OutputRule rule;
      rule.what = "corpus build --out";
      rule.overwrite = args->overwrite;
      rule.inputs = from;
      check_output(args->out, OutputKind::file, rule);  // before minutes of reading sources
      trainer::CorpusBuildStats s = trainer::build_corpus(from, args->out, args->max_words, args->min_words);
      std::printf("%lld documents from %lld files (%lld skipped empty, %lld skipped unparseable) -> %s\n",
                  static_cast<long long>(s.documents), static_cast<long long>(s.files_seen),
                  static_cast<long long>(s.skipped_empty), static_cast<long long>(s.skipped_unparseable),
                  args->out.c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
