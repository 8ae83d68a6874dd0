// The data-parallel plumbing of the self-play loop (selfplay.cpp), kept out of the loop itself.
//
// What is split across ranks and what is replicated (world size W, this rank r):
//   - designer phase: every rank builds the same prompts (same corpus position, memory and loop RNG
//     on every rank), then samples and validates request i of each designer round when
//     i mod W == r, and writes the hint of program i when i mod W == r; attempts and hints are
//     all-gathered in order, so every rank admits the same generation. Rank 0's resulting loop
//     state (SelfPlayState) is then broadcast as the authority (a no-op when nothing diverged);
//   - hinted plays (r_hint) and agent plays: split by whole environments (groups of plays of one
//     environment): environment g is played on rank g mod W; results are all-gathered in spec order,
//     so rewards, advantages (per-environment z-scores), window rewards, memory and metrics are
//     computed identically on every rank;
//   - the GRPO update: each rank trains its share of the mixed batch (the groups it played; designer
//     samples dealt round robin) with the global normaliser and summed gradients (grpo_update.h);
//   - files (metrics.jsonl, tb/, rollouts.h5, envs/, rejected/, memory.json, checkpoints) and logs:
//     rank 0 only.
// Every function here is a collective when the context is active: all ranks call it in the same order.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"
#include "rollout/designer.h"
#include "rollout/episode.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "trainer/distributed.h"
#include "trainer/selfplay_state.h"

namespace spade::trainer {

/// This rank's sampling seed: `seed` itself at world size 1, else splitmix64(seed ^ splitmix64(rank + 1))
/// so the ranks' streams are decorrelated.
uint64_t rank_seed(const DistributedContext& dist, uint64_t seed);

/// All-gathers results computed on different ranks: this rank computed the items `mine` (indices into
/// [0, n)) with `results` (same order). Returns the n results in index order, on every rank (world size
/// 1: `results` placed by `mine`). Throws spade::Error naming `what` when a rank sends unequal
/// index/result lists, an index out of range or repeated, or when an item came back from no rank.
std::vector<nlohmann::json> gather_indexed(const DistributedContext& dist, size_t n, const std::vector<size_t>& mine,
                                           std::vector<nlohmann::json> results, const std::string& what);

/// One designer round split across ranks: request i is run here when i mod W == rank, by
/// `local(my requests, rank_seed(seed))` (sampling and validation); returns every request's attempt in
/// request order, on every rank. World size 1: exactly local(requests, seed).
std::vector<rollout::DesignAttempt> design_round_split(const DistributedContext& dist,
                                                       const std::vector<rollout::DesignRequest>& requests,
                                                       uint64_t seed, const rollout::DesignRoundFn& local);

/// Writes hints for `programs` (one string each, in order): `local(programs, seed)`.
using HintWriterFn = std::function<std::vector<std::string>(const std::vector<std::string>& programs, uint64_t seed)>;

/// The hints split across ranks: program i is handled here when i mod W == rank, by
/// `local(my programs, rank_seed(seed))`; returns every program's hint in order, on every rank.
/// World size 1: exactly local(programs, seed). Data parallel: throws spade::Error when `local` returns
/// a wrong count (gather_indexed).
std::vector<std::string> write_hints_split(const DistributedContext& dist, const std::vector<std::string>& programs,
                                           uint64_t seed, const HintWriterFn& local);

/// Plays `specs` (consecutive groups of `group_size` plays of one environment) split by whole groups:
/// this rank plays groups g with g mod W == rank, with its own sampling stream (seed mixed with the
/// rank; world size 1: exactly play_episodes(..., seed)). Returns every rank's results in spec order,
/// on every rank. Throws spade::Error when specs.size() is not a multiple of group_size.
std::vector<rollout::EpisodeResult> play_groups_split(const DistributedContext& dist, rollout::PolicyRef policy,
                                                      envsandbox::EnvServer& server,
                                                      const std::vector<rollout::EpisodeSpec>& specs,
                                                      int group_size, const rollout::EpisodeOptions& options,
                                                      uint64_t seed);

/// This rank's share of an optimizer batch laid out as [designer samples (n_designer) | agent samples
/// in groups of group_size]: designer sample i when i mod W == rank, agent group g when g mod W == rank
/// (the groups play_groups_split gave this rank). World size 1: the whole batch.
std::vector<rollout::Sample> batch_share(const DistributedContext& dist, const std::vector<rollout::Sample>& batch,
                                         size_t n_designer, int group_size);

/// Rank 0's `state` on every rank (CBOR of state_to_json; exact round trip).
SelfPlayState broadcast_state(const DistributedContext& dist, const SelfPlayState& state);

/// Exact JSON forms of an episode result (for the exchange; the sample via sample_to_json).
nlohmann::json episode_to_json(const rollout::EpisodeResult& r);
rollout::EpisodeResult episode_from_json(const nlohmann::json& j);

/// Exact JSON forms of a designer attempt (for the exchange).
nlohmann::json design_attempt_to_json(const rollout::DesignAttempt& a);
rollout::DesignAttempt design_attempt_from_json(const nlohmann::json& j);

}  // namespace spade::trainer
