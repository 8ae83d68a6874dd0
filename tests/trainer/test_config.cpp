// Run configs: defaults, unknown keys, type errors, --set, resolved round trip (docs/design.md, Contracts).
#include <gtest/gtest.h>

#include <cmath>

#include "common/atomic_file.h"
#include "common/error.h"
#include "trainer/config.h"
#include "trainer/config_bridge.h"

using namespace spade;
using namespace spade::trainer;

TEST(Config, DefaultsAreThePaperSettings) {
  Config c = parse_config("", "empty.yaml");
  // docs/sources.md, reference §5 table (games) and common settings.
  EXPECT_EQ(c.selfplay.k, 4);
  EXPECT_EQ(c.selfplay.envs_per_regen, 24);
  EXPECT_EQ(c.selfplay.plays_per_env, 8);
  EXPECT_EQ(c.selfplay.hint_plays, 16);
  EXPECT_DOUBLE_EQ(c.loss.eps_low, 0.2);
  EXPECT_DOUBLE_EQ(c.loss.eps_high, 0.28);
  EXPECT_DOUBLE_EQ(c.loss.tis_cap, 2.0);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-6);
  EXPECT_DOUBLE_EQ(c.optim.beta2, 0.98);
  // docs/sources.md, trainer-anchors §4 "Defaults seen": AdamW beta1 0.9, weight decay 0.1, grad clip 1.0.
  EXPECT_DOUBLE_EQ(c.optim.beta1, 0.9);
  EXPECT_DOUBLE_EQ(c.optim.weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(c.optim.grad_clip, 1.0);
  EXPECT_EQ(c.optim.mini_batches, 1);  // one update per rollout (reference §5: one step per rollout)
  EXPECT_EQ(c.loss.agg_mode, "seq_mean_token_mean");  // slime's default ("grpo")
  EXPECT_DOUBLE_EQ(c.reward.w_regret, 0.4);
  EXPECT_DOUBLE_EQ(c.selfplay.hint.temperature, 0.3);
}

TEST(Config, UnknownKeyNamesKeyAndFile) {
  try {
    parse_config("selfplay:\n  stepz: 3\n", "my.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("my.yaml"), std::string::npos) << msg;
    EXPECT_NE(msg.find("selfplay.stepz"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_config("nosection: 1\n", "x.yaml"), Error);
  EXPECT_THROW(parse_config("selfplay: 3\n", "x.yaml"), Error);  // a section given a scalar
}

TEST(Config, WrongTypeAndBadYaml) {
  EXPECT_THROW(parse_config("selfplay:\n  steps: many\n", "x.yaml"), Error);
  EXPECT_THROW(parse_config("selfplay: [1, 2\n", "x.yaml"), Error);
  EXPECT_THROW(parse_config("selfplay:\n  k: 0\n", "x.yaml"), Error);  // range check
}

namespace {
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "my.yaml", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

// The suggestions are common/edit_distance.h's closest_match over the declared keys (visit_fields in
// trainer/config.cpp); each distance in the comments was counted by hand.
TEST(Config, UnknownKeySuggestsTheClosestKey) {
  // "stpes" -> "steps": one adjacent swap (distance 1); the threshold for 14 bytes is 4.
  EXPECT_EQ(error_of("", {"selfplay.stpes=2"}),
            "--set selfplay.stpes=2: unknown config key 'selfplay.stpes'; did you mean 'selfplay.steps'?");
  // In a file: the file and the line of the key (line 2, 1-based).
  EXPECT_EQ(error_of("selfplay:\n  stepz: 3\n"),
            "my.yaml:2: unknown config key 'selfplay.stepz'; did you mean 'selfplay.steps'?");
  // A misspelt section in a file: "selfply" -> "selfplay" is one insertion.
  EXPECT_EQ(error_of("selfply:\n  steps: 3\n"), "my.yaml:1: unknown config key 'selfply'; did you mean 'selfplay'?");
  // "optim.lrr" -> "optim.lr": one deletion.
  EXPECT_EQ(error_of("", {"optim.lrr=0.1"}),
            "--set optim.lrr=0.1: unknown config key 'optim.lrr'; did you mean 'optim.lr'?");
  // Nothing near: no guess, the command that lists the keys instead.
  EXPECT_EQ(error_of("", {"completely.unrelated=1"}),
            "--set completely.unrelated=1: unknown config key 'completely.unrelated' "
            "(`spade config show` lists every valid key)");
  // A section where a key belongs.
  EXPECT_NE(error_of("", {"selfplay=3"}).find("--set selfplay=3: 'selfplay' is a section, not a key"), std::string::npos);
  EXPECT_NE(error_of("selfplay: 3\n").find("my.yaml:1: 'selfplay' is a section: it holds keys"), std::string::npos);
}

TEST(Config, WrongTypeNamesTheKeyAndTheExpectedType) {
  // selfplay.steps is an int, loss.eps_low a double, train.activation_checkpointing a bool, run.seed a
  // uint64_t, corpus.build_from a list of strings (trainer/config.h).
  EXPECT_EQ(error_of("", {"selfplay.steps=abc"}), "--set selfplay.steps=abc: selfplay.steps expects an integer, got 'abc'");
  EXPECT_EQ(error_of("", {"selfplay.steps=2.5"}), "--set selfplay.steps=2.5: selfplay.steps expects an integer, got '2.5'");
  EXPECT_EQ(error_of("selfplay:\n  k: 4\n  steps: many\n"), "my.yaml:3: selfplay.steps expects an integer, got 'many'");
  EXPECT_EQ(error_of("", {"loss.eps_low=wide"}), "--set loss.eps_low=wide: loss.eps_low expects a number, got 'wide'");
  EXPECT_EQ(error_of("", {"train.activation_checkpointing=2"}),
            "--set train.activation_checkpointing=2: train.activation_checkpointing expects a boolean (true or false), "
            "got '2'");
  EXPECT_EQ(error_of("", {"run.seed=-1"}), "--set run.seed=-1: run.seed expects a non-negative integer, got '-1'");
  EXPECT_EQ(error_of("", {"selfplay.steps=[1, 2]"}),
            "--set selfplay.steps=[1, 2]: selfplay.steps expects an integer, got a list");
  EXPECT_EQ(error_of("corpus:\n  build_from: {a: 1}\n"),
            "my.yaml:2: corpus.build_from expects a list of strings, e.g. [a, b], got a mapping");
  // The right types still load.
  EXPECT_EQ(parse_config("", "x.yaml", {"selfplay.steps=7", "run.seed=3"}).selfplay.steps, 7);
}

TEST(Config, OverridesAndRoundTrip) {
  Config c = parse_config("selfplay:\n  steps: 3\n", "x.yaml",
                          {"selfplay.steps=5", "selfplay.agent.temperature=0.9", "corpus.build_from=[a, b]"});
  EXPECT_EQ(c.selfplay.steps, 5);
  EXPECT_DOUBLE_EQ(c.selfplay.agent.temperature, 0.9);
  EXPECT_EQ(c.corpus.build_from, (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(parse_config("", "x.yaml", {"selfplay.nope=1"}), Error);
  EXPECT_THROW(parse_config("", "x.yaml", {"selfplay.steps"}), Error);

  Config again = parse_config(to_yaml(c), "resolved.yaml");
  EXPECT_EQ(to_yaml(again), to_yaml(c));
  EXPECT_EQ(again.selfplay.steps, 5);
  EXPECT_EQ(again.corpus.build_from, c.corpus.build_from);
}

TEST(Config, ShippedConfigsLoad) {
  Config tiny = load_config(std::string(SPADE_SOURCE_DIR) + "/configs/games-tiny.yaml");
  EXPECT_GE(tiny.selfplay.steps, 8);  // issue 2: N >= 8 in the default
}

TEST(Config, RewardFilterKeysDefaultsAndRoundTrip) {
  // Defaults: SPADE's actor z-score and no filter (reference §5: every play trained, std scaling on).
  const Config d = parse_config("", "empty.yaml");
  EXPECT_TRUE(d.reward.scale_by_std);
  EXPECT_FALSE(d.reward.filter_zero_std_groups);
  EXPECT_FALSE(d.reward.mask_truncated);
  // Every key flipped, from YAML and from --set, survives the resolved round trip.
  const Config c = parse_config("reward:\n  scale_by_std: false\n  filter_zero_std_groups: true\n", "x.yaml",
                                {"reward.mask_truncated=true"});
  EXPECT_FALSE(c.reward.scale_by_std);
  EXPECT_TRUE(c.reward.filter_zero_std_groups);
  EXPECT_TRUE(c.reward.mask_truncated);
  const Config again = parse_config(to_yaml(c), "resolved.yaml");
  EXPECT_FALSE(again.reward.scale_by_std);
  EXPECT_TRUE(again.reward.filter_zero_std_groups);
  EXPECT_TRUE(again.reward.mask_truncated);
  EXPECT_THROW(parse_config("reward:\n  mask_truncated: sometimes\n", "x.yaml"), Error);  // not a bool
}

// optim.mini_batches, loss.tis_level, loss.max_len: defaults are the previous behaviour (one step,
// token-level TIS, Dr.GRPO L = longest row), values survive the resolved round trip and reach
// PolicyLossConfig through config_bridge, and out-of-range values are rejected naming the key.
TEST(Config, PpoMiniBatchTisLevelAndMaxLenKeys) {
  const Config d = parse_config("", "empty.yaml");
  EXPECT_EQ(d.optim.mini_batches, 1);
  EXPECT_EQ(d.loss.tis_level, "token");
  EXPECT_EQ(d.loss.max_len, 0);
  const Config c = parse_config("optim:\n  mini_batches: 4\nloss:\n  tis_level: geometric\n", "x.yaml",
                                {"loss.max_len=512"});
  const Config again = parse_config(to_yaml(c), "resolved.yaml");
  EXPECT_EQ(again.optim.mini_batches, 4);
  EXPECT_EQ(again.loss.tis_level, "geometric");
  EXPECT_EQ(again.loss.max_len, 512);
  const PolicyLossConfig l = loss_config(again.loss);
  EXPECT_EQ(l.tis_level, TisLevel::Geometric);
  EXPECT_EQ(l.max_len, 512);
  EXPECT_EQ(loss_config(d.loss).tis_level, TisLevel::Token);
  EXPECT_EQ(loss_config(d.loss).max_len, 0);
  for (const char* bad : {"optim.mini_batches=0", "loss.tis_level=seq", "loss.max_len=-1"}) {
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    try {
      parse_config("", "x.yaml", {bad});
      ADD_FAILURE() << "expected an error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

#include "trainer/lr_schedule.h"

TEST(LrSchedule, ConstantWarmupCosine) {
  using spade::trainer::learning_rate;
  spade::trainer::LrSchedule s;
  s.base_lr = 1e-3;
  EXPECT_DOUBLE_EQ(learning_rate(s, 0), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(s, 99), 1e-3);
  s.kind = "linear_warmup";
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(learning_rate(s, 0), 0.25e-3);
  EXPECT_DOUBLE_EQ(learning_rate(s, 3), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(s, 50), 1e-3);
  s.kind = "cosine";
  s.total_steps = 14;
  s.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(learning_rate(s, 1), 0.5e-3);            // warmup
  EXPECT_DOUBLE_EQ(learning_rate(s, 4), 1e-3);              // p = 0
  EXPECT_NEAR(learning_rate(s, 9), 1e-3 * (0.1 + 0.9 * 0.5), 1e-15);  // p = 0.5
  EXPECT_DOUBLE_EQ(learning_rate(s, 14), 1e-4);             // p = 1: the floor
  EXPECT_DOUBLE_EQ(learning_rate(s, 100), 1e-4);
  s.kind = "linear";
  EXPECT_THROW(learning_rate(s, 0), spade::Error);
}

// reward.frontier_weight / frontier_scale / lp_variance_bonus: off by default (SPADE App. F.2: both
// auxiliary terms are disabled in every paper run) and, when set, they reach the designer reward.
// By hand (reward/designer_reward.h): no regret (r_hint = r_nohint = 0), window {0.2, 0.6} -> w = 0.4,
// plateau(0.4) = 1 (inside [0.4, 0.6]); blend = 0.4 * 0 + 0.6 * 1 = 0.6; with frontier weight 1 and
// scale 0.08: + 1 * -(0.4 - 0.5)^2 / 0.08 = -0.125 -> 0.475. learning_potential with mu_slow 0:
// |0.4 - 0| = 0.4; with the bonus, variance of {0.2, 0.6} = 0.04: + exp(-(0.04 - 0.25)^2 / 0.02).
TEST(Config, AuxiliaryDesignerTermsReachTheReward) {
  reward::DesignerWindowStats w;
  w.window_rewards = {0.2, 0.6};
  const Config d = parse_config("", "empty.yaml");
  EXPECT_EQ(d.reward.frontier_weight, 0.0);
  EXPECT_FALSE(d.reward.lp_variance_bonus);
  EXPECT_NEAR(reward::designer_raw_reward(w, designer_reward_config(d.reward)), 0.6, 1e-12);

  const Config f = parse_config("reward:\n  frontier_weight: 1.0\n  frontier_scale: 0.08\n", "x.yaml");
  EXPECT_NEAR(reward::designer_raw_reward(w, designer_reward_config(f.reward)), 0.475, 1e-12);

  const Config lp = parse_config("reward:\n  designer_reward: learning_potential\n", "x.yaml",
                                 {"reward.lp_variance_bonus=true"});
  EXPECT_NEAR(reward::designer_raw_reward(w, designer_reward_config(lp.reward)),
              0.4 + std::exp(-(0.04 - 0.25) * (0.04 - 0.25) / 0.02), 1e-12);
  const Config again = parse_config(to_yaml(lp), "resolved.yaml");
  EXPECT_TRUE(again.reward.lp_variance_bonus);

  EXPECT_THROW(parse_config("reward:\n  frontier_scale: 0\n", "x.yaml"), Error);
  EXPECT_THROW(parse_config("reward:\n  frontier_weight: -1\n", "x.yaml"), Error);
}

// A base and its overlays (configs/ablations/*.yaml, `--overlay`): later layers replace earlier keys,
// untouched keys keep the base's value, --set comes last, and an error names the layer and line that set
// the key, checked once the layers are all applied (a constraint may span layers).
TEST(Config, OverlaysApplyInOrderAndErrorsNameTheirFile) {
  const std::string base = "selfplay:\n  steps: 8\n  k: 4\nmemory:\n  enabled: true\n";
  const std::string overlay = "memory:\n  enabled: false\nselfplay:\n  k: 2\n";
  Config c = parse_config_layers({{base, "base.yaml"}, {overlay, "no_memory.yaml"}});
  EXPECT_EQ(c.selfplay.steps, 8);
  EXPECT_EQ(c.selfplay.k, 2);
  EXPECT_FALSE(c.memory.enabled);
  c = parse_config_layers({{base, "base.yaml"}, {overlay, "no_memory.yaml"}}, {"selfplay.k=1"});
  EXPECT_EQ(c.selfplay.k, 1);
  // k = 4 in the base: delay 3 is fine; with the overlay's k = 2 as well, it is not.
  EXPECT_EQ(parse_config_layers({{base, "base.yaml"}, {"selfplay:\n  designer_delay: 3\n", "delay.yaml"}})
                .selfplay.designer_delay,
            3);
  try {
    parse_config_layers({{base, "base.yaml"}, {overlay, "no_memory.yaml"}, {"selfplay:\n  designer_delay: 3\n", "delay.yaml"}});
    FAIL() << "designer_delay 3 > k 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("delay.yaml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("selfplay.designer_delay must be <= selfplay.k"), std::string::npos) << e.what();
  }
  try {
    parse_config_layers({{base, "base.yaml"}, {"corpus:\n  enabeld: false\n", "typo.yaml"}});
    FAIL() << "unknown key accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("typo.yaml:2: unknown config key 'corpus.enabeld'; did you mean 'corpus.enabled'?"),
              std::string::npos)
        << e.what();
  }
}
