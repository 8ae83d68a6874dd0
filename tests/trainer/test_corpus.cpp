// Corpus building and loading (issue 2 step 1; docs/sources.md, reference §6).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "trainer/corpus.h"
#include "tests/testing/test_util.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

TEST(Docstrings, ModuleClassAndFunctionDocstringsOnly) {
  const std::string src =
      "#!/usr/bin/env python3\n"
      "\"\"\"Module doc.\n\n    Second line.\n\"\"\"\n"
      "import os\n"
      "x = \"\"\"not a docstring\"\"\"\n"
      "class Circle:\n"
      "    '''A circle of radius r.'''\n"
      "    def area(self):\n"
      "        \"\"\"Return pi r^2.\"\"\"\n"
      "        s = 'quote \"\"\" inside'\n"
      "        return 3.14\n";
  std::string out;
  ASSERT_TRUE(extract_docstrings(src, &out));
  // By hand: module doc cleaned like inspect.cleandoc, then each def/class header + its doc.
  EXPECT_EQ(out,
            "Module doc.\n\nSecond line.\n\n"
            "class Circle\nA circle of radius r.\n\n"
            "def area(self)\nReturn pi r^2.");
}

TEST(Docstrings, UnparseableInputs) {
  std::string out;
  EXPECT_FALSE(extract_docstrings("\"\"\"never closed\n", &out));
  EXPECT_FALSE(extract_docstrings("\xff\xfe bad utf8", &out));
}

TEST(Corpus, BuildSkipsAndCounts) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "corpus";
  fs::remove_all(dir);
  write_file_atomic((dir / "src/good.py").string(),
                    "\"\"\"" + std::string(30, 'w') + " one two three four five six seven eight nine ten "
                    "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.\"\"\"\n");
  write_file_atomic((dir / "src/empty.py").string(), "x = 1\n");
  write_file_atomic((dir / "src/broken.py").string(), "\"\"\"unterminated\n");
  write_file_atomic((dir / "src/tests/test_skip.py").string(), "\"\"\"skipped folder\"\"\"\n");
  CorpusBuildStats s = build_corpus({(dir / "src").string()}, (dir / "c.jsonl").string(), 10, 5);
  EXPECT_EQ(s.files_seen, 3);  // tests/ is not walked
  EXPECT_EQ(s.documents, 1);
  EXPECT_EQ(s.skipped_empty, 1);
  EXPECT_EQ(s.skipped_unparseable, 1);
  ASSERT_EQ(s.skipped.size(), 2u);  // each named with its reason, in path order
  EXPECT_EQ(s.skipped[0].path, (dir / "src/broken.py").string());
  EXPECT_EQ(s.skipped[0].reason, "unterminated triple-quoted string");
  EXPECT_EQ(s.skipped[1].path, (dir / "src/empty.py").string());
  EXPECT_EQ(s.skipped[1].reason, "0 words of docstrings, fewer than the minimum 5");
  auto j = nlohmann::json::parse(read_file((dir / "c.jsonl").string()));
  EXPECT_EQ(j["id"], "src/good.py");
  EXPECT_NE(j["text"].get<std::string>().find("[...]"), std::string::npos);  // capped at 10 words
  EXPECT_THROW(build_corpus({(dir / "missing").string()}, (dir / "x.jsonl").string(), 10, 5), Error);
}

TEST(Corpus, BuildReadsTextAndMarkdownUnlessPythonOnly) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "corpus_text";
  fs::remove_all(dir);
  write_file_atomic((dir / "src/a.txt").string(), "  one two three four five six  \n");
  write_file_atomic((dir / "src/b.md").string(), "---\ntitle: x\n---\n# B\n\nseven eight nine ten eleven\n");
  write_file_atomic((dir / "src/c.md").string(), "---\nunclosed\n");
  write_file_atomic((dir / "src/d.rst").string(), "one two three four five six\n");
  write_file_atomic((dir / "src/e.py").string(), "\"\"\"Module of five words here.\"\"\"\n");
  CorpusBuildStats s = build_corpus({(dir / "src").string()}, (dir / "c.jsonl").string(), 100, 5);
  EXPECT_EQ(s.files_seen, 4);
  EXPECT_EQ(s.documents, 3);
  EXPECT_EQ(s.other_files, 1);  // d.rst
  ASSERT_EQ(s.skipped.size(), 1u);
  // c.md: "---" without a closing "---" line is no front matter but text: "---" and "unclosed", 2 words.
  EXPECT_EQ(s.skipped[0].path, (dir / "src/c.md").string());
  EXPECT_EQ(s.skipped[0].reason, "2 words, fewer than the minimum 5");
  std::vector<std::string> lines = split(trim(read_file((dir / "c.jsonl").string())), '\n');
  ASSERT_EQ(lines.size(), 3u);  // in path order: a.txt, b.md, e.py
  EXPECT_EQ(nlohmann::json::parse(lines[0])["text"], "one two three four five six");  // trimmed
  EXPECT_EQ(nlohmann::json::parse(lines[1])["text"], "# B\n\nseven eight nine ten eleven");  // no front matter
  EXPECT_EQ(nlohmann::json::parse(lines[2])["text"], "Module of five words here.");
  // Python only (the default sources): text files under a directory are other files; named, skipped.
  s = build_corpus({(dir / "src").string(), (dir / "src/a.txt").string()}, (dir / "p.jsonl").string(), 100, 5,
                   CorpusInputs::python);
  EXPECT_EQ(s.files_seen, 1);
  EXPECT_EQ(s.documents, 1);
  EXPECT_EQ(s.other_files, 4);  // a.txt, b.md, c.md, d.rst
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0].reason, "not a .py file");
  // Source (the tool-use setting's code corpus): a .py file is its whole text, code and all; a file of
  // code without docstrings is a document too (4 words: "def", "f():", "return", "1").
  write_file_atomic((dir / "code/f.py").string(), "def f():\n    return 1\n");
  write_file_atomic((dir / "code/e.py").string(), "\"\"\"Module of five words here.\"\"\"\nX = 1\n");
  s = build_corpus({(dir / "code").string()}, (dir / "s.jsonl").string(), 100, 3, CorpusInputs::source_and_text);
  EXPECT_EQ(s.documents, 2);
  lines = split(trim(read_file((dir / "s.jsonl").string())), '\n');
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["text"], "\"\"\"Module of five words here.\"\"\"\nX = 1");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["text"], "def f():\n    return 1");
  // Read for docstrings instead, f.py has none (0 words) and is skipped.
  s = build_corpus({(dir / "code").string()}, (dir / "d.jsonl").string(), 100, 3, CorpusInputs::python);
  EXPECT_EQ(s.documents, 1);
  // Nothing usable: the error lists what was skipped and why.
  const std::string e = spade::fixtures::error_of(
      [&] { build_corpus({(dir / "src/c.md").string()}, (dir / "x.jsonl").string(), 100, 5); });
  EXPECT_NE(e.find((dir / "src/c.md").string() + ": 2 words, fewer than the minimum 5"), std::string::npos) << e;
}

TEST(Corpus, LoadPrefersOrigDocAndSamplesDeterministically) {
  const fs::path p = fs::path(SPADE_TEST_TMP) / "corpus" / "load.jsonl";
  write_file_atomic(p.string(),
                    "{\"id\": \"a\", \"text\": \"alpha\"}\n"
                    "\n"
                    "not json\n"
                    "{\"id\": \"b\", \"text\": \"ignored\", \"orig_doc\": \"beta gamma delta\"}\n");
  Corpus c(p.string(), 2, 42);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.skipped(), 2);
  EXPECT_EQ(c.at(1).text, "beta gamma [...]");
  std::vector<std::string> first;
  for (int i = 0; i < 10; ++i) first.push_back(c.sample().id);
  c.seek(0);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c.sample().id, first[i]);
  EXPECT_EQ(c.position(), 10u);
  write_file_atomic(p.string(), "\n");
  EXPECT_THROW(Corpus(p.string(), 2, 42), Error);
}
