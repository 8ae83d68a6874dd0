#include "trainer/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace spade::trainer {

namespace {

constexpr const char* kTruncationMarker = " [...]";

// inspect.cleandoc: strip the first line, remove the common indentation of the rest, drop
// leading/trailing blank lines.
std::string cleandoc(const std::string& raw) {
  std::vector<std::string> lines = split(raw, '\n');
  size_t indent = std::string::npos;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    size_t first = l.find_first_not_of(" \t");
    if (first != std::string::npos) indent = std::min(indent, first);
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string l = i == 0 ? trim(lines[i])
                           : (indent != std::string::npos && lines[i].size() >= indent
                                  ? lines[i].substr(indent)
                                  : trim(lines[i]));
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.pop_back();
    out += l;
    out += '\n';
  }
  return trim(out);
}

bool is_test_dir(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "test" || name == "tests" || name == "__pycache__" || name == "site-packages" ||
         name == "dist-packages" || name == "idlelib" || name == "lib2to3";
}

}  // namespace

bool extract_docstrings(const std::string& source, std::string* out) {
  if (!is_valid_utf8(source)) return false;
  out->clear();
  // Walk the source tracking comments and string literals. A triple-quoted literal that begins a
  // logical line is a docstring when the previous logical line is nothing (module docstring) or
  // a def/class header ending in ':'.
  std::string prev_line;  // previous logical line, stripped (empty at module start)
  bool module_start = true;
  std::string current;    // current logical line so far
  size_t i = 0;
  const size_t n = source.size();
  auto flush_line = [&]() {
    std::string t = trim(current);
    if (!t.empty()) {
      prev_line = t;
      module_start = false;
    }
    current.clear();
  };
  int paren_depth = 0;
  while (i < n) {
    char c = source[i];
    if (c == '#') {
      while (i < n && source[i] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      if (paren_depth == 0) flush_line();
      ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++paren_depth;
    if ((c == ')' || c == ']' || c == '}') && paren_depth > 0) --paren_depth;
    // string prefix letters
    size_t q = i;
    while (q < n && q - i < 2 && std::string("rRuUbBfF").find(source[q]) != std::string::npos) ++q;
    if (q < n && (source[q] == '"' || source[q] == '\'') &&
        (q == i || current.empty() || !std::isalnum(static_cast<unsigned char>(current.back())))) {
      char quote = source[q];
      bool triple = q + 2 < n && source[q + 1] == quote && source[q + 2] == quote;
      bool starts_line = trim(current).empty() && paren_depth == 0;
      if (triple) {
        std::string delim(3, quote);
        size_t body = q + 3;
        size_t end = body;
        while (true) {
          end = source.find(delim, end);
          if (end == std::string::npos) return false;  // unterminated
          size_t bs = 0;
          for (size_t k = end; k > body && source[k - 1] == '\\'; --k) ++bs;
          if (bs % 2 == 0) break;
          ++end;
        }
        if (starts_line) {
          const bool header = (starts_with(prev_line, "def ") || starts_with(prev_line, "class ") ||
                               starts_with(prev_line, "async def ")) &&
                              ends_with(prev_line, ":");
          if (module_start || header) {
            std::string doc = cleandoc(source.substr(body, end - body));
            if (!doc.empty()) {
              if (!out->empty()) *out += "\n\n";
              if (header) *out += prev_line.substr(0, prev_line.size() - 1) + "\n";
              *out += doc;
            }
          }
        }
        current += "\"\"\"";
        i = end + 3;
        continue;
      }
      // single-quoted literal: skip to the closing quote on the same line
      size_t k = q + 1;
      while (k < n && source[k] != quote && source[k] != '\n') k += source[k] == '\\' ? 2 : 1;
      current += "''";
      i = k < n && source[k] == quote ? k + 1 : k;
      continue;
    }
    current += c;
    ++i;
  }
  return true;
}

namespace {

// The newest /usr/lib/python3.X holding os.py; "" when none.
fs::path python_stdlib() {
  std::vector<fs::path> stdlibs;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/usr/lib", ec)) {
    const std::string name = e.path().filename().string();
    if (starts_with(name, "python3.") && fs::exists(e.path() / "os.py")) stdlibs.push_back(e.path());
  }
  std::sort(stdlibs.begin(), stdlibs.end());
  return stdlibs.empty() ? fs::path() : stdlibs.back();
}

}  // namespace

std::vector<std::string> default_corpus_sources() {
  std::vector<std::string> out;
  const fs::path lib = python_stdlib();
  if (!lib.empty()) out.push_back(lib.string());
  if (fs::exists("/usr/lib/python3/dist-packages/sympy"))
    out.push_back("/usr/lib/python3/dist-packages/sympy");
  return out;
}

std::vector<std::string> default_tooluse_corpus_sources() {
  const fs::path lib = python_stdlib();
  if (lib.empty()) return {};
  std::vector<std::string> out = {lib.string()};
  const fs::path docs = fs::path("/usr/share/doc") / lib.filename() / "html/_sources/library";
  if (fs::is_directory(docs)) out.push_back(docs.string());
  return out;
}

namespace {

bool reads(const fs::path& file, CorpusInputs inputs) {
  const std::string ext = file.extension().string();
  return ext == ".py" || (inputs != CorpusInputs::python && (ext == ".txt" || ext == ".md"));
}

// A Markdown file's text without a leading YAML front matter block ("---" line ... "---" line).
std::string strip_front_matter(const std::string& text) {
  if (!starts_with(text, "---\n") && !starts_with(text, "---\r\n")) return text;
  const size_t end = text.find("\n---", 3);
  if (end == std::string::npos) return text;
  const size_t after = text.find('\n', end + 4);
  return after == std::string::npos ? "" : text.substr(after + 1);
}

// The document text of `file` read as `inputs` says, or the reason it has none.
bool document_text(const fs::path& file, CorpusInputs inputs, std::string* text, std::string* why_not) {
  std::string contents;
  try {
    contents = read_file(file.string());
  } catch (const Error& e) {
    *why_not = std::string("unreadable: ") + e.what();
    return false;
  }
  if (!is_valid_utf8(contents)) {
    *why_not = "not valid UTF-8";
    return false;
  }
  if (file.extension() == ".py" && inputs != CorpusInputs::source_and_text) {
    if (extract_docstrings(contents, text)) return true;
    *why_not = "unterminated triple-quoted string";
    return false;
  }
  *text = trim(file.extension() == ".md" ? strip_front_matter(contents) : contents);
  return true;
}

}  // namespace

CorpusBuildStats build_corpus(const std::vector<std::string>& from, const std::string& out_path,
                              int max_words, int min_words, CorpusInputs inputs) {
  CorpusBuildStats stats;
  std::vector<std::pair<fs::path, fs::path>> files;  // (root, file)
  for (const std::string& src : from) {
    fs::path root(src);
    if (!fs::exists(root)) throw Error("corpus build: source path does not exist: " + src);
    if (fs::is_regular_file(root)) {
      if (reads(root, inputs)) {
        files.emplace_back(root.parent_path(), root);
      } else {
        stats.skipped.push_back({root.string(), inputs == CorpusInputs::python ? "not a .py file"
                                                                               : "not a .py, .txt or .md file"});
      }
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() && is_test_dir(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (reads(it->path(), inputs)) {
        files.emplace_back(root, it->path());
      } else {
        ++stats.other_files;
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::string jsonl;
  for (auto& [root, file] : files) {
    ++stats.files_seen;
    std::string text, why_not;
    if (!document_text(file, inputs, &text, &why_not)) {
      ++stats.skipped_unparseable;
      stats.skipped.push_back({file.string(), why_not});
      continue;
    }
    const size_t words = count_words(text);
    if (words < static_cast<size_t>(min_words)) {
      ++stats.skipped_empty;
      const char* of = file.extension() == ".py" && inputs != CorpusInputs::source_and_text ? " words of docstrings" : " words";
      stats.skipped.push_back(
          {file.string(), std::to_string(words) + of + ", fewer than the minimum " + std::to_string(min_words)});
      continue;
    }
    text = truncate_words(text, static_cast<size_t>(max_words), kTruncationMarker);
    const std::string id = (root.filename() / fs::relative(file, root)).string();
    jsonl += json{{"id", id}, {"text", text}, {"source", file.string()}}.dump() + "\n";
    ++stats.documents;
  }
  std::sort(stats.skipped.begin(), stats.skipped.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return a.path < b.path; });
  if (stats.documents == 0) {
    const std::string kinds = inputs == CorpusInputs::python ? ".py" : ".py, .txt and .md";
    std::string why;
    for (size_t i = 0; i < stats.skipped.size() && i < 5; ++i)
      why += (i ? "; " : "") + stats.skipped[i].path + ": " + stats.skipped[i].reason;
    if (stats.skipped.size() > 5) why += "; and " + std::to_string(stats.skipped.size() - 5) + " more";
    throw Error("corpus build: no document with at least " + std::to_string(min_words) +
                " words of documentation under the given sources" + (why.empty() ? "" : "; skipped " + why) +
                " (files read: " + std::to_string(stats.files_seen) + "; files of other types, not read: " +
                std::to_string(stats.other_files) + "; it reads " + kinds + ")");
  }
  write_file_atomic(out_path, jsonl);
  return stats;
}

Corpus::Corpus(const std::string& path, int max_words, uint64_t sample_seed)
    : seed_(sample_seed), rng_(sample_seed) {
  std::ifstream in(path);
  if (!in) throw Error("corpus: cannot open " + path + " (build one with `spade corpus build`)");
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) {
      ++skipped_;
      continue;
    }
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      ++skipped_;
      continue;
    }
    Document d;
    if (j.contains("orig_doc") && j["orig_doc"].is_string()) d.text = j["orig_doc"];
    else if (j.contains("text") && j["text"].is_string()) d.text = j["text"];
    if (trim(d.text).empty()) {
      ++skipped_;
      continue;
    }
    d.text = truncate_words(d.text, static_cast<size_t>(max_words), kTruncationMarker);
    d.id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>()
                                                   : path + ":" + std::to_string(lineno);
    if (j.contains("source") && j["source"].is_string()) d.source = j["source"];
    docs_.push_back(std::move(d));
  }
  if (docs_.empty()) throw Error("corpus: no usable document in " + path);
}

const Document& Corpus::sample() {
  std::uniform_int_distribution<size_t> pick(0, docs_.size() - 1);
  ++drawn_;
  return docs_[pick(rng_)];
}

void Corpus::seek(uint64_t n) {
  rng_.seed(seed_);
  drawn_ = 0;
  for (uint64_t i = 0; i < n; ++i) sample();
}

}  // namespace spade::trainer
