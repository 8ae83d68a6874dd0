// AdamW over a sharded flat parameter vector: ZeRO-1 and ZeRO-2 data parallelism (Rajbhandari et al.
// 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", §5.1 P_os and P_os+g).
// The parameters are viewed as one flat vector (model->parameters() order); rank r of N owns the
// contiguous range shard_range(P, r, N) (trainer/sharding.h) and keeps AdamW's exp_avg and exp_avg_sq
// (float32, like the parameters) only for it, so optimizer state is 8 P / N bytes per rank instead of
// 8 P. A step updates only the owned range of the parameters with torch::optim::AdamW's math
// (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", as LibTorch 1.13 computes it:
// p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), t counted per parameter tensor, and a
// tensor without a gradient in this process skipped), then all-gathers the updated ranges so every
// rank holds the full parameters again. Not copyable; not thread-safe (the training thread only).
#pragma once
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/distributed.h"
#include "trainer/sharding.h"

namespace spade::trainer {

class ShardedAdamW : public torch::optim::Optimizer {
 public:
  /// Over `params` (contiguous float32 tensors on one device, the same list in the same order on
  /// every rank: model->parameters()), with AdamW `options` (one parameter group: the lr schedule sets
  /// it through param_groups() as for torch's AdamW; amsgrad is not supported), sharded over `dist`
  /// (which must outlive this optimizer) as `mode` says. World size 1 is one shard covering everything.
  /// Throws spade::Error for mode None, amsgrad, or a non-contiguous / non-float32 parameter.
  ShardedAdamW(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options,
               const DistributedContext& dist, Sharding mode);

  /// The data-parallel gradient reduction and global-norm clipping, in place of
  /// DistributedContext::all_reduce_gradients + torch::nn::utils::clip_grad_norm_ (collective: every
  /// rank calls it once per step). Every rank first agrees on which parameters have a gradient
  /// (a parameter whose grad is undefined here but defined on another rank counts as zeros).
  /// Optimizer: all-reduce (bucketed) of the full gradients, then this rank copies out its range.
  /// Gradients: reduce-scatter of the flat gradient, so this rank receives only its range's sums.
  /// Then the parameters' full .grad tensors are released (undefined), so what a rank holds after the
  /// reduction is its shard's gradient (P / N floats). The global L2 norm is sqrt(sum over ranks of
  /// the squared norm of each shard) (all-reduced): the norm clip_grad_norm_ computes on the full
  /// gradient, up to float summation order; the shard is scaled by min(1, max_norm / (norm + 1e-6))
  /// as clip_grad_norm_ does. max_norm <= 0: no clipping. Returns the norm before clipping.
  double reduce_and_clip_gradients(double max_norm);

  /// One AdamW step of this rank's range with the gradient reduce_and_clip_gradients left, then the
  /// all-gather of the ranges (collective). Returns an undefined tensor (no closure support: throws
  /// spade::Error when one is given). Throws spade::Error when no gradient was reduced since the
  /// last step.
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// torch::save / torch::load of a sharded optimizer would silently keep one rank's shard only:
  /// both throw spade::Error (checkpoints use the per-shard files of trainer/checkpointing.h).
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  Sharding mode() const { return mode_; }
  int rank() const { return dist_.rank(); }
  int world_size() const { return dist_.world_size(); }
  int64_t total_numel() const { return total_; }           // P: elements of all parameters
  const FlatRange& shard() const { return shard_; }        // this rank's [begin, end)
  /// Bytes of this rank's optimizer state tensors (exp_avg + exp_avg_sq: 8 bytes per owned element).
  int64_t state_bytes() const;
  /// Bytes of the reduced gradient this rank held after the last reduce_and_clip_gradients (its
  /// shard's; the full .grad tensors are released then). 0 before the first.
  int64_t gradient_bytes() const;

  /// Per-parameter-tensor AdamW step counts (the same on every rank) and the moments of the owned
  /// range ([shard().size()] float32 each): what a checkpoint shard carries.
  const std::vector<int64_t>& step_counts() const { return steps_; }
  const torch::Tensor& exp_avg() const { return exp_avg_; }
  const torch::Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  /// Restores the state: `steps` per parameter tensor, the moments of the owned range (copied onto
  /// the parameters' device). Throws spade::Error on a size mismatch.
  void restore(const std::vector<int64_t>& steps, const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq);
  /// Element counts of the parameter tensors in order (the flat layout).
  const std::vector<int64_t>& numels() const { return numels_; }

 private:
  // The part of parameter `param` inside the owned range: elements [param_offset, param_offset + len)
  // of its flattened view, at [shard_offset, shard_offset + len) of the shard.
  struct Piece {
    size_t param;
    int64_t param_offset, shard_offset, len;
  };
  const DistributedContext& dist_;
  Sharding mode_;
  int64_t total_ = 0;
  FlatRange shard_;
  std::vector<int64_t> numels_;
  std::vector<Piece> pieces_;
  std::vector<int64_t> steps_;   // per parameter tensor (torch's AdamWParamState::step)
  std::vector<bool> has_grad_;   // per tensor: had a gradient in this process (torch keeps zeroed grads)
  torch::Tensor exp_avg_, exp_avg_sq_;  // [shard size] float32
  torch::Tensor grad_;                  // [shard size] float32 from reduce_and_clip_gradients to step
  int64_t reduced_gradient_bytes_ = 0;
};

}  // namespace spade::trainer
