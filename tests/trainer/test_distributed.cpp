// Data parallel (issue 5): the torchrun / SLURM environment, bucket planning, and the acceptance test
// "a 2-rank Gloo run on CPU produces the same weights (within tolerance) as a 1-rank run with the same
// global batch after 3 optimizer steps" (ranks are real processes: tests/trainer/dp_worker.cpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/trainer/tiny_run.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "trainer/distributed.h"
#include "trainer/launch_local.h"
#include "trainer/selfplay_dp.h"
#include "trainer/optimizer_shards.h"
#include "trainer/sharded_optimizer.h"
#include "trainer/sharding.h"
#include "tests/testing/random_model.h"

extern char** environ;

using namespace spade;
using namespace spade::trainer;
namespace fs = std::filesystem;

namespace {

EnvLookup lookup(const std::map<std::string, std::string>& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// The error message parse_distributed_env throws for `vars` ("" when it does not throw).
std::string env_error(const std::map<std::string, std::string>& vars) {
  try {
    parse_distributed_env(lookup(vars));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Starts `args` with this process's environment minus the launcher variables, plus `extra`.
pid_t spawn_with_env(std::vector<std::string> args, const std::map<std::string, std::string>& extra,
                     const std::string& log_path) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
        key == "MASTER_ADDR" || key == "MASTER_PORT" || key.rfind("SLURM_", 0) == 0 ||
        key.rfind("TORCHELASTIC_", 0) == 0)
      continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs `world` ranks of the worker (world 1: no launcher variables at all); returns each rank's JSON.
std::vector<nlohmann::json> run_workers(int world, const std::string& agg, int64_t bucket_bytes,
                                        const fs::path& dir, const std::vector<std::string>& extra_args = {}) {
  fs::create_directories(dir);
  const int port = free_local_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env;
    if (world > 1)
      env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)}, {"LOCAL_RANK", std::to_string(r)},
             {"LOCAL_WORLD_SIZE", std::to_string(world)}, {"MASTER_ADDR", "127.0.0.1"},
             {"MASTER_PORT", std::to_string(port)}};
    const std::string out = (dir / ("rank" + std::to_string(r) + ".json")).string();
    fs::remove(out);
    std::vector<std::string> args{SPADE_DP_WORKER, out, agg, std::to_string(bucket_bytes)};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pids.push_back(spawn_with_env(args, env,
                                  (dir / ("rank" + std::to_string(r) + ".log")).string()));
    EXPECT_GT(pids.back(), 0);
  }
  std::vector<nlohmann::json> results;
  for (int r = 0; r < world; ++r) {
    const int rc = wait_exit(pids[r]);
    const std::string log = read_file((dir / ("rank" + std::to_string(r) + ".log")).string());
    EXPECT_EQ(rc, 0) << "rank " << r << " log:\n" << log;
    if (rc != 0) return {};
    results.push_back(nlohmann::json::parse(read_file((dir / ("rank" + std::to_string(r) + ".json")).string())));
  }
  return results;
}

double max_abs_diff(const nlohmann::json& a, const nlohmann::json& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, std::abs(a[i].get<double>() - b[i].get<double>()));
  return m;
}

// The acceptance check for one aggregation mode.
void expect_two_ranks_match_one(const std::string& agg) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / ("dp_" + agg);
  // 2-rank run with 4 KiB buckets (the 20k-parameter model then needs ~20 all-reduces), 1-rank run.
  const std::vector<nlohmann::json> two = run_workers(2, agg, 4096, dir / "two");
  const std::vector<nlohmann::json> one = run_workers(1, agg, 4096, dir / "one");
  ASSERT_EQ(two.size(), 2u);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(two[0]["backend"], "gloo");
  EXPECT_EQ(one[0]["backend"], "none");
  EXPECT_EQ(one[0]["world_size"], 1);

  // Rank 1 started from scrambled weights: after the broadcast both ranks hold rank 0's, which are
  // the single process's (same fixture seed).
  EXPECT_EQ(max_abs_diff(two[1]["initial"], two[0]["initial"]), 0.0);
  EXPECT_EQ(max_abs_diff(two[0]["initial"], one[0]["initial"]), 0.0);
  // Replicas stay bitwise equal: every rank applies the same all-reduced gradient (Gloo's ring
  // all-reduce hands every rank the same sums) with the same optimizer state.
  EXPECT_EQ(max_abs_diff(two[1]["params"], two[0]["params"]), 0.0);

  // Whole-batch statistics on every rank equal the single process's: counts exactly, the loss and
  // the (global, pre-clip) gradient norm up to float32 summation order.
  for (int s = 0; s < 3; ++s) {
    const nlohmann::json& a = two[0]["steps"][s];
    const nlohmann::json& b = one[0]["steps"][s];
    EXPECT_EQ(a["num_samples"], 12);
    EXPECT_EQ(a["num_samples"], b["num_samples"]) << "step " << s;
    EXPECT_EQ(a["num_tokens"], b["num_tokens"]) << "step " << s;
    EXPECT_NEAR(a["pg_loss"].get<double>(), b["pg_loss"].get<double>(), 1e-5) << "step " << s;
    EXPECT_NEAR(a["grad_norm"].get<double>(), b["grad_norm"].get<double>(),
                1e-5 * b["grad_norm"].get<double>()) << "step " << s;
    EXPECT_NEAR(a["tis_mean"].get<double>(), b["tis_mean"].get<double>(), 1e-5) << "step " << s;
    EXPECT_EQ(two[1]["steps"][s]["pg_loss"], a["pg_loss"]) << "step " << s;
  }
  // The pre-clip norm exceeds the 0.5 cap at the first step, so the clip (global) is active.
  EXPECT_GT(one[0]["steps"][0]["grad_norm"].get<double>(), 0.5);

  // The weights after 3 steps. Tolerance 1e-4 (1% of one lr=1e-2 step): the two runs differ only in
  // the order of float32 sums (per-micro-batch gradient accumulation, then a 2-way sum across ranks;
  // relative error ~1e-7), which AdamW's m / sqrt(v) amplifies for the few weights whose gradient is
  // itself near the summation noise (seen: 1.0e-5 to 2.6e-5 over the four aggregations, here and on
  // CI, which failed the earlier 2e-5); a run with a per-rank normaliser or a per-rank clip moves
  // weights by O(lr) = 1e-2 differently, 100x the tolerance.
  const double diff = max_abs_diff(two[0]["params"], one[0]["params"]);
  const double moved = max_abs_diff(one[0]["params"], one[0]["initial"]);
  std::printf("[%s] max |w_2rank - w_1rank| = %.3g, max |w_1rank - w_0| = %.3g\n", agg.c_str(), diff, moved);
  EXPECT_LE(diff, 1e-4);
  EXPECT_GE(moved, 1e-2);  // the 3 steps did move the weights: ~lr per step
}

// Sharded data parallel (ZeRO-1 "optimizer" / ZeRO-2 "gradients", trainer/sharded_optimizer.h) at
// 2 and 3 ranks against an independent reference: the 1-rank run with torch::optim::AdamW (sharding
// none) on the same global batch, 3 optimizer steps with the global clip active (dp_worker: clip 0.5).
// kl: with a KL penalty against a frozen reference (dp_worker KL), which ZeRO-3 shards too.
void expect_sharded_matches_one_rank(const std::string& sharding, const std::string& family, bool kl = false) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / ("zero_" + sharding + "_" + family + (kl ? "_kl" : ""));
  const std::vector<std::string> kl_args = kl ? std::vector<std::string>{"3", "-", "-", "kl"} : std::vector<std::string>{};
  auto args = [&](const std::string& mode) {
    std::vector<std::string> a{mode, family};
    a.insert(a.end(), kl_args.begin(), kl_args.end());
    return a;
  };
  const std::vector<nlohmann::json> one = run_workers(1, "token_mean", 4096, dir / "one", args("none"));
  ASSERT_EQ(one.size(), 1u);
  const int64_t total = one[0]["total_numel"].get<int64_t>();
  const int64_t full_state = one[0]["state_bytes"].get<int64_t>();
  // torch's AdamW holds float32 exp_avg and exp_avg_sq for every parameter (each had a gradient).
  EXPECT_EQ(full_state, 8 * total);
  for (int s = 0; s < 3; ++s) {  // the clip acts at every step: the sharded clip must be the global one
    EXPECT_GT(one[0]["steps"][s]["grad_norm"].get<double>(), 0.5) << "step " << s;
    if (kl) EXPECT_GT(one[0]["steps"][s]["kl"].get<double>(), 1e-3) << "step " << s;  // the penalty is in the loss
  }
  // ZeRO-3 also at one rank (one chunk per unit: the gather/recompute path without a group).
  const std::vector<int> worlds = sharding == "full" ? std::vector<int>{1, 2, 3} : std::vector<int>{2, 3};
  for (int world : worlds) {
    if (world == 3) {
      ASSERT_NE(total % 3, 0) << "3 ranks must not divide the " << total << " parameters";
    }
    const std::vector<nlohmann::json> ranks =
        run_workers(world, "token_mean", 4096, dir / ("w" + std::to_string(world)), args(sharding));
    ASSERT_EQ(ranks.size(), static_cast<size_t>(world));
    int64_t state_sum = 0, grad_sum = 0;
    for (int r = 0; r < world; ++r) {
      const nlohmann::json& w = ranks[r];
      // The all-gather hands every rank the same full parameters.
      EXPECT_EQ(max_abs_diff(w["params"], ranks[0]["params"]), 0.0) << "rank " << r;
      for (int s = 0; s < 3; ++s) {  // the reported norm is the unsharded global one, as is the KL
        EXPECT_NEAR(w["steps"][s]["grad_norm"].get<double>(), one[0]["steps"][s]["grad_norm"].get<double>(),
                    1e-5 * one[0]["steps"][s]["grad_norm"].get<double>()) << "rank " << r << " step " << s;
        EXPECT_NEAR(w["steps"][s]["kl"].get<double>(), one[0]["steps"][s]["kl"].get<double>(),
                    1e-5 * std::abs(one[0]["steps"][s]["kl"].get<double>()) + 1e-9) << "rank " << r << " step " << s;
      }
      // The frozen reference a rank keeps: all of it, or under ZeRO-3 about 1/N (its shard, as the
      // parameters': the padding of each unit's last chunk at most).
      if (kl) {
        const int64_t ref = w["reference_bytes"].get<int64_t>();
        if (sharding == "full")
          EXPECT_EQ(ref, w["param_bytes"].get<int64_t>()) << "rank " << r;
        else
          EXPECT_EQ(ref, 4 * one[0]["total_numel"].get<int64_t>()) << "rank " << r;
        if (r == 0) std::printf("[%s %s + KL, %d ranks] reference bytes %lld of %lld\n", sharding.c_str(), family.c_str(),
                                world, static_cast<long long>(ref), static_cast<long long>(4 * total));
      }
      // About 1/N of the unsharded optimizer state: within the padding of the last shard (ZeRO-3: of
      // each unit's, the root and every layer: fewer than N elements each).
      const int64_t state = w["state_bytes"].get<int64_t>();
      const double units = sharding == "full" ? 1.0 + w["num_layers"].get<double>() : 1.0;
      EXPECT_LE(std::abs(static_cast<double>(state) - static_cast<double>(full_state) / world), 8.0 * world * units)
          << "rank " << r << " of " << world << ": " << state << " bytes of " << full_state;
      // The parameters a rank keeps: all of them (replicated), or under ZeRO-3 its shard (4 bytes per
      // owned element: half its moments' bytes), plus at most the root, one layer and the next layer's
      // prefetch gathered at once: on this 2-layer model that is all of it, padded to N chunks per unit
      // (the bound without the prefetch, root and one layer only, is checked in FullShardingMatches
      // OneRankDense).
      const int64_t params = w["param_bytes"].get<int64_t>();
      if (sharding == "full") {
        EXPECT_EQ(2 * params, state) << "rank " << r;
        const int64_t gathered = w["peak_gathered_bytes"].get<int64_t>();
        EXPECT_GT(gathered, 0) << "rank " << r;
        EXPECT_LE(gathered, 4 * (total + 3 * world)) << "rank " << r << ": " << gathered << " bytes gathered at once";
        if (r == 0) std::printf("[full %s, %d ranks] parameter shard %lld bytes, peak gathered %lld, of %lld\n",
                                family.c_str(), world, static_cast<long long>(params),
                                static_cast<long long>(gathered), static_cast<long long>(4 * total));
        // The layer prefetch served gathers (each forward's layers after the first, each backward's
        // after the last).
        EXPECT_GT(w["prefetched_gathers"].get<int64_t>(), 0) << "rank " << r;
      } else {
        EXPECT_EQ(params, 4 * total) << "rank " << r;
      }
      // What a rank holds after the reduction is its shard's gradient (4 bytes per owned element),
      // and no parameter keeps a full .grad.
      EXPECT_EQ(2 * w["grad_bytes"].get<int64_t>(), state) << "rank " << r;
      EXPECT_TRUE(w["grads_released"].get<bool>()) << "rank " << r;
      // ZeRO-2 reduces bucket by bucket during backward (4096-byte buckets here, the largest tensor
      // alone): a rank never holds the whole model's full gradients at once. ZeRO-1 reduces after it.
      const int64_t peak = w["peak_full_grad_bytes"].get<int64_t>();
      if (sharding == "gradients") {
        EXPECT_GT(peak, 0) << "rank " << r;
        EXPECT_LT(peak, 4 * total / 2) << "rank " << r << ": " << peak << " bytes of full .grad at once";
      } else {
        EXPECT_EQ(peak, 0) << "rank " << r;
      }
      if (r == 0) std::printf("[%s %s, %d ranks] peak full .grad bytes %lld of %lld\n", sharding.c_str(), family.c_str(),
                              world, static_cast<long long>(peak), static_cast<long long>(4 * total));
      state_sum += state;
      grad_sum += w["grad_bytes"].get<int64_t>();
    }
    EXPECT_EQ(state_sum, full_state);  // the shards partition the state exactly
    EXPECT_EQ(grad_sum, 4 * total);
    // Weights after 3 steps: tolerance as in expect_two_ranks_match_one (float summation order only).
    const double diff = max_abs_diff(ranks[0]["params"], one[0]["params"]);
    const double moved = max_abs_diff(one[0]["params"], one[0]["initial"]);
    std::printf("[%s %s, %d ranks] max |w_sharded - w_1rank| = %.3g, moved %.3g\n", sharding.c_str(),
                family.c_str(), world, diff, moved);
    // With the KL penalty the N-rank runs differ from the 1-rank one by up to 2.2e-4 (measured, ZeRO-1
    // with a whole reference as well as ZeRO-3 with a sharded one: grad norms and KL values still agree
    // to 1e-5 relative): AdamW divides each update by sqrt(v), so a parameter whose policy and KL
    // gradients nearly cancel moves by a sizeable fraction of lr on float-summation noise. How exactly
    // the sharded reference matches a whole one is checked at equal world size (below).
    EXPECT_LE(diff, kl ? 5e-4 : 1e-4) << world << " ranks";
    EXPECT_GE(moved, 1e-2);
  }
}

}  // namespace

TEST(DistributedSharded, OptimizerShardingMatchesOneRankDense) { expect_sharded_matches_one_rank("optimizer", "qwen3"); }
TEST(DistributedSharded, GradientShardingMatchesOneRankDense) { expect_sharded_matches_one_rank("gradients", "qwen3"); }
TEST(DistributedSharded, OptimizerShardingMatchesOneRankMoe) { expect_sharded_matches_one_rank("optimizer", "qwen3_moe"); }
TEST(DistributedSharded, GradientShardingMatchesOneRankMoe) { expect_sharded_matches_one_rank("gradients", "qwen3_moe"); }
TEST(DistributedSharded, FullShardingMatchesOneRankDense) {
  expect_sharded_matches_one_rank("full", "qwen3");
  // The layer prefetch changes when a gather travels, not what it brings: without it, 3 ranks end with
  // bit-identical weights (and no gather was served by a prefetch).
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "zero_full_qwen3";
  const std::vector<nlohmann::json> off =
      run_workers(3, "token_mean", 4096, dir / "w3_noprefetch", {"full", "qwen3", "3", "-", "-", "-", "noprefetch"});
  ASSERT_EQ(off.size(), 3u);
  const nlohmann::json on = nlohmann::json::parse(read_file((dir / "w3" / "rank0.json").string()));
  EXPECT_EQ(max_abs_diff(off[0]["params"], on["params"]), 0.0);
  EXPECT_EQ(off[0]["prefetched_gathers"].get<int64_t>(), 0);
  // Without the prefetch a rank holds the root and one layer at most (measured 35,904 of 66,944 bytes);
  // the prefetch adds the next layer's chunks.
  const int64_t total = on["total_numel"].get<int64_t>();
  EXPECT_LT(off[0]["peak_gathered_bytes"].get<int64_t>(), 4 * total);
  EXPECT_GT(on["peak_gathered_bytes"].get<int64_t>(), off[0]["peak_gathered_bytes"].get<int64_t>());
}
TEST(DistributedSharded, FullShardingMatchesOneRankMoe) { expect_sharded_matches_one_rank("full", "qwen3_moe"); }
// ZeRO-3 with a KL penalty: the frozen reference is sharded like the policy (each rank keeps its shard;
// its layers are gathered one at a time for the reference forwards, ranks short of micro-batches run
// idle ones in the same place), and the weights still equal the 1-rank run with a whole reference.
TEST(DistributedSharded, FullShardingWithShardedKlReferenceMatchesOneRank) {
  expect_sharded_matches_one_rank("full", "qwen3", /*kl=*/true);
  // The same world size with a whole (replicated) reference, ZeRO-1: the sharded reference changes
  // nothing but float summation order (measured 5.5e-7 at 2 ranks, 2.9e-6 at 3).
  expect_sharded_matches_one_rank("optimizer", "qwen3", /*kl=*/true);
  for (int world : {2, 3}) {
    auto params = [&](const std::string& mode) {
      const fs::path f = fs::path(SPADE_TEST_TMP) / ("zero_" + mode + "_qwen3_kl") / ("w" + std::to_string(world)) /
                         "rank0.json";
      return nlohmann::json::parse(read_file(f.string()))["params"];
    };
    EXPECT_LE(max_abs_diff(params("full"), params("optimizer")), 1e-5) << world << " ranks";
  }
}

// Checkpoints of a sharded optimizer (trainer/optimizer_shards.h): 3 ZeRO-2 steps at 2 ranks saved per
// shard, then resumed at 1, 2 and 3 ranks (re-sharded) for a 4th step. The independent reference is
// the uninterrupted 4-step 1-rank run with torch's AdamW.
TEST(DistributedSharded, ShardedCheckpointResumesAtAnyWorldSize) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "zero_checkpoint";
  fs::remove_all(dir);
  const std::string ckpt = (dir / "ckpt").string();
  const std::vector<nlohmann::json> ref = run_workers(1, "token_mean", 4096, dir / "ref", {"none", "qwen3", "4"});
  const std::vector<nlohmann::json> saved =
      run_workers(2, "token_mean", 4096, dir / "save", {"gradients", "qwen3", "3", ckpt, "-"});
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_TRUE(fs::exists(ckpt + "/optimizer_shard_00000_of_00002.pt"));
  EXPECT_TRUE(fs::exists(ckpt + "/optimizer_shard_00001_of_00002.pt"));
  // The 4th step moves the weights by ~lr: fresh (unrestored) moments would give a first-step AdamW
  // update instead, off by O(lr), far beyond the tolerance.
  const double moved = max_abs_diff(ref[0]["params"], saved[0]["params"]);
  EXPECT_GE(moved, 1e-3);
  for (int world : {1, 2, 3}) {
    const std::vector<nlohmann::json> resumed = run_workers(
        world, "token_mean", 4096, dir / ("resume" + std::to_string(world)), {"gradients", "qwen3", "1", "-", ckpt});
    ASSERT_EQ(resumed.size(), static_cast<size_t>(world));
    EXPECT_EQ(max_abs_diff(resumed[0]["initial"], saved[0]["params"]), 0.0);  // the saved weights
    const double diff = max_abs_diff(resumed[0]["params"], ref[0]["params"]);
    std::printf("[resume at %d ranks] max |w - w_uninterrupted| = %.3g (4th step moved %.3g)\n", world, diff, moved);
    EXPECT_LE(diff, 1e-4) << "resumed at " << world << " ranks";
  }

  // A missing or malformed shard file is named in the error.
  policy::Transformer model = fixtures::random_model("qwen3");
  const DistributedContext single;
  ShardedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2), single, Sharding::Gradients);
  const std::string broken = (dir / "broken").string();
  fs::copy(ckpt, broken);
  const auto load_error = [&] {
    try {
      load_optimizer_shards(opt, broken);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(load_error(), "(no error)");
  fs::remove(broken + "/optimizer_shard_00001_of_00002.pt");
  std::string e = load_error();
  EXPECT_NE(e.find(broken + "/optimizer_shard_00001_of_00002.pt is missing"), std::string::npos) << e;
  fs::copy(ckpt + "/optimizer_shard_00001_of_00002.pt", broken + "/optimizer_shard_00001_of_00002.pt");
  write_file_atomic(broken + "/optimizer_shard_00000_of_00002.pt", "not a torch archive");
  e = load_error();
  EXPECT_NE(e.find(broken + "/optimizer_shard_00000_of_00002.pt is unreadable or malformed"), std::string::npos) << e;
  fs::remove_all(broken);
  fs::create_directories(broken);
  EXPECT_NE(load_error().find("no optimizer shard files"), std::string::npos) << load_error();

  // A set written before ZeRO-3 (no "pieces": the shard is the range [begin, end) of the flat layout)
  // still loads: one rank's whole range with known moments and step counts.
  const std::string legacy = (dir / "legacy").string();
  fs::create_directories(legacy);
  const int64_t total = opt.total_numel();
  torch::serialize::OutputArchive a;
  a.write("total", torch::tensor(total));
  a.write("begin", torch::tensor(int64_t{0}));
  a.write("end", torch::tensor(total));
  a.write("rank", torch::tensor(int64_t{0}));
  a.write("world_size", torch::tensor(int64_t{1}));
  a.write("numels", torch::tensor(opt.numels()));
  a.write("steps", torch::full({static_cast<int64_t>(opt.numels().size())}, 3, torch::kLong));
  a.write("exp_avg", torch::full({total}, 0.25f));
  a.write("exp_avg_sq", torch::full({total}, 0.5f));
  a.save_to(legacy + "/optimizer_shard_00000_of_00001.pt");
  load_optimizer_shards(opt, legacy);
  EXPECT_EQ(opt.exp_avg().min().item<float>(), 0.25f);
  EXPECT_EQ(opt.exp_avg().max().item<float>(), 0.25f);
  EXPECT_EQ(opt.exp_avg_sq().min().item<float>(), 0.5f);
  EXPECT_EQ(opt.step_counts(), std::vector<int64_t>(opt.numels().size(), 3));
}

// ZeRO-3 checkpoints (the piece layout of trainer/optimizer_shards.h): 3 steps at 2 ranks saved, then
// resumed at 1, 2 and 3 ranks, and by ZeRO-2 at 2 ranks (another layout), for a 4th step. Independent
// reference: the uninterrupted 4-step 1-rank run with torch's AdamW.
TEST(DistributedSharded, FullShardingCheckpointResumesAtAnyWorldSize) {
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "zero3_checkpoint";
  fs::remove_all(dir);
  const std::string ckpt = (dir / "ckpt").string();
  const std::vector<nlohmann::json> ref = run_workers(1, "token_mean", 4096, dir / "ref", {"none", "qwen3", "4"});
  const std::vector<nlohmann::json> saved = run_workers(2, "token_mean", 4096, dir / "save", {"full", "qwen3", "3", ckpt, "-"});
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(saved.size(), 2u);
  const double moved = max_abs_diff(ref[0]["params"], saved[0]["params"]);
  EXPECT_GE(moved, 1e-3);  // fresh moments would give a first-step update instead, off by O(lr)
  for (const auto& [world, mode] : std::vector<std::pair<int, std::string>>{{1, "full"}, {2, "full"}, {3, "full"},
                                                                             {2, "gradients"}}) {
    const std::vector<nlohmann::json> resumed = run_workers(
        world, "token_mean", 4096, dir / ("resume_" + mode + std::to_string(world)), {mode, "qwen3", "1", "-", ckpt});
    ASSERT_EQ(resumed.size(), static_cast<size_t>(world));
    EXPECT_EQ(max_abs_diff(resumed[0]["initial"], saved[0]["params"]), 0.0);  // the saved weights
    const double diff = max_abs_diff(resumed[0]["params"], ref[0]["params"]);
    std::printf("[zero3 checkpoint resumed by %s at %d ranks] max |w - w_uninterrupted| = %.3g (4th step moved %.3g)\n",
                mode.c_str(), world, diff, moved);
    EXPECT_LE(diff, 1e-4) << mode << " at " << world << " ranks";
  }
}

TEST(DistributedSharded, ShardRangesPartitionTheFlatVector) {
  // ceil(10 / 4) = 3: [0,3) [3,6) [6,9) [9,10); 2 elements over 3 ranks leave the last shard empty.
  EXPECT_EQ(shard_capacity(10, 4), 3);
  EXPECT_EQ(shard_range(10, 0, 4).end, 3);
  EXPECT_EQ(shard_range(10, 3, 4).begin, 9);
  EXPECT_EQ(shard_range(10, 3, 4).size(), 1);
  EXPECT_EQ(shard_range(2, 2, 3).size(), 0);
  EXPECT_EQ(shard_range(7, 0, 1).size(), 7);
  EXPECT_THROW(shard_range(10, 4, 4), Error);
  EXPECT_EQ(parse_sharding("gradients"), Sharding::Gradients);
  EXPECT_EQ(sharding_name(Sharding::Optimizer), "optimizer");
  EXPECT_EQ(parse_sharding("full"), Sharding::Full);
  EXPECT_EQ(sharding_name(Sharding::Full), "full");
  EXPECT_THROW(parse_sharding("zero3"), Error);
}

TEST(DistributedEnv, SingleProcessWithoutLauncherVariables) {
  const DistributedEnv e = parse_distributed_env(lookup({}));
  EXPECT_EQ(e.world_size, 1);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.launcher, "single");
  const DistributedContext ctx(e);
  EXPECT_FALSE(ctx.active());
  EXPECT_EQ(ctx.backend(), "none");
  EXPECT_EQ(ctx.all_reduce_sum({1.5, 2.0}), (std::vector<double>{1.5, 2.0}));  // identity at world 1
  EXPECT_EQ(ctx.all_gather_strings("x"), std::vector<std::string>{"x"});
}

TEST(DistributedEnv, TorchrunVariables) {
  const DistributedEnv e = parse_distributed_env(lookup({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                                         {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "node7"},
                                                         {"MASTER_PORT", "29511"}}));
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "node7");
  EXPECT_EQ(e.master_port, 29511);
  EXPECT_FALSE(e.agent_store);
  // torchrun's static rendezvous: its agent hosts the store; the key prefix is torch's own
  // ("/worker/attempt_<restart count>", torch/distributed/rendezvous.py in python3-torch 1.13).
  const DistributedEnv a = parse_distributed_env(
      lookup({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"},
              {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  EXPECT_TRUE(a.agent_store);
  EXPECT_EQ(a.store_prefix, "/worker/attempt_2");
}

TEST(DistributedEnv, SlurmVariablesWhenRankIsAbsent) {
  const DistributedEnv e = parse_distributed_env(lookup({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"},
                                                         {"SLURM_LOCALID", "1"}, {"MASTER_ADDR", "n1"},
                                                         {"MASTER_PORT", "29500"}}));
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  // RANK wins over SLURM_PROCID (torchrun inside an allocation).
  EXPECT_EQ(parse_distributed_env(lookup({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"SLURM_PROCID", "5"},
                                          {"SLURM_NTASKS", "8"}})).launcher, "torchrun");
}

TEST(DistributedEnv, BadEnvironmentNamesTheVariable) {
  const std::map<std::string, std::string> ok = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  EXPECT_EQ(env_error(ok), "");
  auto with = [&](const std::string& k, const std::string& v) {
    auto m = ok;
    m[k] = v;
    return env_error(m);
  };
  auto without = [&](const std::string& k) {
    auto m = ok;
    m.erase(k);
    return env_error(m);
  };
  EXPECT_NE(with("RANK", "2").find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos) << with("RANK", "2");
  EXPECT_NE(with("RANK", "x1").find("RANK='x1'"), std::string::npos);
  EXPECT_NE(with("RANK", "-1").find("RANK='-1'"), std::string::npos);
  EXPECT_NE(with("WORLD_SIZE", "0").find("WORLD_SIZE must be >= 1"), std::string::npos);
  EXPECT_NE(without("MASTER_ADDR").find("MASTER_ADDR is not set"), std::string::npos) << without("MASTER_ADDR");
  EXPECT_NE(without("MASTER_PORT").find("MASTER_PORT is not set"), std::string::npos);
  EXPECT_NE(without("WORLD_SIZE").find("WORLD_SIZE is not set"), std::string::npos);
  EXPECT_NE(with("MASTER_PORT", "70000").find("MASTER_PORT=70000"), std::string::npos);
  auto local = ok;
  local["LOCAL_RANK"] = "2";
  local["LOCAL_WORLD_SIZE"] = "2";
  EXPECT_NE(env_error(local).find("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(env_error({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}).find("SLURM_PROCID=4 is not below SLURM_NTASKS=4"),
            std::string::npos);
  EXPECT_NE(env_error({{"WORLD_SIZE", "2"}}).find("RANK is not set"), std::string::npos);
  // World size 1 needs no rendezvous address.
  EXPECT_EQ(env_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), "");
}

TEST(DistributedEnv, RendezvousTimeoutNamesTheStore) {
  // Rank 1 of 2 with nobody hosting the store: a clear error naming the address, after the timeout.
  DistributedEnv e;
  e.rank = 1;
  e.world_size = 2;
  e.master_addr = "127.0.0.1";
  e.master_port = free_local_port();
  DistributedOptions o;
  o.timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    DistributedContext ctx(e, o);
    FAIL() << "joined a store nobody hosts";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("127.0.0.1:" + std::to_string(e.master_port)), std::string::npos)
        << err.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

TEST(DistributedBuckets, GroupByDtypeUpToTheByteCap) {
  // Sizes in bytes: f32[10] = 40, f32[20] = 80, f64[5] = 40, f32[30] = 120, f64[100] = 800, f32[1] = 4.
  std::vector<at::Tensor> t = {torch::zeros({10}), torch::zeros({4, 5}), torch::zeros({5}, torch::kDouble),
                               torch::zeros({30}), torch::zeros({100}, torch::kDouble), torch::zeros({1})};
  // Cap 128 bytes, by hand: f32 bucket {0,1} = 120 bytes; t3 (120) does not fit -> new f32 bucket {3};
  // t5 (4) fits with t3 (124). f64 bucket {2} = 40; t4 (800) is larger than the cap -> alone {4}.
  const auto b = plan_buckets(t, 128);
  const std::vector<std::vector<size_t>> expected = {{0, 1}, {2}, {3, 5}, {4}};
  EXPECT_EQ(b, expected);
  EXPECT_THROW(plan_buckets(t, 0), Error);
  EXPECT_EQ(owned_indices(5, 1, 2), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(owned_indices(5, 0, 2), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(owned_indices(3, 0, 1), (std::vector<size_t>{0, 1, 2}));
}

TEST(DistributedGrpo, TwoRanksMatchOneRankSeqMeanTokenMean) { expect_two_ranks_match_one("seq_mean_token_mean"); }

TEST(DistributedGrpo, TwoRanksMatchOneRankTokenMean) { expect_two_ranks_match_one("token_mean"); }

TEST(DistributedGrpo, TwoRanksMatchOneRankSeqMeanTokenSum) { expect_two_ranks_match_one("seq_mean_token_sum"); }

// Dr.GRPO without loss.max_len: the ranks agree on L (the longest row of the whole batch) with a MAX
// all-reduce before the normaliser is summed; one rank takes the longest of its own micro-batches.
TEST(DistributedGrpo, TwoRanksMatchOneRankDrGrpo) { expect_two_ranks_match_one("dr_grpo"); }

// The designer phase split across 2 ranks (trainer/selfplay_dp.h): request i of a round and program
// i of the hints run on rank i mod 2, each rank with its own seed; every rank gets every result, in
// order, exactly (the attempts' float logprobs bit for bit).
TEST(DistributedDesigner, RoundsAndHintsSplitByIndexAndGatheredInOrder) {
  const std::vector<nlohmann::json> two = run_workers(2, "split", 0, fs::path(SPADE_TEST_TMP) / "dp_split");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0]["attempts"], two[1]["attempts"]);
  EXPECT_EQ(two[0]["hints"], two[1]["hints"]);
  const nlohmann::json& attempts = two[0]["attempts"];
  ASSERT_EQ(attempts.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const nlohmann::json& a = attempts[i];
    EXPECT_EQ(a["slot"], i);
    EXPECT_EQ(a["doc_id"], "doc" + std::to_string(10 + i));
    EXPECT_EQ(a["code"], "class Game:  # by rank " + std::to_string(i % 2) + " from 'prompt " + std::to_string(i) + "'");
    EXPECT_EQ(a["report"]["admitted"], i % 2 == 0);
    EXPECT_EQ(a["report"]["gates"][0]["seconds"], 0.125);
    // The worker wrote -0.1f * (i + 1) and -1/3 as float: compare after the float round trip.
    const nlohmann::json& lp = a["sample"]["rollout_logprobs"];
    ASSERT_EQ(lp.size(), 5u) << a.dump();
    EXPECT_EQ(lp[3].get<float>(), -0.1f * static_cast<float>(i + 1));
    EXPECT_EQ(lp[4].get<float>(), -1.0f / 3.0f);
  }
  EXPECT_EQ(two[1]["hints"], nlohmann::json({"hint for p0 by rank 0", "hint for p1 by rank 1", "hint for p2 by rank 0"}));
  // Each rank sampled with its own seed (rank_seed): different from each other and from the round seed.
  const uint64_t s0 = two[0]["seed_used"]["designer"], s1 = two[1]["seed_used"]["designer"];
  EXPECT_NE(s0, s1);
  EXPECT_NE(s0, 1234u);
  EXPECT_NE(two[0]["seed_used"]["hints"], two[1]["seed_used"]["hints"]);
  // One process: the local functions see every item with the given seed, unchanged.
  const std::vector<nlohmann::json> one = run_workers(1, "split", 0, fs::path(SPADE_TEST_TMP) / "dp_split1");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["seed_used"]["designer"], 1234u);
  EXPECT_EQ(one[0]["seed_used"]["hints"], 99u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(one[0]["attempts"][i]["code"], "class Game:  # by rank 0 from 'prompt " + std::to_string(i) + "'");
}

TEST(DistributedDesigner, GatherIndexedNamesWhatIsMissing) {
  const DistributedContext single;
  EXPECT_EQ(gather_indexed(single, 3, {2, 0, 1}, {"c", "a", "b"}, "x"), std::vector<nlohmann::json>({"a", "b", "c"}));
  auto err = [&](size_t n, std::vector<size_t> mine, std::vector<nlohmann::json> res) {
    try {
      gather_indexed(single, n, mine, res, "hints");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(3, {0, 1}, {"a", "b"}), "hints: item 2 came back from no rank");
  EXPECT_EQ(err(2, {0, 0}, {"a", "b"}), "hints: bad or repeated index 0");
  EXPECT_EQ(err(2, {0, 5}, {"a", "b"}), "hints: bad or repeated index 5");
  EXPECT_EQ(err(2, {0, 1}, {"a"}), "hints: 2 indices but 1 results");
}

// `spade train --nproc 2` end to end on the tiny config of test_train.cpp (issue 5): 2 self-play
// steps where seed environments fill the designer's empty slots (a random model writes no valid
// program), so each rank plays one of the 2 environments and trains on it. Only rank 0 logs and
// writes: one metrics line per step, one TensorBoard file, one step line per step on stdout.
TEST(DistributedTrain, TwoLocalRanksRunTwoSteps) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "dp_train";
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string yaml =
      spade::fixtures::tiny_run_yaml(root.string(), /*threads=*/1, /*max_attempts=*/1, "fill_with_seeds: true,") +
      "distributed: {timeout_s: 300}\n";
  write_file_atomic((root / "tiny.yaml").string(), yaml);
  const std::string log_path = (root / "out.log").string();
  const pid_t pid = spawn_with_env({SPADE_BIN, "train", "--nproc", "2", "--config", (root / "tiny.yaml").string()},
                                   {}, log_path);
  ASSERT_GT(pid, 0);
  const int rc = wait_exit(pid);
  const std::string log = read_file(log_path);
  ASSERT_EQ(rc, 0) << log;

  const fs::path run = root / "t";
  // metrics.jsonl: exactly one line per step (two writers would double them); the batch holds both
  // environments' plays (gathered from both ranks) and the update trained tokens.
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], n + 1);  // step numbers from 1
    EXPECT_EQ(j["envs/live"], 2) << line;
    EXPECT_EQ(j["batch/agent_samples"], 4) << line;  // 2 environments x 2 plays, from 2 ranks
    EXPECT_GT(j["train/tokens"].get<double>(), 0) << line;
    ++n;
  }
  EXPECT_EQ(n, 2);
  int events = 0;
  for (auto& e : fs::directory_iterator(run / "tb")) events += e.is_regular_file();
  EXPECT_EQ(events, 1);
  EXPECT_TRUE(fs::exists(run / "checkpoints" / "step_000002" / "config.json"));
  // stdout: rank 0's lines only, once each.
  auto count = [&](const std::string& needle) {
    int c = 0;
    for (size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1)) ++c;
    return c;
  };
  EXPECT_EQ(count("data parallel: 2 ranks (torchrun), gloo"), 1) << log;
  EXPECT_EQ(count("step   1/2"), 1) << log;
  EXPECT_EQ(count("step   2/2"), 1) << log;
  EXPECT_EQ(count("final checkpoint"), 1) << log;
}

// `spade train` with distributed.sharding gradients (ZeRO-2) at 2 ranks writes one optimizer shard per
// rank into the checkpoint's trainer_state/ (no optimizer.pt), and `--resume` continues it at 1 rank.
TEST(DistributedTrain, ShardedRunCheckpointsPerShardAndResumesOnOneRank) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "dp_train_zero2";
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string yaml =
      spade::fixtures::tiny_run_yaml(root.string(), /*threads=*/1, /*max_attempts=*/1, "fill_with_seeds: true,") +
      "distributed: {timeout_s: 300, sharding: gradients}\n";
  write_file_atomic((root / "tiny.yaml").string(), yaml);
  const pid_t pid = spawn_with_env({SPADE_BIN, "train", "--nproc", "2", "--config", (root / "tiny.yaml").string()},
                                   {}, (root / "out.log").string());
  ASSERT_GT(pid, 0);
  ASSERT_EQ(wait_exit(pid), 0) << read_file((root / "out.log").string());
  const fs::path state = root / "t" / "checkpoints" / "step_000002" / "trainer_state";
  EXPECT_TRUE(fs::exists(state / "optimizer_shard_00000_of_00002.pt"));
  EXPECT_TRUE(fs::exists(state / "optimizer_shard_00001_of_00002.pt"));
  EXPECT_FALSE(fs::exists(state / "optimizer.pt"));
  EXPECT_FALSE(fs::exists(root / "t" / "checkpoints" / ".shards_step_000002"));  // moved into the checkpoint

  const pid_t resumed = spawn_with_env(
      {SPADE_BIN, "train", "--resume", (root / "t").string(), "--set", "selfplay.steps=3"}, {},
      (root / "resumed.log").string());
  ASSERT_GT(resumed, 0);
  const std::string log = [&] {
    const int rc = wait_exit(resumed);
    const std::string text = read_file((root / "resumed.log").string());
    EXPECT_EQ(rc, 0) << text;
    return text;
  }();
  EXPECT_NE(log.find("resume: continuing at step 3"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(root / "t" / "checkpoints" / "step_000003" / "trainer_state" /
                         "optimizer_shard_00000_of_00001.pt"));
}

// A rank that fails fails the launch: a config error makes both ranks exit 1, and so does --nproc.
TEST(DistributedTrain, FailingRanksFailTheLaunch) {
  const fs::path root = fs::path(SPADE_TEST_TMP) / "dp_train_fail";
  fs::create_directories(root);
  const std::string log_path = (root / "out.log").string();
  fs::remove(log_path);
  const pid_t pid = spawn_with_env(
      {SPADE_BIN, "train", "--nproc", "2", "--config", (root / "missing.yaml").string()}, {}, log_path);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(wait_exit(pid), 1) << read_file(log_path);
  EXPECT_NE(read_file(log_path).find("spade train --nproc: rank"), std::string::npos) << read_file(log_path);
}
