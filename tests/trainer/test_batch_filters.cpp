// The optional batch filters (reward.filter_zero_std_groups, reward.mask_truncated) and the
// learnable share (trainer/batch_filters.h). Expected values of the unit tests are worked out by hand
// in the comments; the zero-std decision is cross-checked against reward::group_advantages. The run
// tests recompute the filter rule from the rollouts.h5 of real tiny runs (1 and 2 ranks) and compare
// with the trained flags and metrics the loop logged.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "reward/advantages.h"
#include "tests/testing/tiny_policy.h"
#include "tests/trainer/spawn_helpers.h"
#include "tests/trainer/tiny_run.h"
#include "trainer/batch_filters.h"
#include "trainer/config.h"
#include "trainer/grpo_update.h"
#include "trainer/train.h"

using namespace spade;
using namespace spade::trainer;

namespace {

// Nine plays of four environments, interleaved:
//   a = [1, 0, 1]     (plays 0, 2, 5)  mixed rewards          truncated: play 2
//   b = [0, 0]        (plays 1, 6)     all equal -> zero std
//   c = [0.5]         (play 3)         alone -> zero std      truncated: play 3
//   d = [1, 1, 1]     (plays 4, 7, 8)  all equal -> zero std  truncated: play 8
const std::vector<double> kRewards = {1, 0, 0, 0.5, 1, 1, 0, 1, 1};
const std::vector<std::string> kGroups = {"a", "b", "a", "c", "d", "a", "b", "d", "d"};
const std::vector<bool> kTruncated = {false, false, true, true, false, false, false, false, true};

std::vector<size_t> kept_of(const std::vector<bool>& keep) {
  std::vector<size_t> out;
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) out.push_back(i);
  return out;
}

}  // namespace

TEST(BatchFilters, StatisticsAreLoggedWhateverTheOptions) {
  // 4 groups, 3 of them zero-std (b, c, d) -> 0.75; 3 of 9 plays truncated -> 1/3.
  const BatchFilterResult r = filter_agent_plays(kRewards, kGroups, kTruncated, {});
  EXPECT_EQ(r.groups, 4);
  EXPECT_EQ(r.zero_std_groups, 3);
  EXPECT_DOUBLE_EQ(r.frac_zero_std(), 0.75);
  EXPECT_EQ(r.plays, 9);
  EXPECT_EQ(r.truncated_plays, 3);
  EXPECT_DOUBLE_EQ(r.truncated_frac(), 1.0 / 3.0);
  // Both filters off (SPADE's default): every play trains.
  EXPECT_EQ(r.kept, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(r.dropped, 0);
}

TEST(BatchFilters, ZeroStdGroupsLeaveWholeGroups) {
  // Only group a has reward spread: its plays 0, 2, 5 stay (play 2 is truncated but that filter is off).
  const BatchFilterResult r = filter_agent_plays(kRewards, kGroups, kTruncated, {true, false});
  EXPECT_EQ(r.kept, (std::vector<size_t>{0, 2, 5}));
  EXPECT_EQ(kept_of(r.keep), r.kept);
  EXPECT_EQ(r.dropped, 6);
  EXPECT_DOUBLE_EQ(r.frac_zero_std(), 0.75);  // statistics unchanged by the option
}

TEST(BatchFilters, TruncatedPlaysLeaveOneByOne) {
  // Plays 2, 3 and 8 are truncated; the rest stay, zero-std groups included.
  const BatchFilterResult r = filter_agent_plays(kRewards, kGroups, kTruncated, {false, true});
  EXPECT_EQ(r.kept, (std::vector<size_t>{0, 1, 4, 5, 6, 7}));
  EXPECT_EQ(r.dropped, 3);
}

TEST(BatchFilters, BothFiltersAndAllFiltered) {
  // Group a minus its truncated play 2.
  const BatchFilterResult both = filter_agent_plays(kRewards, kGroups, kTruncated, {true, true});
  EXPECT_EQ(both.kept, (std::vector<size_t>{0, 5}));
  EXPECT_EQ(both.dropped, 7);
  // Every group all-equal: nothing is left to train, every group counted zero-std.
  const BatchFilterResult none = filter_agent_plays({0, 0, 1, 1}, {"x", "x", "y", "y"}, {false, false, false, false},
                                                    {true, false});
  EXPECT_TRUE(none.kept.empty());
  EXPECT_EQ(none.dropped, 4);
  EXPECT_DOUBLE_EQ(none.frac_zero_std(), 1.0);
  // No plays at all: zeros, no division by zero.
  const BatchFilterResult empty = filter_agent_plays({}, {}, {}, {true, true});
  EXPECT_EQ(empty.groups, 0);
  EXPECT_EQ(empty.frac_zero_std(), 0.0);
  EXPECT_EQ(empty.truncated_frac(), 0.0);
  EXPECT_THROW(filter_agent_plays({1, 0}, {"a"}, {false, false}, {}), Error);
  EXPECT_THROW(filter_agent_plays({1, 0}, {"a", "a"}, {false}, {}), Error);
}

TEST(BatchFilters, ZeroStdIsExactlyAllZeroAdvantages) {
  // The filter drops exactly the groups reward::group_advantages scores all-zero (a nearly equal
  // group is not zero-std: its z-scores are +-0.707). Checked group by group on the fixture plus
  // a nearly equal group e = [0.3, 0.3 + 1e-12].
  std::vector<double> rewards = kRewards;
  std::vector<std::string> groups = kGroups;
  std::vector<bool> truncated = kTruncated;
  for (double v : {0.3, 0.3 + 1e-12}) {
    rewards.push_back(v);
    groups.push_back("e");
    truncated.push_back(false);
  }
  const BatchFilterResult r = filter_agent_plays(rewards, groups, truncated, {true, false});
  std::map<std::string, std::vector<double>> by_group;
  for (size_t i = 0; i < rewards.size(); ++i) by_group[groups[i]].push_back(rewards[i]);
  for (size_t i = 0; i < rewards.size(); ++i) {
    bool all_zero = true;
    for (double a : reward::group_advantages(by_group[groups[i]], reward::kActorAdvantageEps)) all_zero &= a == 0.0;
    EXPECT_EQ(r.keep[i], !all_zero) << "play " << i << " of group " << groups[i];
  }
  EXPECT_TRUE(r.keep[9] && r.keep[10]);
  EXPECT_EQ(r.zero_std_groups, 3);  // b, c, d; not e
}

TEST(BatchFilters, BlanksKeepPositionsThenLeave) {
  // [designer | agent 0, agent 1, agent 2], agent 1 dropped: the copy has the same 4 positions (so
  // batch_share deals the same whole groups), position 2 blank; remove_empty leaves 3 samples in order.
  std::vector<rollout::Sample> batch(4);
  batch[0].role = rollout::Role::Designer;
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].append_context({1, 2});
    batch[i].append_sampled({static_cast<int64_t>(10 + i)}, {-0.5f});
    batch[i].env_id = "env" + std::to_string(i);
  }
  std::vector<rollout::Sample> share = blank_dropped(batch, 1, {true, false, true});
  ASSERT_EQ(share.size(), 4u);
  EXPECT_EQ(share[0].tokens, batch[0].tokens);
  EXPECT_EQ(share[1].tokens, batch[1].tokens);
  EXPECT_TRUE(share[2].tokens.empty());
  EXPECT_EQ(share[2].num_trainable(), 0);
  EXPECT_EQ(share[2].env_id, "env2");
  EXPECT_EQ(share[3].loss_mask, batch[3].loss_mask);
  remove_empty(share);
  ASSERT_EQ(share.size(), 3u);
  EXPECT_EQ(share[0].role, rollout::Role::Designer);
  EXPECT_EQ(share[1].tokens.back(), 11);
  EXPECT_EQ(share[2].tokens.back(), 13);
  EXPECT_THROW(blank_dropped(batch, 2, {true, false, true}), Error);  // 2 + 3 != 4
}

TEST(BatchFilters, DroppedPlaysCountInNoNormaliser) {
  // seq-mean-token-mean: loss = sum over sequences of (token mean of -A * ratio) / number of sequences.
  // Sequences with A = 0 add no gradient, only to the count. Batch [A = 1, A = 0, A = 0]: the
  // normaliser is 3; after filtering the two zero-advantage plays it is 1, so the gradient, and with
  // plain SGD (no clipping) the parameter change, is exactly 3 times larger.
  auto make_samples = [] {
    std::vector<rollout::Sample> s(3);
    for (int i = 0; i < 3; ++i) {
      s[i].append_context({5, 6, static_cast<int64_t>(7 + i)});
      s[i].append_sampled({20, 21, static_cast<int64_t>(22 + i)}, {-1.0f, -1.0f, -1.0f});
      s[i].advantage = i == 0 ? 1.0 : 0.0;
    }
    return s;
  };
  auto delta = [](const std::vector<rollout::Sample>& train) {
    fixtures::TinyPolicy p = fixtures::make_tiny_policy(11);
    std::vector<torch::Tensor> before;
    for (auto& prm : p.model->parameters()) before.push_back(prm.detach().clone());
    torch::optim::SGD opt(p.model->parameters(), torch::optim::SGDOptions(1.0));  // delta = -grad
    UpdateOptions o;
    o.loss.agg_mode = AggMode::SeqMeanTokenMean;
    o.grad_clip = 0.0;  // no clipping: the step is linear in the gradient
    const UpdateStats st = grpo_update(p.model, opt, train, o);
    std::vector<torch::Tensor> d;
    const auto params = p.model->parameters();
    for (size_t i = 0; i < params.size(); ++i) d.push_back(params[i].detach() - before[i]);
    return std::make_pair(d, st.num_samples);
  };
  const std::vector<rollout::Sample> all = make_samples();
  // Plays 1 and 2 truncated (and, with advantage 0, inert in the loss): mask_truncated drops them.
  const BatchFilterResult f = filter_agent_plays({1, 0, 0}, {"a", "a", "a"}, {false, true, true}, {false, true});
  ASSERT_EQ(f.kept, (std::vector<size_t>{0}));
  std::vector<rollout::Sample> share = blank_dropped(all, 0, f.keep);
  remove_empty(share);
  const auto [d_all, n_all] = delta(all);
  const auto [d_kept, n_kept] = delta(share);
  EXPECT_EQ(n_all, 3);
  EXPECT_EQ(n_kept, 1);
  double moved = 0;
  for (size_t i = 0; i < d_all.size(); ++i) {
    moved += d_all[i].abs().sum().item<double>();
    EXPECT_TRUE(torch::allclose(d_kept[i], 3.0 * d_all[i], 1e-4, 1e-6)) << "parameter " << i;
  }
  EXPECT_GT(moved, 0.0);
  // Everything filtered: an empty batch trains nothing and reports zeros (no NaN, no step).
  std::vector<rollout::Sample> nothing = blank_dropped(all, 0, {false, false, false});
  remove_empty(nothing);
  const auto [d_none, n_none] = delta(nothing);
  EXPECT_EQ(n_none, 0);
  for (const torch::Tensor& d : d_none) EXPECT_EQ(d.abs().sum().item<double>(), 0.0);
}

TEST(LearnableShare, BandIsInclusive) {
  // SPADE Fig. 8 band [0.2, 0.8]. Rates 0, 0.19, 0.2, 0.5, 0.8, 0.81, 1, 1/5, 4/5: in band are
  // 0.2, 0.5, 0.8, 1/5 and 4/5 -> 5 of 9 (1/5 and 4/5 as wins / plays hit the ends exactly).
  EXPECT_DOUBLE_EQ(learnable_share({0.0, 0.19, 0.2, 0.5, 0.8, 0.81, 1.0, 1.0 / 5.0, 4.0 / 5.0}), 5.0 / 9.0);
  // Eight plays per environment (reference §5): 1/8 out, 2/8 in, 6/8 in, 7/8 out -> 2 of 4.
  EXPECT_DOUBLE_EQ(learnable_share({1.0 / 8, 2.0 / 8, 6.0 / 8, 7.0 / 8}), 0.5);
  EXPECT_EQ(learnable_share({}), 0.0);  // no designed environment
  EXPECT_DOUBLE_EQ(learnable_share({0.3, 0.9}, 0.9, 1.0), 0.5);  // another band, end included
  EXPECT_THROW(learnable_share({0.5}, 0.8, 0.2), Error);
}

namespace {

namespace fs = std::filesystem;

// The tiny run config of test_train.cpp with seed environments filling the slots (a random model
// writes no valid program): 2 environments x 2 plays per step, 2 steps.
std::string filtered_tiny_yaml(const fs::path& root, int threads) {
  return fixtures::tiny_run_yaml(root.string(), threads, /*max_attempts=*/1, "fill_with_seeds: true,") +
         "distributed: {timeout_s: 300}\n";
}
const std::vector<std::string> kFilterOverrides = {"reward.filter_zero_std_groups=true", "reward.mask_truncated=true",
                                                   "reward.scale_by_std=false"};

// Checks a finished filtered run under root/t: its logs agree with the filter rule recomputed from
// rollouts.h5 (read back with h5py): an agent play is trained exactly when it is not truncated and
// its environment's rewards at that step are not all equal; each step's metrics count the same.
void expect_filtered_logs(const fs::path& root) {
  const fs::path run = root / "t";
  std::map<int64_t, nlohmann::json> metrics;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(metrics.count(j["step"].get<int64_t>()), 0u) << "one metrics line per step: " << line;
    metrics[j["step"].get<int64_t>()] = j;
  }
  ASSERT_EQ(metrics.size(), 2u);
  const nlohmann::json h5 = testutil::read_rollouts_h5((run / "rollouts.h5").string(), (root / "h5.json").string());
  for (const auto& [step, m] : metrics) {
    // This step's agent plays (no-hint), grouped by environment.
    std::map<std::string, std::vector<nlohmann::json>> by_env;
    for (const nlohmann::json& e : h5["episodes"])
      if (e["step"] == step && e["role"] == "agent" && e["hinted"] == 0) by_env[e["env_id"]].push_back(e);
    ASSERT_EQ(by_env.size(), 2u) << "step " << step;
    int64_t plays = 0, truncated = 0, zero_std = 0, untrained = 0;
    for (const auto& [env, rows] : by_env) {
      std::set<double> distinct;
      for (const nlohmann::json& e : rows) distinct.insert(e["reward"].get<double>());
      const bool all_equal = distinct.size() == 1;
      zero_std += all_equal;
      for (const nlohmann::json& e : rows) {
        ++plays;
        truncated += e["truncated"].get<int>();
        const bool dropped = all_equal || e["truncated"] == 1;
        EXPECT_EQ(e["trained"].get<int>(), dropped ? 0 : 1) << "step " << step << " env " << env;
        untrained += dropped;
      }
    }
    EXPECT_EQ(plays, 4);
    EXPECT_EQ(m["batch/agent_samples"].get<double>(), static_cast<double>(plays - untrained)) << m;
    EXPECT_EQ(m["batch/agent_filtered"].get<double>(), static_cast<double>(untrained)) << m;
    EXPECT_DOUBLE_EQ(m["reward/frac_reward_zero_std"].get<double>(), zero_std / 2.0) << m;
    EXPECT_DOUBLE_EQ(m["episode/truncated_frac"].get<double>(), truncated / 4.0) << m;
    // Every environment is a seed fill-in: no designed one, so no learnable share.
    EXPECT_EQ(m["designer/learnable_share"].get<double>(), 0.0) << m;
    // Nothing left to train (and no designer sample: nothing was admitted): no tokens, no NaN.
    if (untrained == plays) {
      EXPECT_EQ(m["train/tokens"].get<double>(), 0.0) << m;
    }
    EXPECT_FALSE(std::isnan(m["actor/grad_norm"].get<double>())) << m;
  }
}

}  // namespace

// `spade train` in process with both filters on and Dr.GRPO advantages: the run finishes (a step
// whose plays are all filtered trains nothing and reports zeros) and logs every play.
TEST(BatchFiltersRun, FilteredTinyRunLogsEveryPlay) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "batch_filters_run";
  fs::remove_all(root);
  fs::create_directories(root);  // run.out_dir
  const Config config = parse_config(filtered_tiny_yaml(root, /*threads=*/2), "tiny.yaml", kFilterOverrides);
  run_train(config, {true}, [](const std::string&) {});
  expect_filtered_logs(root);
}

// The same with `spade train --nproc 2` (Gloo): each rank drops the filtered plays from its own
// share of whole groups, a rank left with nothing still joins the collectives, and only rank 0 logs.
TEST(BatchFiltersRun, FilteredTwoRankRunLogsEveryPlay) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "batch_filters_dp";
  fs::remove_all(root);
  fs::create_directories(root);
  write_file_atomic((root / "tiny.yaml").string(), filtered_tiny_yaml(root, /*threads=*/1));
  std::vector<std::string> args = {SPADE_BIN, "train", "--nproc", "2", "--config", (root / "tiny.yaml").string()};
  for (const std::string& o : kFilterOverrides) args.insert(args.end(), {"--set", o});
  const std::string log_path = (root / "out.log").string();
  const pid_t pid = testutil::spawn_logged(args, log_path);
  ASSERT_GT(pid, 0);
  const int rc = testutil::wait_exit(pid);
  ASSERT_EQ(rc, 0) << read_file(log_path);
  expect_filtered_logs(root);
}
