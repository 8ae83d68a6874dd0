// `spade corpus build [--from PATH...] --out F.jsonl [--overwrite]`: corpus documents (JSONL) from
// Python docstrings, plain text and Markdown (trainer/corpus.h build_corpus); says which files it
// skipped and why. --out follows common/output_path.h (checked before the sources are read).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

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
    bool verbose = false;
    bool overwrite = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* build = corpus->add_subcommand(
      "build", "make JSONL corpus documents of Python docstrings (.py), plain text (.txt) and Markdown (.md)");
  build->add_option("--from", args->from,
                    "files or directories to read .py, .txt and .md files from (default: the docstrings of the "
                    "Python standard library and sympy)");
  build->add_option("--out", args->out, "output JSONL path: a new or empty file in an existing directory")->required();
  build->add_flag("--overwrite", args->overwrite, "replace a non-empty --out (never one of the --from sources)");
  build->add_option("--max-words", args->max_words, "word cap per document (the SPADE reference's)");
  build->add_option("--min-words", args->min_words, "skip documents with fewer words");
  build->add_flag("-v,--verbose", args->verbose, "list every skipped file (else the first 20)");
  build->callback([args] {
    set_action([args] {
      const bool defaults = args->from.empty();
      const std::vector<std::string> from = defaults ? trainer::default_corpus_sources() : args->from;
      OutputRule rule;
      rule.what = "corpus build --out";
      rule.overwrite = args->overwrite;
      rule.inputs = from;
      check_output(args->out, OutputKind::file, rule);  // before minutes of reading sources
      const trainer::CorpusBuildStats s =
          trainer::build_corpus(from, args->out, args->max_words, args->min_words,
                                defaults ? trainer::CorpusInputs::python : trainer::CorpusInputs::python_and_text);
      const size_t shown = args->verbose ? s.skipped.size() : std::min<size_t>(s.skipped.size(), 20);
      for (size_t i = 0; i < shown; ++i)
        std::printf("skipped %s: %s\n", s.skipped[i].path.c_str(), s.skipped[i].reason.c_str());
      if (shown < s.skipped.size())
        std::printf("... and %zu more skipped files (--verbose lists them all)\n", s.skipped.size() - shown);
      auto n = [](int64_t count, const char* one, const char* many) {
        return std::to_string(count) + " " + (count == 1 ? one : many);
      };
      std::printf("%s from %s read (%lld too short, %lld unparseable); %s not read -> %s\n",
                  n(s.documents, "document", "documents").c_str(), n(s.files_seen, "file", "files").c_str(),
                  static_cast<long long>(s.skipped_empty), static_cast<long long>(s.skipped_unparseable),
                  n(s.other_files, "file of another type", "files of other types").c_str(), args->out.c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
