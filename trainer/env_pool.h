// The fixed environment pool (selfplay.mode: fixed_pool): the Fixed-env GRPO / static-pool baseline of
// SPADE §7 (Table 3), where the agent trains on a fixed set of programs and nothing is designed. Each
// generation is envs_per_regen programs drawn from the pool with the loop's RNG. Torch-free; pure.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "trainer/seed_envs.h"

namespace spade::trainer {

enum class SelfPlayMode { kSelfPlay, kFixedPool };
/// "selfplay" | "fixed_pool" (selfplay.mode). Throws spade::Error naming `name` and both names otherwise.
SelfPlayMode parse_selfplay_mode(const std::string& name);

/// `n` indices into a pool of `pool_size` programs: without replacement, distinct while n <= pool_size
/// (a generation larger than the pool takes the whole pool, shuffled, then starts a new shuffle);
/// with replacement, n independent uniform draws. Throws spade::Error for an empty pool.
std::vector<size_t> draw_pool(size_t pool_size, int n, bool replacement, std::mt19937_64& rng);

}  // namespace spade::trainer
