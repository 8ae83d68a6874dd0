// The delayed designer update end to end (docs/sources.md, reference §1 and §5): designer samples
// of the generation created at rollout t are scored over their k-step window and trained at t + k,
// first in the batch, with advantage (blend - same-skill mean) * S and truncated IS against their
// (now stale) rollout logprobs; the generation still live at the last rollout is flushed then.
//
// The other run-level tests use a random policy whose programs are all rejected, so no designer
// sample is ever trained there. Here the cold start memorises ONE tiny seed program
// (fixtures/coin_game.py, copied under every skill) and the designer decodes greedily,
// so its programs pass the validation gates (they are seed copies: designer/seed_copy_rate). The game
// ignores the action and wins iff random.Random(seed).random() < 0.65, so window win rates, hence
// blends, differ between environments and the per-skill centring is not trivially zero. The threshold
// makes the solution gate's probe seeds (42, 123, 7: 0.639, 0.052, 0.324) winning tosses, so copies
// that keep solution() are admitted, and the cold start gets agent demonstrations (reset seeds 0 and
// 1: 0.844 lost, dropped; 0.134 won, kept) that teach the agent to answer \boxed{1} and end its turn.
// Without them (the fixture had no solution() before) an agent reply at temperature 2 ended within
// its budget by chance: on LibTorch 2.6 one agent play of 80 did, so every blend was 0. With them, plays end
// and the window win rates follow the reset seeds (derived from environment ids, trainer/reset_seeds.h),
// not the LibTorch version's sampled numbers.
// The fixture has no comments on purpose: the designer's max_new_tokens must cover the whole program.
//
// Every expected value is recomputed here from the run's own outputs (rollouts.h5 read back with
// h5py by read_rollouts_h5.py, metrics.jsonl, envs/, the per-step checkpoints) with the reference's
// formulas written out by hand; nothing is taken from the code under test's helpers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"
#include "tests/trainer/spawn_helpers.h"
#include "tests/trainer/tiny_run.h"
#include "trainer/train.h"

using namespace spade;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kSteps = 4;           // rollouts 0..3
constexpr int kK = 2;               // regenerations at 0 and 2; generation 0 trained at 2, generation 2 flushed at 3
constexpr int kPlays = 4;           // selfplay.plays_per_env
constexpr double kAgentTemperature = 2.0;  // agent samples differ, so the agent steps move the weights

// Reference §5, written out by hand: regret_n = clip(regret / 0.15, 0, 1); plateau 1 on [0.4, 0.6],
// linear to 0 over a 0.25 ramp each side; blend = 0.4 * regret_n + 0.6 * plateau(w).
double plateau_by_hand(double w) {
  if (w < 0.4) return std::max(0.0, 1.0 - (0.4 - w) / 0.25);
  if (w > 0.6) return std::max(0.0, 1.0 - (w - 0.6) / 0.25);
  return 1.0;
}
double blend_by_hand(double regret, double w) {
  return 0.4 * std::clamp(regret / 0.15, 0.0, 1.0) + 0.6 * plateau_by_hand(w);
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// `extra_corpus` / `extra_selfplay` are appended inside the corpus / selfplay mappings (the control
// switches of the other tests, e.g. "designer_train: false, ").
std::string run_yaml(const fs::path& root, const fs::path& seeds, const std::string& extra_corpus = "",
                     const std::string& extra_selfplay = "") {
  // A 2-layer hidden-64 model (0.11M parameters): 100 cold-start steps at lr 1e-2 bring the
  // cross-entropy to ~0.004 nats, enough for greedy decoding to reproduce the 150-token program.
  // max_seconds 1e6: the time box never ends the cold start before its 100 steps (with run.deterministic
  // the cold start's lr follows the step count alone, trainer/warm_start.cpp; an early stop by the
  // clock would still make the number of steps depend on wall time).
  // hint_fraction 0: no hint-writing examples; a hint that fails (no end of turn within 8 tokens) gives
  // r_hint = 0 (reference §5).
  return "run: {name: dd, out_dir: " + root.string() + ", seed: 5, threads: 1, deterministic: true}\n"
         "corpus: {" + extra_corpus + "build_from: [" + fixtures::tiny_corpus_source() + "], max_words: 12, min_words: 5}\n"
         "tokenizer: {vocab_size: 500}\n"
         "model: {hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 2, "
         "num_key_value_heads: 1}\n"
         "seed_envs: {dir: " + seeds.string() + "}\n"
         "warm_start: {max_steps: 100, max_seconds: 1.0e6, batch_tokens: 1536, demos_per_env: 2, designer_fraction: 0.7, "
         "hint_fraction: 0, reference_fraction: 0, lr: 0.01, warmup_steps: 5}\n"
         "selfplay: {" + extra_selfplay + "steps: " + std::to_string(kSteps) + ", k: " + std::to_string(kK) +
         ", envs_per_regen: 4, skills_per_regen: 2, plays_per_env: " + std::to_string(kPlays) +
         ", hint_plays: 2, max_attempts: 1, max_turns: 2, context_tokens: 1536,\n"
         "  designer: {temperature: 0, max_new_tokens: 200}, agent: {temperature: 2.0, max_new_tokens: 12},\n"
         "  hint: {max_new_tokens: 8}}\n"
         "optim: {lr: 0.001}\n"
         "memory: {enabled: false}\n"
         "checkpoint: {every: 1, keep_last: 10}\n";
}

struct TisExpectation {
  double abs_diff_mean = 0, tis_mean = 0, designer_abs_diff_mean = 0;
  int64_t tokens = 0;
};

// Recomputes the TIS terms of one step's update by hand: the weights the update started from are
// the checkpoint written after the previous step (step_<t>), every trained row of rollouts.h5 is
// scored with them (full forward, lm_head, log_softmax at the row's sampling temperature: greedy
// designer rows 1, agent rows kAgentTemperature), and the ratio exp(logp_train - logp_rollout) is
// clamped to [0, 2] (reference §5). Token means over loss-masked target positions (mask[1:]).
TisExpectation recompute_tis(const std::string& checkpoint_dir, const std::vector<const json*>& rows) {
  policy::Transformer model = policy::load_checkpoint(checkpoint_dir);
  model->eval();
  torch::NoGradGuard no_grad;
  TisExpectation out;
  double diff_sum = 0, tis_sum = 0, designer_diff = 0;
  int64_t designer_tokens = 0;
  for (const json* row : rows) {
    const std::vector<int64_t> tokens = (*row)["tokens"].get<std::vector<int64_t>>();
    const std::vector<int> mask = (*row)["loss_mask"].get<std::vector<int>>();
    const std::vector<double> rollout = (*row)["rollout_logprobs"].get<std::vector<double>>();
    const bool designer = (*row)["role"] == "designer";
    const int64_t T = static_cast<int64_t>(tokens.size()) - 1;
    torch::Tensor ids = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end() - 1)).view({1, T});
    torch::Tensor targets = torch::tensor(std::vector<int64_t>(tokens.begin() + 1, tokens.end()));
    torch::Tensor positions = torch::arange(T, torch::kLong).view({1, T});
    torch::Tensor logits = model->lm_head(model->forward(ids, positions)).view({T, -1});
    torch::Tensor logp = policy::token_logprobs(logits, targets, designer ? 1.0 : kAgentTemperature);
    for (int64_t i = 0; i < T; ++i) {
      if (!mask[i + 1]) continue;
      // rollout_logprobs are stored as float32 (rollout_log.h); the trainer reads the same values.
      const double d = static_cast<double>(logp[i].item<float>()) - static_cast<double>(static_cast<float>(rollout[i + 1]));
      diff_sum += std::abs(d);
      tis_sum += std::clamp(std::exp(d), 0.0, 2.0);
      ++out.tokens;
      if (designer) {
        designer_diff += std::abs(d);
        ++designer_tokens;
      }
    }
  }
  out.abs_diff_mean = diff_sum / std::max<int64_t>(1, out.tokens);
  out.tis_mean = tis_sum / std::max<int64_t>(1, out.tokens);
  out.designer_abs_diff_mean = designer_diff / std::max<int64_t>(1, designer_tokens);
  return out;
}

// A finished run of the fixture: metrics.jsonl and rollouts.h5 read back, rollouts numbered from 0.
struct FixtureRun {
  fs::path run;
  std::vector<json> metrics;
  json episodes;
  std::map<std::string, json> env_table;  // environment id -> its /environments row
  double metric(int t, const char* key) const { return metrics[t].value(key, -1.0); }
  int admitted(int t) const { return static_cast<int>(metric(t, "designer/admitted")); }
  // The designer rows of rollout t.
  std::vector<const json*> designer_rows(int t) const {
    std::vector<const json*> out;
    for (const json& e : episodes)
      if (e["step"] == t && e["role"] == "designer") out.push_back(&e);
    return out;
  }
  // The prompt (the tokens before the first loss-masked one) of a designer row, decoded with the run's tokenizer.
  std::string prompt_of(const json& row) const {
    const policy::Tokenizer tok = policy::Tokenizer::load((run / "tokenizer.model").string());
    const std::vector<int64_t> tokens = row["tokens"].get<std::vector<int64_t>>();
    const std::vector<int> mask = row["loss_mask"].get<std::vector<int>>();
    size_t n = 0;
    while (n < tokens.size() && !mask[n]) ++n;
    return tok.decode(std::vector<int64_t>(tokens.begin(), tokens.begin() + static_cast<long>(n)));
  }
};

// Runs the fixture under SPADE_TEST_TMP/<name> with the given switches.
FixtureRun run_fixture(const std::string& name, const std::string& extra_corpus = "",
                       const std::string& extra_selfplay = "") {
  const fs::path root = fs::path(SPADE_TEST_TMP) / name;
  fs::remove_all(root);
  // One tiny seed program under every skill folder, so every designer prompt's target is the same.
  const fs::path seeds = root / "seeds";
  const std::string coin = read_file(std::string(SPADE_SOURCE_DIR) + "/tests/trainer/fixtures/coin_game.py");
  for (const char* skill : {"math", "logic", "spatial", "pattern", "optimization", "causal"}) {
    fs::create_directories(seeds / skill);
    std::ofstream(seeds / skill / "coin.py") << coin;
  }
  trainer::Config config =
      trainer::parse_config(run_yaml(root, seeds, extra_corpus, extra_selfplay), name + ".yaml");
  trainer::run_train(config, {true}, [](const std::string&) {});
  FixtureRun out;
  out.run = root / "dd";
  std::ifstream in(out.run / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) out.metrics.push_back(json::parse(line));
  json h5 = testutil::read_rollouts_h5((out.run / "rollouts.h5").string(), (root / "rollouts.json").string());
  // rollouts.h5 numbers steps from 1 as metrics.jsonl does (rollout t is step t + 1, trainer/selfplay.h);
  // these tests count rollouts t from 0, as the reference does, so they shift them back.
  for (json& e : h5["episodes"]) {
    e["step"] = e["step"].get<int>() - 1;
    e["rollout_id"] = e["rollout_id"].get<int>() - 1;
  }
  for (json& e : h5["environments"]) {
    e["born"] = e["born"].get<int>() - 1;
    e["closed"] = e["closed"].get<int>() - 1;
  }
  out.episodes = h5["episodes"];
  for (const json& e : h5["environments"]) out.env_table[e["id"].get<std::string>()] = e;
  return out;
}

}  // namespace

TEST(DelayedDesigner, AdmittedSamplesTrainedAtKFirstWithCentredAdvantagesAndStaleTis) {
  FixtureRun fx = run_fixture("delayed_designer");
  const fs::path& run = fx.run;
  const std::vector<json>& metrics = fx.metrics;
  ASSERT_EQ(metrics.size(), static_cast<size_t>(kSteps));
  const json& episodes = fx.episodes;
  std::map<std::string, json>& env_table = fx.env_table;

  // The premise: the designer's programs are admitted at both regenerations (measured 4 of 4 at
  // step 0 and 4 of 4 at step 2 on LibTorch 1.13 CPU).
  const auto metric = [&](int t, const char* key) { return fx.metric(t, key); };
  const int admitted0 = static_cast<int>(metric(0, "designer/admitted"));
  const int admitted_last_regen = static_cast<int>(metric(kK, "designer/admitted"));
  ASSERT_GE(admitted0, 1) << "no designer program admitted at step 0: " << metrics[0].dump();
  ASSERT_GE(admitted_last_regen, 1) << "no designer program admitted at step " << kK << ": " << metrics[kK].dump();

  // ---- 1. which step trains which generation (reference §1: trained at t + k; §5: flushed at the last rollout)
  for (int t = 0; t < kSteps; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const int expected = t == kK ? admitted0 : t == kSteps - 1 ? admitted_last_regen : 0;
    const int born = t == kK ? 0 : kK;  // the generation trained at t
    EXPECT_EQ(metric(t, "batch/designer_samples"), expected);
    if (expected > 0) {
      EXPECT_EQ(metric(t, "designer/trained_samples"), expected);
    } else {
      EXPECT_FALSE(metrics[t].contains("designer/trained_samples"));
    }
    int designer_rows = 0;
    for (const json& e : episodes) {
      if (e["step"] != t || e["role"] != "designer") continue;
      ++designer_rows;
      EXPECT_EQ(e["trained"], 1);
      EXPECT_EQ(e["rollout_id"], born) << e["env_id"];
      // Each trained designer sample is an admitted program of that generation: saved in envs/, logged in
      // /environments with that birth step, not a seed fill-in, and of the sample's skill.
      const std::string id = e["env_id"];
      EXPECT_TRUE(fs::exists(run / "envs" / (id + ".py"))) << id;
      ASSERT_TRUE(env_table.count(id)) << id;
      EXPECT_EQ(env_table[id]["born"], born) << id;
      EXPECT_EQ(env_table[id]["from_seed"], 0) << id;
      EXPECT_EQ(env_table[id]["skill"], e["skill"]) << id;
      EXPECT_EQ(env_table[id]["source"].get<std::string>(), read_file((run / "envs" / (id + ".py")).string())) << id;
    }
    EXPECT_EQ(designer_rows, expected);
  }
  // Grounding (corpus.enabled, default true): each designer prompt carries a corpus document, and the
  // program's envs/<id>.json names it (the no-corpus control below has neither).
  for (const json* row : fx.designer_rows(kK)) {
    EXPECT_NE(fx.prompt_of(*row).find("grounded in this document"), std::string::npos);
    const json meta = json::parse(read_file((run / "envs" / ((*row)["env_id"].get<std::string>() + ".json")).string()));
    EXPECT_NE(meta["doc_id"], "") << (*row)["env_id"];
  }
  // Every admitted program of both generations is trained exactly once.
  std::multiset<std::string> trained_ids;
  for (const json& e : episodes)
    if (e["role"] == "designer") trained_ids.insert(e["env_id"].get<std::string>());
  int designed = 0;
  for (const auto& [id, e] : env_table) {
    if (e["from_seed"] == 1) continue;
    ++designed;
    EXPECT_EQ(trained_ids.count(id), 1u) << id;
  }
  EXPECT_EQ(designed, admitted0 + admitted_last_regen);

  // ---- 2. designer rows first in every step's trained batch (reference §1)
  for (int t = 0; t < kSteps; ++t) {
    bool seen_agent = false;
    for (const json& e : episodes) {
      if (e["step"] != t || e["trained"] != 1) continue;
      if (e["role"] == "designer") {
        EXPECT_FALSE(seen_agent) << "step " << t << ": designer row " << e["id"] << " after an agent row";
      } else {
        seen_agent = true;
      }
    }
  }

  // ---- 3. rewards and advantages recomputed from the logged plays (reference §5)
  int nonzero_advantages = 0;
  for (int t : {kK, kSteps - 1}) {
    SCOPED_TRACE("designer update at step " + std::to_string(t));
    const int born = t == kK ? 0 : kK;
    std::vector<const json*> rows;
    for (const json& e : episodes)
      if (e["step"] == t && e["role"] == "designer") rows.push_back(&e);
    // S = min(N_actor / N_env * k, 50): actor plays per step on this generation over its environments.
    int n_env = 0, n_actor = 0;
    for (const auto& [id, e] : env_table) n_env += e["born"] == born && e["from_seed"] == 0;
    for (const json& e : episodes)
      if (e["step"] == born && e["role"] == "agent" && e["hinted"] == 0) {
        const std::string id = e["env_id"];
        n_actor += env_table.count(id) && env_table[id]["born"] == born;
      }
    EXPECT_EQ(n_actor, n_env * kPlays);
    const double scale = std::min(static_cast<double>(n_actor) / n_env * kK, 50.0);  // here kPlays * kK = 8
    EXPECT_DOUBLE_EQ(metric(t, "designer/scale"), scale);
    // blend per sample: w over the environment's whole window (every no-hint play of it: its k steps),
    // r_nohint over the plays of its birth step, r_hint over its hinted plays (0 when the hint failed).
    std::vector<double> blends;
    for (const json* d : rows) {
      const std::string id = (*d)["env_id"];
      std::vector<double> window, nohint, hinted;
      std::set<int> window_steps;
      for (const json& e : episodes) {
        if (e["env_id"] != id || e["role"] != "agent") continue;
        if (e["hinted"] == 1) {
          hinted.push_back(e["reward"].get<double>());
          continue;
        }
        window.push_back(e["reward"].get<double>());
        window_steps.insert(e["step"].get<int>());
        if (e["step"] == born) nohint.push_back(e["reward"].get<double>());
      }
      EXPECT_EQ(window_steps, (std::set<int>{born, born + 1})) << id;  // a full k = 2 step window
      const double regret = mean_of(hinted) - mean_of(nohint);
      blends.push_back(blend_by_hand(regret, mean_of(window)));
      // Its /environments row, written when the window closed (this step), carries the same regret
      // and the window's win rate (plays with reward > 0).
      double wins = 0;
      for (double r : window) wins += r > 0;
      EXPECT_EQ(env_table[id]["closed"], t) << id;
      EXPECT_EQ(env_table[id]["window_plays"], static_cast<int>(window.size())) << id;
      EXPECT_NEAR(env_table[id]["win_rate"].get<double>(), wins / window.size(), 1e-12) << id;
      EXPECT_NEAR(env_table[id]["regret"].get<double>(), regret, 1e-12) << id;
      EXPECT_NEAR((*d)["reward"].get<double>(), blends.back(), 1e-12) << id;
    }
    double blend_sum = 0;
    for (double b : blends) blend_sum += b;
    EXPECT_NEAR(metric(t, "designer/blend"), blend_sum / blends.size(), 1e-12);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<double> same_skill;
      for (size_t j = 0; j < rows.size(); ++j)
        if ((*rows[j])["skill"] == (*rows[i])["skill"]) same_skill.push_back(blends[j]);
      const double expected = (blends[i] - mean_of(same_skill)) * scale;
      EXPECT_NEAR((*rows[i])["advantage"].get<double>(), expected, 1e-9) << (*rows[i])["env_id"];
      nonzero_advantages += std::abs(expected) > 1e-6;
    }
  }
  // Not vacuous: same-skill environments had different window win rates (measured on LibTorch 1.13
  // CPU: blends 0.24/0.0/0.6/0.24 at step 2, all 8 advantages nonzero, |A| 0.96 or 1.44).
  EXPECT_GE(nonzero_advantages, 1);

  // ---- 4. truncated IS against the stale rollout logprobs (reference §5)
  // Agent-only steps train fresh samples: the trainer's logprobs are the sampler's up to float
  // summation order (one definition, policy::token_logprobs; measured 3.3e-7 nats per token),
  // so every ratio is 1 to that precision.
  double fresh_diff = 0;
  for (int t = 0; t < kK; ++t) {
    EXPECT_LT(metric(t, "train/rollout_logp_abs_diff"), 1e-5) << "step " << t;
    EXPECT_NEAR(metric(t, "train/tis"), 1.0, 1e-5) << "step " << t;
    fresh_diff = std::max(fresh_diff, metric(t, "train/rollout_logp_abs_diff"));
  }
  for (int t : {kK, kSteps - 1}) {
    SCOPED_TRACE("TIS at step " + std::to_string(t));
    std::vector<const json*> trained;
    for (const json& e : episodes)
      if (e["step"] == t && e["trained"] == 1) trained.push_back(&e);
    char dir[32];
    std::snprintf(dir, sizeof dir, "step_%06d", t);  // written after step t - 1: the update's starting weights
    const TisExpectation want = recompute_tis((run / "checkpoints" / dir).string(), trained);
    EXPECT_EQ(metric(t, "train/tokens"), static_cast<double>(want.tokens));
    EXPECT_NEAR(metric(t, "train/rollout_logp_abs_diff"), want.abs_diff_mean, 1e-5 + 1e-3 * want.abs_diff_mean);
    EXPECT_NEAR(metric(t, "train/tis"), want.tis_mean, 1e-5);
    // The designer samples were drawn t - born optimizer steps ago (2 at step 2, 1 at the flush): their
    // logprobs moved, so their ratios are not 1 and the step's mean difference is far above the
    // fresh-sample noise (measured 2.5e-3 at step 2 and 7.5e-3 at step 3, train/tis 0.9977 and 0.9942,
    // against 3.3e-7 and 1.0 on the agent-only steps).
    EXPECT_GT(want.designer_abs_diff_mean, 1e-4);
    EXPECT_GT(metric(t, "train/rollout_logp_abs_diff"), 1e-4);
    EXPECT_GT(metric(t, "train/rollout_logp_abs_diff"), 100 * fresh_diff);
  }
}

// selfplay.designer_train: false (the frozen-designer control, SPADE §7): the same designer samples are
// generated, scored and logged at the same steps as above, with trained = 0, and none enters an update.
TEST(DelayedDesigner, FrozenDesignerScoresAndLogsItsSamplesButNeverTrainsThem) {
  const FixtureRun fx = run_fixture("frozen_designer", "", "designer_train: false, ");
  ASSERT_EQ(fx.metrics.size(), static_cast<size_t>(kSteps));
  const int admitted0 = fx.admitted(0), admitted2 = fx.admitted(kK);  // the premise, as above
  ASSERT_TRUE(admitted0 >= 1 && admitted2 >= 1) << fx.metrics[0].dump() << "\n" << fx.metrics[kK].dump();
  for (int t = 0; t < kSteps; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const int scored = t == kK ? admitted0 : t == kSteps - 1 ? admitted2 : 0;
    EXPECT_EQ(fx.metric(t, "batch/designer_samples"), 0);
    if (scored > 0) {
      EXPECT_EQ(fx.metric(t, "designer/scored_samples"), scored);
      EXPECT_EQ(fx.metric(t, "designer/trained_samples"), 0);
      EXPECT_GE(fx.metric(t, "designer/blend"), 0);  // the blend is still computed
    }
    const std::vector<const json*> rows = fx.designer_rows(t);
    EXPECT_EQ(rows.size(), static_cast<size_t>(scored));
    for (const json* row : rows) EXPECT_EQ((*row)["trained"], 0) << (*row)["env_id"];
    // Only fresh agent samples are trained: every TIS ratio is 1 up to float summation order
    // (3.3e-7 nats per token measured above), where the trained designer's stale samples move it.
    EXPECT_LT(fx.metric(t, "train/rollout_logp_abs_diff"), 1e-5);
    EXPECT_NEAR(fx.metric(t, "train/tis"), 1.0, 1e-5);
  }
}

// selfplay.designer_delay: 1 with k = 2: each generation's designer samples are trained one step after
// it (rollouts 1 and 3), scored on that one step's plays: the anchor's win rate w is the mean of the
// environment's no-hint plays at its birth step only.
TEST(DelayedDesigner, DesignerDelayOneTrainsAfterOneStepOnThatStepsWindow) {
  const FixtureRun fx = run_fixture("designer_delay_one", "", "designer_delay: 1, ");
  ASSERT_EQ(fx.metrics.size(), static_cast<size_t>(kSteps));
  const int admitted0 = fx.admitted(0), admitted2 = fx.admitted(kK);  // the premise, as above
  ASSERT_TRUE(admitted0 >= 1 && admitted2 >= 1) << fx.metrics[0].dump() << "\n" << fx.metrics[kK].dump();
  for (int t = 0; t < kSteps; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const int trained = t == 1 ? admitted0 : t == 3 ? admitted2 : 0;
    const int born = t - 1;
    EXPECT_EQ(fx.metric(t, "batch/designer_samples"), trained);
    const std::vector<const json*> rows = fx.designer_rows(t);
    EXPECT_EQ(rows.size(), static_cast<size_t>(trained));
    for (const json* d : rows) {
      const std::string id = (*d)["env_id"];
      EXPECT_EQ((*d)["trained"], 1) << id;
      EXPECT_EQ((*d)["rollout_id"], born) << id;
      std::vector<double> window, hinted;
      for (const json& e : fx.episodes) {
        if (e["env_id"] != id || e["role"] != "agent") continue;
        if (e["hinted"] == 1) {
          hinted.push_back(e["reward"].get<double>());
        } else if (e["step"] == born) {
          window.push_back(e["reward"].get<double>());
        }
      }
      ASSERT_EQ(window.size(), static_cast<size_t>(kPlays)) << id;
      // r_nohint and the window are the same plays here (the birth step's).
      EXPECT_NEAR((*d)["reward"].get<double>(), blend_by_hand(mean_of(hinted) - mean_of(window), mean_of(window)), 1e-12)
          << id;
    }
  }
}

// corpus.enabled: false (the no-grounding control, SPADE §7 Table 3): no designer prompt carries a
// document, in the cold start's examples or in self-play, and no document is drawn for an attempt.
TEST(DelayedDesigner, NoCorpusPromptsCarryNoDocument) {
  const FixtureRun fx = run_fixture("no_corpus", "enabled: false, ");
  ASSERT_EQ(fx.metrics.size(), static_cast<size_t>(kSteps));
  std::vector<const json*> rows = fx.designer_rows(kK);
  ASSERT_GE(rows.size(), 1u) << "no designer sample trained at step " << kK;
  for (const json* row : rows) {
    const std::string prompt = fx.prompt_of(*row);
    EXPECT_EQ(prompt.find("Document:"), std::string::npos) << prompt;
    EXPECT_EQ(prompt.find("grounded"), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("as a Python environment."), std::string::npos) << prompt;
  }
  int programs = 0;
  for (const auto& entry : fs::directory_iterator(fx.run / "envs")) {
    if (entry.path().extension() != ".json") continue;
    ++programs;
    EXPECT_EQ(json::parse(read_file(entry.path().string()))["doc_id"], "") << entry.path();
  }
  EXPECT_GE(programs, 1);
}
