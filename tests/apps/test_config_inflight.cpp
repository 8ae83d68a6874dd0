// The run-config key selfplay.max_tokens_in_flight (trainer/config.h SelfPlayConfig) reaches the
// sampler: `spade config show` resolves it (default 0 = unlimited, --set overrides, a negative value is
// rejected naming the key), and the config bridge copies it into the agent episodes' SamplingParams
// (trainer/config_bridge.cpp episode_options; designer and hint sampling get it in trainer/selfplay.cpp).
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/test_util.h"
#include "trainer/config.h"
#include "trainer/config_bridge.h"

using namespace spade;

namespace {

fixtures::CommandResult spade_cmd(const std::string& args) {
  return fixtures::run_command(std::string("OMP_WAIT_POLICY=PASSIVE ") + SPADE_BIN + " " + args + " 2>&1");
}

}  // namespace

TEST(ConfigInFlight, ShowResolvesTheKeyAndRejectsANegativeBudget) {
  const fixtures::CommandResult def = spade_cmd("config show");
  ASSERT_EQ(def.rc, 0) << def.out;
  EXPECT_NE(def.out.find("max_tokens_in_flight: 0\n"), std::string::npos) << def.out;
  const fixtures::CommandResult set = spade_cmd("config show --set selfplay.max_tokens_in_flight=4096");
  ASSERT_EQ(set.rc, 0) << set.out;
  EXPECT_NE(set.out.find("max_tokens_in_flight: 4096\n"), std::string::npos) << set.out;
  const fixtures::CommandResult bad = spade_cmd("config show --set selfplay.max_tokens_in_flight=-1");
  EXPECT_EQ(bad.rc, 1) << bad.out;
  EXPECT_NE(bad.out.find("selfplay.max_tokens_in_flight"), std::string::npos) << bad.out;
}

TEST(ConfigInFlight, BridgeCopiesTheBudgetIntoEpisodeSampling) {
  const trainer::Config c = trainer::parse_config("", "test.yaml", {"selfplay.max_tokens_in_flight=12345"});
  EXPECT_EQ(c.selfplay.max_tokens_in_flight, 12345);
  EXPECT_EQ(trainer::episode_options(c).sampling.max_tokens_in_flight, 12345);
  EXPECT_EQ(trainer::episode_options(trainer::parse_config("", "test.yaml")).sampling.max_tokens_in_flight, 0);
}
