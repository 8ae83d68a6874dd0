// Corpus building and loading (issue 2 step 1; reference/spade-reference.md §6).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "trainer/corpus.h"

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
  auto j = nlohmann::json::parse(read_file((dir / "c.jsonl").string()));
  EXPECT_EQ(j["id"], "src/good.py");
  EXPECT_NE(j["text"].get<std::string>().find("[...]"), std::string::npos);  // capped at 10 words
  EXPECT_THROW(build_corpus({(dir / "missing").string()}, (dir / "x.jsonl").string(), 10, 5), Error);
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
