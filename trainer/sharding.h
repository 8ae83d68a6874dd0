// Sharded data parallel (ZeRO, Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
// Trillion Parameter Models", §5.1): which training state each data-parallel rank keeps only a 1/N
// slice of (config distributed.sharding), and the flat slice a rank owns. Torch-free; thread-safe
// (pure functions).
#pragma once
#include <cstdint>
#include <string>

namespace spade::trainer {

/// What is partitioned over the N data-parallel ranks (ZeRO §5.1 stages):
///   None       nothing: every rank holds the fp32 weights, gradients and AdamW moments (plain DDP)
///   Optimizer  ZeRO-1 (P_os): AdamW's exp_avg / exp_avg_sq and step counts; gradients all-reduced
///   Gradients  ZeRO-2 (P_os+g): also the reduced gradients (reduce-scatter to the owning rank)
///   Full       ZeRO-3 (P_os+g+p, FSDP): also the parameters, per decoder layer, gathered only while
///              a layer runs (trainer/parameter_shards.h)
enum class Sharding { None, Optimizer, Gradients, Full };

/// "none" | "optimizer" | "gradients" | "full". Throws spade::Error listing the names otherwise.
Sharding parse_sharding(const std::string& name);
std::string sharding_name(Sharding s);

/// A half-open range [begin, end) of the flat parameter vector (all parameters flattened and
/// concatenated in model->parameters() order), of `total` elements.
struct FlatRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

/// The slice rank `rank` of `world_size` owns: contiguous shards of ceil(total / world_size)
/// elements, so the last ones may be shorter (or empty when total < world_size). Every rank's
/// padded shard has shard_capacity(total, world_size) elements (the size all-gathers exchange).
/// Throws spade::Error for world_size < 1, rank outside [0, world_size) or total < 0.
FlatRange shard_range(int64_t total, int rank, int world_size);
int64_t shard_capacity(int64_t total, int world_size);

}  // namespace spade::trainer
