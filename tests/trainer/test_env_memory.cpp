// Environment memory (docs/sources.md, reference §6).
#include <gtest/gtest.h>

#include <filesystem>

#include "trainer/env_memory.h"

using namespace spade::trainer;

TEST(EnvMemory, FifoAndReferenceSelection) {
  EnvMemory mem(3, 0.15, 0.85);
  mem.add({"p0", "math", "code0", 0.5, 0.1, 0});
  mem.add({"p1", "math", "code1", 0.95, 0.0, 0});   // too easy: a negative
  mem.add({"p2", "math", "code2", 0.3, 0.4, 1});
  mem.add({"p3", "logic", std::string(3000, 'x'), 0.5, 0.2, 1});  // evicts p0
  ASSERT_EQ(mem.records().size(), 3u);
  EXPECT_EQ(mem.records()[0].path, "p1");
  EXPECT_EQ(mem.records()[2].code.size(), 2000u);  // first 2000 chars

  std::mt19937_64 rng(0);
  auto refs = mem.references("math", 2, rng);
  // Positives in the band: only p2 (p0 was evicted); one negative: p1, too easy.
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_FALSE(refs[0].negative);
  EXPECT_EQ(refs[0].code, "code2");
  EXPECT_TRUE(refs[1].negative);
  EXPECT_EQ(refs[1].why, "too easy");
  EXPECT_TRUE(mem.references("spatial", 2, rng).empty());
}

TEST(EnvMemory, SaveLoadRoundTrip) {
  const std::string path = std::string(SPADE_TEST_TMP) + "/memory/memory.json";
  std::filesystem::remove_all(std::string(SPADE_TEST_TMP) + "/memory");
  EnvMemory mem(10, 0.15, 0.85);
  mem.add({"p", "causal", "code", 0.25, -0.1, 7});
  mem.save(path);
  EnvMemory back(10, 0.15, 0.85);
  back.load(path);
  ASSERT_EQ(back.records().size(), 1u);
  EXPECT_EQ(back.records()[0].skill, "causal");
  EXPECT_DOUBLE_EQ(back.records()[0].regret, -0.1);
  EXPECT_EQ(back.records()[0].rollout_id, 7);
  EnvMemory none(10, 0.15, 0.85);
  none.load(path + ".missing");
  EXPECT_TRUE(none.records().empty());
}
