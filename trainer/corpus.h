// Corpus documents that ground environment generation (SPADE paper §4.3; reference §6).
// Building: documentation text found on this machine (Python stdlib and sympy docstrings).
// Loading and sampling: JSONL, word-capped, uniform sampling with a fixed seed.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace spade::trainer {

struct Document {
  std::string id;
  std::string text;
  std::string source;
};

/// A file build_corpus read (or was named) but made no document of, and why.
struct SkippedFile {
  std::string path;
  std::string reason;  // e.g. "not valid UTF-8", "12 words of docstrings, fewer than the minimum 20"
};

struct CorpusBuildStats {
  int64_t files_seen = 0;           // files read: documents + skipped_empty + skipped_unparseable
  int64_t documents = 0;
  int64_t skipped_empty = 0;        // too few words of documentation
  int64_t skipped_unparseable = 0;  // unreadable, invalid UTF-8 or an unterminated string literal
  int64_t other_files = 0;          // files of other types found under the source directories (not read)
  std::vector<SkippedFile> skipped;  // every file read or named but not made a document, in path order
};

/// The files build_corpus reads.
enum class CorpusInputs {
  python,           // *.py: their docstrings (default_corpus_sources: the stdlib's LICENSE.txt is no document)
  python_and_text,  // *.py, plus *.txt (plain text) and *.md (Markdown) whole, as written
  source_and_text,  // *.py whole (the source code itself: the tool-use setting's code corpus), *.txt, *.md
};

/// Default inputs for `spade corpus build`: the Python standard library directory
/// (/usr/lib/python3.X) and sympy's package directory when python3-sympy is installed. They are
/// Python packages: build them with CorpusInputs::python.
std::vector<std::string> default_corpus_sources();

/// Default inputs of the tool-use setting (SPADE §5.2: generation grounded in a code corpus): the
/// Python standard library directory, read as source (CorpusInputs::source_and_text), and Python's
/// library reference in text form (/usr/share/doc/python3.X/html/_sources/library, from Debian's
/// python3-doc) when it is installed. Empty when no standard library is found.
std::vector<std::string> default_tooluse_corpus_sources();

/// Extracts the docstrings of a Python source file (module, class and function docstrings: a
/// triple-quoted string that is the first statement of the module or of a def/class body), each
/// cleaned like inspect.cleandoc and, for defs/classes, headed by the def/class line. Returns false
/// when the file cannot be parsed (invalid UTF-8, unterminated string); `out` then is unspecified.
bool extract_docstrings(const std::string& source, std::string* out);

/// Walks `from` (files or directories, skipping test directories) for the files `inputs` names and
/// makes one document per file, capped at `max_words` words: a .py file's docstrings
/// (extract_docstrings), or its whole source with CorpusInputs::source_and_text; a .txt or .md file's text (valid UTF-8; a Markdown file without its leading
/// YAML front matter, "---" to "---", else as written). Files with fewer than `min_words` words, and
/// named files of another type, are skipped and listed with the reason in the result; files of other
/// types under a directory are only counted. Writes JSONL lines {"id","text","source"} atomically to
/// `out_path`. Throws spade::Error when a source path does not exist or nothing usable was found.
CorpusBuildStats build_corpus(const std::vector<std::string>& from, const std::string& out_path,
                              int max_words, int min_words, CorpusInputs inputs = CorpusInputs::python_and_text);

/// A loaded corpus. Not thread-safe (the sampler position is state).
class Corpus {
 public:
  /// Reads JSONL lines; each uses "orig_doc" when present, else "text" (reference §6). Blank or
  /// unparseable lines are skipped (counted in skipped()). Text is capped at `max_words` words with
  /// a marker. Throws spade::Error if the file is missing or no document is usable.
  Corpus(const std::string& path, int max_words, uint64_t sample_seed);

  size_t size() const { return docs_.size(); }
  int64_t skipped() const { return skipped_; }
  const Document& at(size_t i) const { return docs_.at(i); }

  /// Uniformly samples one document (reference §6: one fresh document per generation attempt).
  const Document& sample();

  /// Number of documents drawn so far (the sampler position, saved for resume).
  uint64_t position() const { return drawn_; }
  /// Restores a sampler position by replaying `n` draws from the seed.
  void seek(uint64_t n);

 private:
  std::vector<Document> docs_;
  int64_t skipped_ = 0;
  uint64_t seed_;
  std::mt19937_64 rng_;
  uint64_t drawn_ = 0;
};

}  // namespace spade::trainer
