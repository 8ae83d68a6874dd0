// Held-out evaluation (docs/design.md, Evaluation): a policy plays every environment of a set N
// times, each play on its own instance (reset seed), and success (episode reward > 0, as everywhere
// else) is reported per environment, per skill and overall with 95% intervals, with unbiased pass@k.
// Intervals: Wilson per environment (its N plays); a percentile bootstrap over the environments for a
// skill and the whole set (the mean of the environments' success rates: every environment weighs the
// same, and the interval covers the variation between environments, not only between plays).
// Thread-safety: evaluate_set uses the policy and the sandbox like play_episodes (one caller at a
// time); summarize_plays and the formatters are pure.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envsandbox/sandbox.h"
#include "rollout/episode.h"
#include "rollout/policy_ref.h"
#include "trainer/seed_envs.h"

namespace spade::trainer {

/// Which instances are played: kHeldout, seeds from 2^31 up that no training path uses
/// (trainer/reset_seeds.h); kTraining, the seeds 0..N-1 the cold start's demonstrations use.
enum class EvalSeeds { kHeldout, kTraining };
/// "heldout" | "training" (the --reset-seeds names). Throws spade::Error naming `name` otherwise.
EvalSeeds parse_eval_seeds(const std::string& name);
const char* eval_seeds_name(EvalSeeds seeds);
/// The reset seeds of plays 0..plays-1 of every environment.
std::vector<int64_t> eval_reset_seeds(EvalSeeds seeds, int plays);

struct EvalOptions {
  rollout::EpisodeOptions episode;  // per-turn sampling (temperature 0 = greedy), turns, context, batch
  int plays = 8;                    // N: plays per environment (avg@N), each on its own instance
  EvalSeeds seeds = EvalSeeds::kHeldout;
  uint64_t seed = 0;                // sampling seed (rollout::sampling_stream per play)
  int bootstrap_resamples = 2000;   // common/stats.h bootstrap_mean_interval
  uint64_t bootstrap_seed = 42;
};

struct EnvEval {
  std::string skill, name, path;
  int plays = 0, wins = 0;
  double success = 0, low = 0, high = 0;  // wins / plays with its 95% Wilson interval
  std::vector<double> pass_at_k;          // [k - 1] for k = 1..plays (Chen et al. 2021)
  std::map<std::string, int> failures;    // EpisodeResult::failure id -> plays that ended with it
};

struct GroupEval {
  std::string name;  // a skill slug, or "overall"
  int environments = 0;
  double success = 0, low = 0, high = 0;  // mean of the environments' success, bootstrap 95% interval
  std::vector<double> pass_at_k;          // mean over the environments, [k - 1]
};

struct SetEval {
  std::string name;  // the set (its directory)
  double temperature = 0;
  int plays = 0;
  EvalSeeds seeds = EvalSeeds::kHeldout;
  std::vector<EnvEval> environments;  // in the order of the set
  std::vector<GroupEval> skills;      // sorted by skill slug
  GroupEval overall;
  nlohmann::json to_json() const;
};

/// The statistics of one set from its plays: plays[i] are environment envs[i]'s plays (at least one
/// each). Throws spade::Error when the sizes disagree or an environment has no play.
SetEval summarize_plays(const std::string& name, const std::vector<SeedEnv>& envs,
                        const std::vector<std::vector<rollout::EpisodeResult>>& plays, const EvalOptions& options);

/// Plays every environment of `envs` options.plays times (one batched play_episodes call) and
/// summarises. Throws what play_episodes throws (an environment that fails counts as a loss, with its
/// failure id in EnvEval::failures) and spade::Error for plays < 1 or an empty set.
SetEval evaluate_set(const rollout::PolicyRef& policy, envsandbox::EnvServer& server, const std::string& name,
                     const std::vector<SeedEnv>& envs, const EvalOptions& options);

/// The in-loop metrics of `set` under the name `set_name` (the folder's name): eval/<set>/success and
/// eval/<set>/<skill>/success, each with _low and _high (its 95% interval bounds).
std::map<std::string, double> eval_metrics(const std::string& set_name, const SetEval& set);

/// A plain-text table: one line per environment, per skill and overall (success, interval, pass@k for
/// k = 1, 2, 4, ... and N).
std::string format_set_eval(const SetEval& set);

}  // namespace spade::trainer
