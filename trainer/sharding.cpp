#include "trainer/sharding.h"

#include <algorithm>

#include "common/error.h"

namespace spade::trainer {

Sharding parse_sharding(const std::string& name) {
  if (name == "none") return Sharding::None;
  if (name == "optimizer") return Sharding::Optimizer;
  if (name == "gradients") return Sharding::Gradients;
  if (name == "full") return Sharding::Full;
  throw Error("distributed.sharding must be none, optimizer (ZeRO-1), gradients (ZeRO-2) or full (ZeRO-3), not '" +
              name + "'");
}

std::string sharding_name(Sharding s) {
  switch (s) {
    case Sharding::None: return "none";
    case Sharding::Optimizer: return "optimizer";
    case Sharding::Gradients: return "gradients";
    case Sharding::Full: return "full";
  }
  return "none";
}

int64_t shard_capacity(int64_t total, int world_size) {
  if (world_size < 1) throw Error("shard_capacity: world_size must be >= 1, got " + std::to_string(world_size));
  if (total < 0) throw Error("shard_capacity: total must be >= 0, got " + std::to_string(total));
  return (total + world_size - 1) / world_size;
}

FlatRange shard_range(int64_t total, int rank, int world_size) {
  const int64_t cap = shard_capacity(total, world_size);
  if (rank < 0 || rank >= world_size)
    throw Error("shard_range: rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) + ")");
  FlatRange r;
  r.begin = std::min(total, cap * rank);
  r.end = std::min(total, cap * (rank + 1));
  return r;
}

}  // namespace spade::trainer
