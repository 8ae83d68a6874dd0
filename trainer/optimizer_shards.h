// Checkpoint files of a sharded optimizer (ZeRO-1 / 2 / 3, trainer/sharded_optimizer.h): each rank
// writes its own shard, and a resume re-shards them for any world size and sharding mode (a rank reads
// the parts of the saved shards that overlap its own pieces). One file per saved rank, in trainer_state/:
//   optimizer_shard_RRRRR_of_WWWWW.pt   a torch archive:
//       total, begin, end, rank, world_size   int64 scalars: ZeRO-1/2's flat range [begin, end) of `total`
//                                            (ZeRO-3: [0, shard size), its own layout)
//       numels, steps                        [num tensors] int64: the flat layout, AdamW step counts
//       pieces                               [n, 3] int64: (parameter, offset in it, length) of each piece
//                                            of the shard, in order (absent in files written before
//                                            ZeRO-3: then the range [begin, end) of the flat layout)
//       exp_avg, exp_avg_sq                  [shard size] float32 (CPU)
// Not thread-safe (one writer per file); functions, no state.
#pragma once
#include <string>

#include "trainer/sharded_optimizer.h"

namespace spade::trainer {

/// "optimizer_shard_RRRRR_of_WWWWW.pt" (5-digit rank and world size).
std::string optimizer_shard_file(int rank, int world_size);

/// Writes `opt`'s shard to dir/optimizer_shard_file(opt.rank(), opt.world_size()) atomically
/// (temp + rename, common/atomic_file.h); `dir` must exist. Returns the path. Throws spade::Error
/// naming the file when it cannot be written.
std::string save_optimizer_shard(const ShardedAdamW& opt, const std::string& dir);

/// True when `dir` holds at least one optimizer_shard_*_of_*.pt file.
bool has_optimizer_shards(const std::string& dir);

/// Restores `opt` (its moments for its own pieces, and the step counts) from the shard files in `dir`,
/// whatever world size and sharding mode wrote them. The files must be one complete set 0..W-1 of a
/// single W over the same parameters (same numels), together covering every element once. Throws
/// spade::Error naming the file that is missing, unreadable, of another world size or model, whose
/// pieces do not fit the parameters, or whose range is not the one its name implies.
void load_optimizer_shards(ShardedAdamW& opt, const std::string& dir);

}  // namespace spade::trainer
