// Reset seeds: which instances of an environment training sees and which are kept for evaluation.
// Training uses seeds in [0, 2^31): the self-play and hinted plays (training_reset_seed, a hash mod
// 2^31 as the reference's hash(path + i) mod 2^31, reference §5), the cold start's demonstrations
// (0 .. demos_per_env - 1, an int) and the validation gates (42, 123, 0..2). Held-out instances use
// seeds from 2^31 up (heldout_reset_seed), so the two sets are disjoint by construction (checked in
// tests/trainer/test_heldout_eval.cpp). Header-only; pure functions, thread-safe.
#pragma once
#include <cstdint>
#include <string>

#include "common/fnv1a.h"
#include "common/splitmix64.h"

namespace spade::trainer {

/// The first seed that training never uses.
inline constexpr int64_t kHeldoutSeedBase = int64_t{1} << 31;

/// A training play's reset seed from its key (the environment's id, its step and play index): FNV-1a,
/// then splitmix64, mod 2^31. The key is the environment's id, not its file path: a path holds the
/// run or checkout directory, which made a run's outcomes depend on where it was started from.
/// FNV-1a alone leaves the low bits poorly mixed (the parity of "path:t:g" alternated with g, and one
/// environment's seeds mod 3 took only two values), which games that pick their instance by
/// seed % n would show as identical plays. Returns a value in [0, 2^31).
inline int64_t training_reset_seed(const std::string& key) {
  return static_cast<int64_t>(splitmix64(fnv1a64(key)) % static_cast<uint64_t>(kHeldoutSeedBase));
}

/// The reset seed of held-out play `play` (>= 0) of an environment: 2^31 + play.
inline int64_t heldout_reset_seed(int play) { return kHeldoutSeedBase + play; }

}  // namespace spade::trainer
