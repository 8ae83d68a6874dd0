// The data-parallel plumbing of the self-play loop (selfplay.cpp), kept out of the loop itself.
//
// What is split across ranks and what is replicated (world size W, this rank r):
//   - designer phase (corpus documents, designer sampling, validation, hints): rank 0 alone; its
//     resulting loop state (SelfPlayState: live environments with their hints, designer buffer, RNG,
//     corpus position, summary) is then broadcast so every rank continues from the same state;
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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"
#include "rollout/episode.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "trainer/distributed.h"
#include "trainer/selfplay_state.h"

namespace spade::trainer {

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

}  // namespace spade::trainer
