// trainer/heldout_eval.h and trainer/reset_seeds.h: the statistics of a set from canned plays (values
// by hand), the reset seeds reaching the environments, the training and held-out seeds disjoint, and
// data/heldout_envs kept apart from the training seeds.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/fnv1a.h"
#include "common/stats.h"
#include "envsandbox/sandbox.h"
#include "trainer/heldout_eval.h"
#include "trainer/reset_seeds.h"
#include "tests/testing/tiny_policy.h"
#include "tests/trainer/tiny_run.h"
#include "trainer/config.h"
#include "trainer/train.h"

namespace spade::trainer {
namespace {

namespace fs = std::filesystem;

rollout::EpisodeResult play(double reward, const std::string& failure = "") {
  rollout::EpisodeResult r;
  r.reward = reward;
  r.failure = failure;
  return r;
}

TEST(HeldoutEval, SummaryOfCannedPlaysByHand) {
  // Three environments, 4 plays each: logic/a wins 4, logic/b wins 1, math/c wins 0 (one play timed out).
  const std::vector<SeedEnv> envs = {{"logic", "a", "a.py", "", ""}, {"logic", "b", "b.py", "", ""},
                                     {"math", "c", "c.py", "", ""}};
  const std::vector<std::vector<rollout::EpisodeResult>> plays = {
      {play(1), play(0.5), play(1), play(1)},
      {play(1), play(0), play(-1), play(0)},
      {play(0), play(-1), play(0, "timeout"), play(0)}};
  EvalOptions o;
  o.plays = 4;
  const SetEval s = summarize_plays("set", envs, plays, o);
  ASSERT_EQ(s.environments.size(), 3u);
  const EnvEval &a = s.environments[0], &b = s.environments[1], &c = s.environments[2];
  EXPECT_EQ(a.wins, 4);
  EXPECT_EQ(b.wins, 1);
  EXPECT_EQ(c.wins, 0);
  EXPECT_DOUBLE_EQ(b.success, 0.25);
  EXPECT_EQ(std::make_pair(b.low, b.high), wilson_interval(1, 4));
  // pass@k of b (n = 4, c = 1): k/4 -- 1 - C(3,k)/C(4,k) = 1 - (4-k)/4.
  ASSERT_EQ(b.pass_at_k.size(), 4u);
  EXPECT_NEAR(b.pass_at_k[0], 0.25, 1e-12);
  EXPECT_NEAR(b.pass_at_k[1], 0.5, 1e-12);
  EXPECT_NEAR(b.pass_at_k[3], 1.0, 1e-12);
  EXPECT_EQ(c.failures.at("timeout"), 1);
  // Skills sorted; logic = mean(1, 0.25). A bootstrap of two values resamples means 1, 0.625, 0.25
  // (probabilities 1/4, 1/2, 1/4): its 2.5% and 97.5% quantiles are 0.25 and 1.
  ASSERT_EQ(s.skills.size(), 2u);
  EXPECT_EQ(s.skills[0].name, "logic");
  EXPECT_EQ(s.skills[0].environments, 2);
  EXPECT_DOUBLE_EQ(s.skills[0].success, 0.625);
  EXPECT_DOUBLE_EQ(s.skills[0].low, 0.25);
  EXPECT_DOUBLE_EQ(s.skills[0].high, 1.0);
  EXPECT_NEAR(s.skills[0].pass_at_k[1], (1.0 + 0.5) / 2, 1e-12);
  EXPECT_EQ(s.skills[1].name, "math");
  EXPECT_DOUBLE_EQ(s.skills[1].success, 0.0);
  EXPECT_NEAR(s.overall.success, 1.25 / 3, 1e-12);
  EXPECT_EQ(s.overall.environments, 3);
  EXPECT_LE(s.overall.low, s.overall.success);
  EXPECT_GE(s.overall.high, s.overall.success);
  const nlohmann::json j = s.to_json();
  EXPECT_EQ(j["environments"][1]["wins"], 1);
  EXPECT_EQ(j["reset_seeds"], "heldout");
  EXPECT_NE(format_set_eval(s).find("overall (3 envs)"), std::string::npos);
  // A play list of the wrong size is refused, naming the environment.
  std::vector<std::vector<rollout::EpisodeResult>> short_plays = plays;
  short_plays[2].pop_back();
  EXPECT_THROW(summarize_plays("set", envs, short_plays, o), Error);
}

TEST(HeldoutEval, HeldoutSeedsAreDisjointFromEveryTrainingSeed) {
  for (int j = 0; j < 1000; ++j) EXPECT_GE(heldout_reset_seed(j), kHeldoutSeedBase);
  for (int i = 0; i < 20000; ++i) {
    const int64_t s = training_reset_seed("env-" + std::to_string(i) + ":" + std::to_string(i % 7));
    ASSERT_GE(s, 0);
    ASSERT_LT(s, kHeldoutSeedBase);
  }
  EXPECT_EQ(eval_reset_seeds(EvalSeeds::kTraining, 3), (std::vector<int64_t>{0, 1, 2}));  // the cold start's
  EXPECT_EQ(eval_reset_seeds(EvalSeeds::kHeldout, 2), (std::vector<int64_t>{kHeldoutSeedBase, kHeldoutSeedBase + 1}));
  EXPECT_EQ(parse_eval_seeds("training"), EvalSeeds::kTraining);
  EXPECT_THROW(parse_eval_seeds("test"), Error);
}

// The reset seeds reach the environments: an environment that is won only on a seed >= 2^31 is won
// on every held-out play and lost on every training-seed play; one that is always lost is lost.
TEST(HeldoutEval, PlaysReachTheEnvironmentsWithTheirSeeds) {
  fixtures::TinyPolicy p = fixtures::make_tiny_policy(5);
  {
    torch::NoGradGuard ng;  // make the end of turn the likeliest token: every turn stops at once
    torch::Tensor e = p.model->named_parameters()["model.embed_tokens.weight"];
    e.select(1, 0).fill_(1.0);
    e[p.chat->eos_id()][0] = 2.0;
  }
  envsandbox::EnvServer server;
  const std::string seed_check =
      "class SeedCheckEnv:\n"
      "    def __init__(self, max_turns=5, **kwargs):\n"
      "        self.win = False\n"
      "    def reset(self, seed=None):\n"
      "        self.win = seed is not None and seed >= 2**31\n"
      "        return 'Say anything.', {}\n"
      "    def step(self, action):\n"
      "        return 'done', (1.0 if self.win else -1.0), True, False, {}\n";
  const std::string lose =
      "class LoseEnv:\n"
      "    def __init__(self, max_turns=5, **kwargs):\n"
      "        pass\n"
      "    def reset(self, seed=None):\n"
      "        return 'Say anything.', {}\n"
      "    def step(self, action):\n"
      "        return 'no', -1.0, True, False, {}\n";
  const std::vector<SeedEnv> envs = {{"logic", "seed_check", "seed_check.py", seed_check, ""},
                                     {"math", "lose", "lose.py", lose, ""}};
  EvalOptions o;
  o.plays = 3;
  o.episode.sampling.temperature = 0;  // greedy
  o.episode.sampling.max_new_tokens = 8;
  o.episode.max_turns = 2;
  o.episode.context_tokens = 1024;
  const SetEval held = evaluate_set(p.ref(), server, "fixture", envs, o);
  EXPECT_EQ(held.environments[0].wins, 3) << held.to_json().dump(1);
  EXPECT_EQ(held.environments[1].wins, 0);
  EXPECT_DOUBLE_EQ(held.overall.success, 0.5);
  o.seeds = EvalSeeds::kTraining;
  const SetEval train = evaluate_set(p.ref(), server, "fixture", envs, o);
  EXPECT_EQ(train.environments[0].wins, 0) << train.to_json().dump(1);
  EXPECT_EQ(train.seeds, EvalSeeds::kTraining);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// data/heldout_envs: 5 games per game skill, none a name or a copy of a seed game, each with a hint,
// and no training path reads the folder.
TEST(HeldoutEval, HeldoutGamesAreApartFromTheTrainingSeeds) {
  const std::string root = SPADE_SOURCE_DIR;
  const std::vector<SeedEnv> held = load_seed_envs(root + "/data/heldout_envs");
  const std::vector<SeedEnv> seeds = load_seed_envs(root + "/data/seed_envs");
  std::map<std::string, int> per_skill;
  std::set<std::string> seed_names;
  std::set<uint64_t> seed_hashes;
  for (const SeedEnv& s : seeds) {
    seed_names.insert(s.skill + "/" + s.name);
    seed_hashes.insert(fnv1a64(s.code));
  }
  for (const SeedEnv& h : held) {
    ++per_skill[h.skill];
    EXPECT_FALSE(seed_names.count(h.skill + "/" + h.name)) << h.path << " has a seed game's name";
    EXPECT_FALSE(seed_hashes.count(fnv1a64(h.code))) << h.path << " is a copy of a seed game";
    EXPECT_FALSE(h.hint.empty()) << h.path << " has no hint";
  }
  EXPECT_EQ(per_skill.size(), 6u);
  for (const auto& [skill, n] : per_skill) EXPECT_GE(n, 5) << skill;
  // No code of trainer/ or rollout/ holds the folder's path as a string (comments may name it), and no
  // shipped config names it at all.
  for (const char* dir : {"trainer", "rollout"})
    for (const auto& e : fs::recursive_directory_iterator(root + "/" + dir))
      if (e.is_regular_file())
        EXPECT_EQ(slurp(e.path()).find("heldout_envs\""), std::string::npos) << e.path() << " names data/heldout_envs";
  for (const auto& e : fs::recursive_directory_iterator(root + "/configs"))
    if (e.is_regular_file())
      EXPECT_EQ(slurp(e.path()).find("heldout_envs"), std::string::npos) << e.path() << " names data/heldout_envs";
}

// In-loop evaluation (eval.*): a tiny run evaluates before its first step (a step-0 metrics line),
// after step 1 (eval.every: 1) and after the last; each line carries eval/<set>/success with its
// interval bounds and per-skill values for the set's skills, the success of a set whose one game is
// lost on any answer is 0, and the interval contains the value.
TEST(HeldoutEval, InLoopEvaluationLogsEvalMetrics) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "heldout_in_loop";
  fs::remove_all(root);
  fs::create_directories(root / "lose_set" / "math");
  write_file_atomic((root / "lose_set/math/lose.py").string(),
                    "class LoseEnv:\n    def __init__(self, max_turns=5, **kwargs):\n        pass\n"
                    "    def reset(self, seed=None):\n        return 'Say anything.', {}\n"
                    "    def step(self, action):\n        return 'no', -1.0, True, False, {}\n");
  const std::string yaml = fixtures::tiny_run_yaml(root.string(), /*threads=*/1, /*max_attempts=*/1) +
                           "eval: {every: 1, plays: 2, temperature: 0, sets: [" + (root / "lose_set").string() + "]}\n";
  Config config = parse_config(yaml, "eval.yaml");
  run_train(config, {true}, [](const std::string&) {});
  std::ifstream in(root / "t" / "metrics.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 3u) << "step 0 (before self-play) and steps 1, 2";
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& m = lines[i];
    EXPECT_EQ(m["step"], static_cast<int>(i));
    ASSERT_TRUE(m.contains("eval/lose_set/success")) << m.dump();
    EXPECT_EQ(m["eval/lose_set/success"], 0.0);
    EXPECT_LE(m["eval/lose_set/success_low"].get<double>(), 0.0);
    EXPECT_GE(m["eval/lose_set/success_high"].get<double>(), 0.0);
    EXPECT_TRUE(m.contains("eval/lose_set/math/success")) << m.dump();
  }
  EXPECT_FALSE(lines[0].contains("reward/mean")) << "the step-0 line holds the evaluation only";
}

}  // namespace
}  // namespace spade::trainer

namespace spade::trainer {

// data/tooluse_heldout_envs: one program per tool-use skill, none a name or a copy of a tool-use seed,
// each with a plan hint (the shipped-config and code checks above cover this folder too: its name
// contains "heldout_envs").
TEST(HeldoutEval, HeldoutToolUseProgramsAreApartFromTheTrainingSeeds) {
  const std::string root = SPADE_SOURCE_DIR;
  const std::vector<SeedEnv> held = load_seed_envs(root + "/data/tooluse_heldout_envs");
  const std::vector<SeedEnv> seeds = load_seed_envs(root + "/data/tooluse_seed_envs");
  std::set<std::string> names;
  std::set<uint64_t> hashes;
  for (const SeedEnv& s : seeds) {
    names.insert(s.name);
    hashes.insert(fnv1a64(s.code));
  }
  std::set<std::string> skills;
  for (const SeedEnv& h : held) {
    skills.insert(h.skill);
    EXPECT_FALSE(names.count(h.name)) << h.path << " has a seed program's name";
    EXPECT_FALSE(hashes.count(fnv1a64(h.code))) << h.path << " is a copy of a seed program";
    EXPECT_FALSE(h.hint.empty()) << h.path << " has no hint";
  }
  EXPECT_EQ(skills.size(), 6u);
}

}  // namespace spade::trainer
