#include "trainer/env_pool.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace spade::trainer {

SelfPlayMode parse_selfplay_mode(const std::string& name) {
  if (name == "selfplay") return SelfPlayMode::kSelfPlay;
  if (name == "fixed_pool") return SelfPlayMode::kFixedPool;
  throw Error("selfplay mode must be selfplay or fixed_pool, not '" + name + "'");
}

std::vector<size_t> draw_pool(size_t pool_size, int n, bool replacement, std::mt19937_64& rng) {
  if (pool_size == 0) throw Error("fixed pool: the pool holds no environment");
  std::vector<size_t> out;
  if (replacement) {
    std::uniform_int_distribution<size_t> pick(0, pool_size - 1);
    for (int i = 0; i < n; ++i) out.push_back(pick(rng));
    return out;
  }
  std::vector<size_t> order(pool_size);
  while (static_cast<int>(out.size()) < n) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < pool_size && static_cast<int>(out.size()) < n; ++i) out.push_back(order[i]);
  }
  return out;
}

}  // namespace spade::trainer
