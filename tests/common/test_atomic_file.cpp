#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"

using namespace spade;
namespace fs = std::filesystem;

TEST(AtomicFile, WriteReplaceAndRead) {
  fs::path dir = fs::path(SPADE_TEST_TMP) / "atomic";
  fs::remove_all(dir);
  std::string p = (dir / "a" / "f.txt").string();
  write_file_atomic(p, "one");
  write_file_atomic(p, "two");
  EXPECT_EQ(read_file(p), "two");
  // no temp files are left behind
  int n = 0;
  for (auto& e : fs::directory_iterator(dir / "a")) { (void)e; ++n; }
  EXPECT_EQ(n, 1);
  append_line((dir / "m.jsonl").string(), "{}");
  append_line((dir / "m.jsonl").string(), "{}");
  EXPECT_EQ(read_file((dir / "m.jsonl").string()), "{}\n{}\n");
  EXPECT_THROW(read_file((dir / "missing").string()), Error);
}

TEST(AtomicFile, BoundedReadStopsAtTheLimit) {
  fs::path dir = fs::path(SPADE_TEST_TMP) / "bounded";
  fs::remove_all(dir);
  const std::string p = (dir / "ten.txt").string();
  write_file_atomic(p, "0123456789");
  EXPECT_EQ(read_file(p, 10), "0123456789");  // exactly the limit: fine
  try {
    read_file(p, 9);
    ADD_FAILURE() << "a 10-byte file read with a 9-byte limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p + " is larger than 9 bytes"), std::string::npos) << e.what();
  }
  // An endless file ends in an error, after at most the limit plus one 64 KiB chunk.
  EXPECT_THROW(read_file("/dev/zero", 1 << 20), Error);
}
