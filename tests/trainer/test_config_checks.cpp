// Load-time checks of run configs (trainer/config_checks.h, the rules of trainer/config_keys.h): one
// test per class of error (an enum value its library's parser rejects, a number out of range, a
// constraint between keys, a missing input file), each checking that the message names the key, the
// file and what is allowed. The expected names and rules are copied from the owning headers
// (trainer/policy_loss.h, reward/designer_reward.h, rollout/sampler.h) and the list.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "common/error.h"
#include "trainer/config.h"
#include "trainer/config_checks.h"
#include "trainer/config_keys.h"

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "my.yaml", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(ConfigChecks, DefaultsPass) { EXPECT_NO_THROW(parse_config("", "empty.yaml")); }

// Enums: the library's own parser decides, and its list of names is in the message.
TEST(ConfigChecks, UnknownEnumValueNamesTheKeyTheLineAndTheAllowedNames) {
  // loss.agg_mode: trainer/policy_loss.h "Canonical names".
  std::string e = error_of("loss:\n  eps_low: 0.2\n  agg_mode: seq_mean_tokn_mean\n");
  EXPECT_TRUE(has(e, "my.yaml:3: loss.agg_mode")) << e;
  EXPECT_TRUE(has(e, "'seq_mean_tokn_mean'")) << e;
  EXPECT_TRUE(has(e, "token_mean, seq_mean_token_mean, seq_mean_token_sum, dr_grpo")) << e;
  // reward.designer_reward: reward/designer_reward.h "Canonical names".
  e = error_of("reward:\n  designer_reward: regret\n");
  EXPECT_TRUE(has(e, "my.yaml:2: reward.designer_reward")) << e;
  EXPECT_TRUE(has(e, "blend, regret_based, learning_potential, solve_rate")) << e;
  // From --set: the override instead of FILE:LINE.
  e = error_of("", {"selfplay.agent.decode_graph=sometimes"});
  EXPECT_TRUE(has(e, "--set selfplay.agent.decode_graph=sometimes: selfplay.agent.decode_graph")) << e;
  EXPECT_TRUE(has(e, "auto, off or on")) << e;  // rollout/sampler.h parse_decode_graph_mode
}

// Every enum-valued key rejects a name no parser accepts, naming the key once. The allowed names
// listed with each are from the owning header's documentation.
TEST(ConfigChecks, EveryEnumKeyRejectsAnUnknownName) {
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"train.device", "cuda:N"},           {"train.autocast", "bf16"},
      {"train.attention", "sdpa"},          {"selfplay.designer.decode_graph", "off"},
      {"selfplay.agent.decode_graph", "off"}, {"selfplay.hint.decode_graph", "off"},
      {"reward.designer_reward", "solve_rate"}, {"loss.agg_mode", "dr_grpo"},
      {"loss.tis_level", "geometric"},      {"loss.kl_type", "low_var_kl"},
      {"optim.lr_schedule", "cosine"},      {"checkpoint.dtype", "bf16"},
      {"distributed.backend", "nccl"},      {"distributed.sharding", "gradients"},
      {"sandbox.namespaces", "require"},
      {"selfplay.mode", "fixed_pool"},      {"eval.reset_seeds", "training"},
      {"selfplay.setting", "tool_use"}};
  for (const auto& [key, allowed] : keys) {
    const std::string e = error_of("", {key + "=bogus_name"});
    EXPECT_TRUE(has(e, "--set " + key + "=bogus_name: " + key)) << key << ": " << e;
    EXPECT_TRUE(has(e, allowed)) << key << ": " << e;
    EXPECT_FALSE(has(e, key + ": " + key)) << "key named twice: " << e;
    EXPECT_TRUE(has(error_of("", {key + "=" + (allowed == "cuda:N" ? "cuda:1" : allowed)}), "(no error)")) << key;
  }
}

// Numbers: the range of the key, and the value given.
TEST(ConfigChecks, OutOfRangeNumbersNameTheKeyTheRuleAndTheValue) {
  // The cases: a negative tis_cap, eps_low outside [0, 1), a negative designer temperature.
  EXPECT_EQ(error_of("loss:\n  tis_cap: -1\n"), "my.yaml:2: loss.tis_cap must be > 0, got -1");
  EXPECT_EQ(error_of("loss:\n  eps_low: 1\n"), "my.yaml:2: loss.eps_low must be in [0, 1), got 1");
  EXPECT_EQ(error_of("loss:\n  eps_low: -0.1\n"), "my.yaml:2: loss.eps_low must be in [0, 1), got -0.1");
  EXPECT_EQ(error_of("selfplay:\n  designer:\n    temperature: -0.5\n"),
            "my.yaml:3: selfplay.designer.temperature must be >= 0 (0: greedy), got -0.5");
  // Probabilities in [0, 1]; counts >= 1; caps > 0.
  EXPECT_EQ(error_of("", {"selfplay.agent.min_p=1.5"}),
            "--set selfplay.agent.min_p=1.5: selfplay.agent.min_p must be in [0, 1], got 1.5");
  EXPECT_EQ(error_of("", {"selfplay.plays_per_env=0"}),
            "--set selfplay.plays_per_env=0: selfplay.plays_per_env must be >= 1, got 0");
  EXPECT_EQ(error_of("", {"reward.designer_scale_cap=0"}),
            "--set reward.designer_scale_cap=0: reward.designer_scale_cap must be > 0, got 0");
  EXPECT_EQ(error_of("", {"checkpoint.every=0"}),
            "--set checkpoint.every=0: checkpoint.every must be >= 1 (rollouts), got 0");
  // Not a finite number.
  EXPECT_EQ(error_of("", {"loss.eps_high=.nan"}),
            "--set loss.eps_high=.nan: loss.eps_high must be a finite number >= 0, got nan");
}

// Every numeric key with a bound rejects the value just past it (the bound as the table declares
// it): no rule in config_keys.h is declared and not enforced.
TEST(ConfigChecks, EveryNumericBoundIsEnforced) {
  Config c;
  int checked = 0;
  config_keys::visit(c, [&](const std::string& key, auto& field, const config_keys::Rule& r) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      auto text = [](double x) {
        if (std::is_integral_v<T>) return std::to_string(static_cast<long long>(x));
        std::ostringstream s;
        s << x;
        return s.str();
      };
      std::vector<double> outside;
      if (std::isfinite(r.min)) outside.push_back(r.min_open ? r.min : r.min - 1);
      if (std::isfinite(r.max)) outside.push_back(r.max_open ? r.max : r.max + 1);
      for (double x : outside) {
        if (std::is_unsigned_v<T> && x < 0) continue;
        const std::string e = error_of("", {key + "=" + text(x)});
        EXPECT_TRUE(has(e, key + " must be ")) << key << "=" << text(x) << ": " << e;
        ++checked;
      }
    }
  });
  EXPECT_GT(checked, 80);  // about 100 bounds in the table
}

// Constraints between keys: each key involved, with its value and where it was set.
TEST(ConfigChecks, CrossKeyConstraintsNameEveryKeyInvolved) {
  std::string e = error_of("model:\n  hidden_size: 250\n  num_attention_heads: 4\n");
  EXPECT_EQ(e, "my.yaml:2: model.hidden_size must be a multiple of model.num_attention_heads (head size = hidden / "
               "heads) (model.hidden_size = 250 at my.yaml:2, model.num_attention_heads = 4 at my.yaml:3)");
  e = error_of("model:\n  num_attention_heads: 4\n  num_key_value_heads: 3\n");
  EXPECT_TRUE(has(e, "my.yaml:2: model.num_attention_heads must be a multiple of model.num_key_value_heads")) << e;
  // A key left at its default is "at" the config's name.
  e = error_of("", {"selfplay.skills_per_regen=5", "selfplay.envs_per_regen=4"});
  EXPECT_TRUE(has(e, "selfplay.envs_per_regen must be >= selfplay.skills_per_regen")) << e;
  EXPECT_TRUE(has(e, "selfplay.skills_per_regen = 5 at --set selfplay.skills_per_regen=5")) << e;
  // The blend's regret term needs hinted plays; without it (w_regret 0) none are needed.
  e = error_of("", {"selfplay.hint_plays=0"});
  EXPECT_TRUE(has(e, "selfplay.hint_plays must be >= 1 when reward.designer_reward = blend")) << e;
  EXPECT_EQ(error_of("", {"selfplay.hint_plays=0", "reward.w_regret=0"}), "(no error)");
  e = error_of("", {"selfplay.agent.max_new_tokens=40000"});  // default context_tokens 32768
  EXPECT_TRUE(has(e, "selfplay.agent.max_new_tokens must be <= selfplay.context_tokens")) << e;
  EXPECT_TRUE(has(e, "selfplay.context_tokens = 32768 at my.yaml")) << e;
  e = error_of("", {"loss.tis_low=3"});  // default tis_cap 2
  EXPECT_TRUE(has(e, "loss.tis_low must be < loss.tis_cap")) << e;
  e = error_of("", {"loss.dual_clip_c=0.5"});
  EXPECT_TRUE(has(e, "loss.dual_clip_c must be 0 (off) or > 1")) << e;
  e = error_of("", {"selfplay.hint.temperature=1e-7"});
  EXPECT_TRUE(has(e, "selfplay.hint.temperature must be 0 (greedy) or >= 1e-5")) << e;
  e = error_of("", {"reward.plateau_low=0.7"});  // default plateau_high 0.6
  EXPECT_TRUE(has(e, "reward.plateau_low must be <= reward.plateau_high")) << e;
  e = error_of("", {"loss.kl_coef=0.005"});
  EXPECT_TRUE(has(e, "--set loss.kl_coef=0.005: loss.kl_reference must be set")) << e;
  // selfplay.skills: known slugs, each once, at least skills_per_regen (default 3) of them.
  e = error_of("selfplay:\n  skills: [math, astrology, logic]\n");
  EXPECT_TRUE(has(e, "my.yaml:2: selfplay.skills (selfplay.setting games): unknown game skill 'astrology' (valid: math, logic"))
      << e;
  // The skills are the setting's (rollout/prompts.h): a game skill in a tool-use run, and the reverse.
  e = error_of("selfplay:\n  setting: tool_use\n  skills: [data_retrieval, math, error_recovery]\n");
  EXPECT_TRUE(has(e, "selfplay.skills (selfplay.setting tool_use): unknown tool-use skill 'math' (valid: api_orchestration"))
      << e;
  e = error_of("selfplay:\n  skills: [data_retrieval, math, logic]\n");
  EXPECT_TRUE(has(e, "unknown game skill 'data_retrieval'")) << e;
  EXPECT_EQ(error_of("selfplay:\n  setting: tool_use\n  skills: [data_retrieval, error_recovery, tool_selection]\n"),
            "(no error)");
  // The self-validator is the tool-use setting's (SPADE App. F.2).
  e = error_of("selfplay:\n  self_validate: true\n");
  EXPECT_TRUE(has(e, "my.yaml:2: selfplay.self_validate is the tool-use self-validator: it needs selfplay.setting: "
                     "tool_use (is games)")) << e;
  EXPECT_EQ(error_of("selfplay:\n  setting: tool_use\n  self_validate: true\n"), "(no error)");
  e = error_of("selfplay:\n  skills: [math, logic, math]\n");
  EXPECT_TRUE(has(e, "selfplay.skills lists 'math' twice")) << e;
  e = error_of("selfplay:\n  skills: [math, causal]\n");
  EXPECT_TRUE(has(e, "selfplay.skills must list at least selfplay.skills_per_regen skills (2 listed)")) << e;
  EXPECT_EQ(error_of("selfplay:\n  skills: [math, causal]\n  skills_per_regen: 2\n"), "(no error)");
  // eval: sets needed when on; a temperature is 0 (greedy) or usable.
  e = error_of("", {"eval.every=2"});
  EXPECT_TRUE(has(e, "eval.sets must name at least one environment folder when eval.every > 0")) << e;
  e = error_of("", {"eval.temperature=1e-7"});
  EXPECT_TRUE(has(e, "eval.temperature must be 0 (greedy) or >= 1e-5")) << e;
  // duel: scored checkpoints must be saved ones (default checkpoint.every 16), an arena and opponents
  // are needed when on, and a model opponent needs the endpoints file that says how to call it.
  const std::vector<std::string> duel_on = {"duel.every=32", "duel.arena=a.yaml", "duel.opponents=[x=s.json]"};
  EXPECT_EQ(error_of("", duel_on), "(no error)");
  e = error_of("", {"duel.every=24", "duel.arena=a.yaml", "duel.opponents=[x=s.json]"});
  EXPECT_TRUE(has(e, "duel.every must be a multiple of checkpoint.every")) << e;
  EXPECT_TRUE(has(e, "checkpoint.every = 16 at my.yaml")) << e;
  e = error_of("", {"duel.every=16", "duel.opponents=[x=s.json]"});
  EXPECT_TRUE(has(e, "duel.arena must name an arena file")) << e;
  e = error_of("", {"duel.every=16", "duel.arena=a.yaml"});
  EXPECT_TRUE(has(e, "duel.opponents must list at least one participant when duel.every > 0")) << e;
  e = error_of("", {"duel.every=16", "duel.arena=a.yaml", "duel.opponents=[gpt]"});
  EXPECT_TRUE(has(e, "duel.opponents: 'gpt' is a model id, so duel.endpoints must name the endpoints file")) << e;
  e = error_of("", {"duel.every=16", "duel.arena=a.yaml", "duel.opponents=[=s.json]"});
  EXPECT_TRUE(has(e, "'=s.json' is not ID=SCRIPT.json, checkpoint:DIR or a model id")) << e;
  EXPECT_EQ(error_of("", {"duel.every=16", "duel.arena=a.yaml", "duel.opponents=[checkpoint:/m]"}), "(no error)");
  // distributed.inference_dtype is ZeRO-3's inference copy: the other modes sample from the trained
  // fp32 weights, so bf16 there is refused rather than ignored.
  e = error_of("", {"distributed.inference_dtype=bf16"});
  EXPECT_TRUE(has(e, "--set distributed.inference_dtype=bf16: distributed.inference_dtype bf16 needs "
                     "distributed.sharding full, not none")) << e;
  EXPECT_EQ(error_of("", {"distributed.inference_dtype=bf16", "distributed.sharding=full",
                          "train.activation_checkpointing=true"}),
            "(no error)");
  e = error_of("", {"distributed.inference_dtype=fp16"});
  EXPECT_TRUE(has(e, "--set distributed.inference_dtype=fp16: distributed.inference_dtype must be fp32 or bf16, not 'fp16'"))
      << e;
  e = error_of("", {"duel.device=tpu"});
  EXPECT_TRUE(has(e, "duel.device")) << e;
}

// Inputs: checked apart from parsing (a saved config is parsed before its run's files are compared).
TEST(ConfigChecks, MissingInputsNameTheKeyAndThePath) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "config_checks_inputs";
  fs::remove_all(root);
  fs::create_directories(root / "seeds");
  Config c = parse_config("", "my.yaml");
  c.seed_envs.dir = (root / "seeds").string();
  EXPECT_NO_THROW(check_inputs(c, "my.yaml"));
  auto error = [&](const Config& x) {
    try {
      check_inputs(x, "my.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Config t = c;
  t.tokenizer.path = (root / "no.model").string();
  EXPECT_EQ(error(t), "my.yaml: tokenizer.path: " + t.tokenizer.path + " does not exist (a trained tokenizer.model)");
  Config m = c;
  m.model.init_checkpoint = (root / "seeds").string();  // a directory without config.json
  EXPECT_TRUE(has(error(m), "my.yaml: model.init_checkpoint: " + m.model.init_checkpoint + "/config.json does not exist"))
      << error(m);
  Config s = c;
  s.seed_envs.dir = (root / "nowhere").string();
  EXPECT_TRUE(has(error(s), "my.yaml: seed_envs.dir: " + s.seed_envs.dir + " does not exist")) << error(s);
  Config pool = c;
  pool.selfplay.pool_dir = (root / "no_pool").string();
  EXPECT_TRUE(has(error(pool), "my.yaml: selfplay.pool_dir: " + pool.selfplay.pool_dir + " does not exist")) << error(pool);
  Config ev = c;
  ev.eval.sets = {(root / "seeds").string(), (root / "no_set").string()};
  EXPECT_TRUE(has(error(ev), "my.yaml: eval.sets: " + (root / "no_set").string() + " does not exist")) << error(ev);
  Config b = c;
  b.corpus.build_from = {(root / "seeds").string(), (root / "gone.txt").string()};
  EXPECT_TRUE(has(error(b), "corpus.build_from: " + (root / "gone.txt").string() + " does not exist")) << error(b);
  Config k = c;
  k.loss.kl_coef = 0.005;
  k.loss.kl_reference = (root / "ref").string();
  EXPECT_TRUE(has(error(k), "loss.kl_reference: " + k.loss.kl_reference + "/config.json does not exist")) << error(k);
  Config d = c;
  d.duel.every = 16;
  d.duel.arena = (root / "arena.yaml").string();
  d.duel.opponents = {"x=" + (root / "x.json").string()};
  EXPECT_TRUE(has(error(d), "my.yaml: duel.arena: " + d.duel.arena + " does not exist")) << error(d);
  std::ofstream(d.duel.arena) << "repos: []\n";
  EXPECT_TRUE(has(error(d), "my.yaml: duel.opponents: " + (root / "x.json").string() + " does not exist (a replay script"))
      << error(d);
  d.duel.opponents = {"checkpoint:" + (root / "seeds").string()};
  EXPECT_TRUE(has(error(d), "duel.opponents: " + (root / "seeds").string() + "/config.json does not exist")) << error(d);
  d.duel.every = 0;  // off: nothing of the section is read
  EXPECT_EQ(error(d), "(no error)");
}
