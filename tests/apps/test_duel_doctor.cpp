// `spade duel doctor` end to end: the sandbox probe and the scoring path on its own fixture (a failing
// pytest, a unified-diff fix applied, the suite passing: apps/cmd_duel.cpp scoring_path_ok), run by the
// real binary. The expected verdicts are the fixture's by construction: add() returns a - b, so
// add(2, 3) == 5 fails before the patch and passes after it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/testing/test_util.h"

TEST(DuelDoctor, ScoringPathOnTheFixtureIsOk) {
  const std::string work = std::string(SPADE_TEST_TMP) + "/duel_doctor";
  std::filesystem::remove_all(work);
  const auto [rc, out] = spade::fixtures::run_command(std::string(SPADE_BIN) + " duel doctor --work " + work + " 2>&1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("scoring path (fixture, sandboxed pytest, patch applied): ok (before: 1 failed; after: 1 passed)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("doctor: ok"), std::string::npos) << out;
}
