// `spade corpus build --from DIR` by the real binary: it reads Python docstrings, plain text (.txt) and
// Markdown (.md), and lists every file it skipped with the reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// 25 words.
const std::string kWords =
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon "
    "phi chi psi omega end";

}  // namespace

TEST(CorpusCli, ReadsTextAndMarkdownAndListsSkippedFiles) {
  const std::string dir = spade::fixtures::fresh_test_dir("corpus_cli", "from");
  const std::string src = dir + "/src";
  spade::write_file_atomic(src + "/notes.txt", kWords + "\n");
  spade::write_file_atomic(src + "/guide.md", "---\ntitle: front matter\n---\n# Guide\n\n" + kWords + "\n");
  spade::write_file_atomic(src + "/mod.py", "\"\"\"" + kWords + "\"\"\"\n");
  spade::write_file_atomic(src + "/short.txt", "three words only\n");
  spade::write_file_atomic(src + "/latin1.md", "caf\xe9 " + kWords + "\n");  // 0xe9 alone: not UTF-8
  spade::write_file_atomic(src + "/data.csv", "a,b\n");
  spade::write_file_atomic(src + "/tests/skipped.md", kWords + "\n");  // test directories are not walked
  const std::string out = dir + "/corpus.jsonl";
  auto r = spade::fixtures::run_command(std::string(SPADE_BIN) + " corpus build --from " + src + " --out " + out +
                                        " --min-words 20 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "skipped " + src + "/latin1.md: not valid UTF-8")) << r.out;
  EXPECT_TRUE(has(r.out, "skipped " + src + "/short.txt: 3 words, fewer than the minimum 20")) << r.out;
  EXPECT_TRUE(has(r.out, "3 documents from 5 files read (1 too short, 1 unparseable); 1 file of another type not "
                         "read -> " + out))
      << r.out;
  std::set<std::string> ids;
  std::istringstream lines(spade::read_file(out));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ids.insert(j["id"].get<std::string>());
    if (j["id"] == "src/guide.md") {
      EXPECT_EQ(j["text"], "# Guide\n\n" + kWords);  // the front matter dropped, the Markdown kept as written
    }
    if (j["id"] == "src/notes.txt") EXPECT_EQ(j["text"], kWords);
  }
  EXPECT_EQ(ids, (std::set<std::string>{"src/guide.md", "src/mod.py", "src/notes.txt"}));

  // A named file of another type is skipped by name.
  r = spade::fixtures::run_command(std::string(SPADE_BIN) + " corpus build --from " + src + "/data.csv --from " + src +
                                   "/notes.txt --out " + out + " --overwrite --min-words 20 2>&1");  // replaces the first corpus
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "skipped " + src + "/data.csv: not a .py, .txt or .md file")) << r.out;
  EXPECT_TRUE(has(r.out, "1 document from 1 file read (0 too short, 0 unparseable); 0 files of other types")) << r.out;

  // Nothing usable: the error says what was skipped and why.
  r = spade::fixtures::run_command(std::string(SPADE_BIN) + " corpus build --from " + src + "/short.txt --out " + dir +
                                   "/none.jsonl --min-words 20 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, src + "/short.txt: 3 words, fewer than the minimum 20")) << r.out;
}
