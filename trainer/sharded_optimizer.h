// AdamW over a sharded flat parameter vector: ZeRO-1, ZeRO-2 and ZeRO-3 data parallelism (Rajbhandari
// et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", §5.1 P_os, P_os+g
// and P_os+g+p). ZeRO-3 (mode Full) shards per model unit instead (trainer/parameter_shards.h): the
// shard is this rank's chunk of every unit, the master weights live there, and step() updates them
// with the same math and all-gathers nothing (a layer is gathered when it next runs).
// The parameters are viewed as one flat vector (model->parameters() order); rank r of N owns the
// contiguous range shard_range(P, r, N) (trainer/sharding.h) and keeps AdamW's exp_avg and exp_avg_sq
// (float32, like the parameters) only for it, so optimizer state is 8 P / N bytes per rank instead of
// 8 P. A step updates only the owned range of the parameters with torch::optim::AdamW's math
// (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization", as LibTorch 1.13 computes it:
// p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), t counted per parameter tensor, and a
// tensor without a gradient in this process skipped), then all-gathers the updated ranges so every
// rank holds the full parameters again. ZeRO-2 reduces the gradients bucket by bucket during backward
// (begin_backward_reduction, from hooks on the gradient accumulators). Not copyable; not thread-safe
// (the training thread, and the autograd engine's thread that runs the hooks during its backward).
#pragma once
#include <torch/csrc/autograd/function.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/transformer.h"
#include "trainer/distributed.h"
#include "trainer/parameter_shards.h"
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
  /// Mode Full (ZeRO-3) over `model`'s parameters: shards them (ParameterShards; the model's parameter
  /// tensors are empty from here on except while a unit runs) and installs the shards as the model's
  /// LayerWeightsProvider. The weights must be identical on every rank (broadcast first). The model then
  /// runs forward only inside an optimizer step (begin_step .. reduce_and_clip_gradients) and needs
  /// activation checkpointing for its training forwards; gather_parameters_into() gives a whole copy.
  /// `device`: where the shards, the gathered weights and the moments live (default: the parameters'
  /// device), so a model loaded in host memory goes to the GPU one shard at a time. Throws spade::Error
  /// as above.
  /// `prefetch`: start the next layer's all-gather while a layer runs (ParameterShards; off only to
  /// measure what it saves, `spade bench step --prefetch false`).
  ShardedAdamW(policy::Transformer model, const torch::optim::AdamWOptions& options, const DistributedContext& dist,
               c10::optional<torch::Device> device = c10::nullopt, bool prefetch = true);
  ~ShardedAdamW() override;  // removes the gradient hooks
  ShardedAdamW(const ShardedAdamW&) = delete;
  ShardedAdamW& operator=(const ShardedAdamW&) = delete;

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

  /// ZeRO-2 (mode Gradients) reduces gradients during backward, bucket by bucket, instead of after it,
  /// so a rank never holds the whole model's full gradients at once (ZeRO §5.1 P_os+g: "we reduce the
  /// gradients bucket by bucket as they become available"). Buckets are consecutive parameters in
  /// reverse order (the order backward produces them) of at most dist.bucket_bytes() each (a larger
  /// tensor alone). A post-hook on each parameter's gradient accumulator marks it arrived; once a bucket
  /// and every bucket before it have arrived, the bucket is copied into a flat buffer, each owner's part
  /// of it is reduced to that owner (c10d reduce) and added to its shard's gradient, and the full .grad
  /// tensors are released. Buckets are reduced strictly in order, so every rank issues the same
  /// collectives in the same sequence whatever order its backward produced them in.
  ///   begin_backward_reduction(): arms the hooks for one optimizer step's backward passes (nothing
  ///     else fires them: a backward outside an armed step, e.g. rank 0's cold start, stays local).
  ///   end_micro_batch(): after each micro-batch's backward; reduces the buckets still waiting (a
  ///     parameter that got no gradient contributes zeros). Every rank must call it the same number of
  ///     times per step: a rank with fewer micro-batches calls it for the missing ones, with no backward.
  /// reduce_and_clip_gradients then only agrees on which parameters take part, norms and clips. Without
  /// begin_backward_reduction it reduce-scatters the .grad tensors as before. Mode Optimizer: both are
  /// no-ops (its gradients are all-reduced whole, as plain data parallel does).
  ///   expect_gradients_from(loss): before a micro-batch's backward, optional: parameters the loss's
  ///     autograd graph does not reach (e.g. MoE experts no token of the micro-batch was routed to)
  ///     are marked arrived with no gradient at once, so the buckets after them need not wait for
  ///     end_micro_batch (torch DDP's find_unused_parameters).
  void begin_backward_reduction();
  void expect_gradients_from(const torch::Tensor& loss);
  void end_micro_batch();
  /// Mode Full: before an optimizer step's first forward (also a no-grad one): gathers the root unit
  /// (ParameterShards::begin_step; idempotent until reduce_and_clip_gradients). Other modes: no-op.
  void begin_step();
  /// For a rank with fewer micro-batches than another in this step, once per missing one: the
  /// collectives of a forward (idle_forward: mode Full) or of a forward and backward (idle_micro_batch:
  /// mode Full, and end_micro_batch's reduction rounds in mode Gradients); idle_backward: the backward
  /// half alone (for a sharded KL reference's forward in between). Other modes: no-op.
  void idle_forward();
  void idle_backward();
  void idle_micro_batch();
  /// Whether forward and backward passes issue collectives, so every rank must run as many (modes
  /// Gradients with begin_backward_reduction, and Full).
  bool collective_passes() const { return mode_ == Sharding::Gradients || mode_ == Sharding::Full; }
  /// Mode Full: every parameter's full values into `into` (shaped like the model's parameters or empty,
  /// in model->parameters() order, any dtype / device; ParameterShards::gather_into), e.g. the rollouts'
  /// inference copy; collective. Throws spade::Error in another mode (the parameters are whole there)
  /// or on a count or shape mismatch.
  void gather_parameters_into(const std::vector<torch::Tensor>& into) const;
  /// Mode Full: the parameter shards (e.g. ParameterShards::gather_each to write a checkpoint unit by
  /// unit). Throws spade::Error in another mode.
  const ParameterShards& parameter_shards() const;
  /// Mode Full: bytes of this rank's master-weight shard and the most bytes of gathered parameters held
  /// at once. Other modes: every parameter's bytes (replicated), and 0.
  int64_t parameter_bytes() const;
  int64_t peak_gathered_parameter_bytes() const { return shards_ ? shards_->peak_gathered_bytes() : 0; }
  /// Mode Full: the model whose parameters are sharded (its forward runs only in optimizer steps);
  /// null otherwise.
  policy::Transformer sharded_model() const { return model_; }
  /// The most bytes of full-size .grad tensors alive at once during the last armed step (0 if none).
  int64_t peak_full_gradient_bytes() const { return peak_live_grad_bytes_; }

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
  const FlatRange& shard() const { return shard_; }        // this rank's [begin, end) (Full: [0, its size))
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

  /// The part of parameter `param` (model->parameters() index) this rank owns: elements
  /// [param_offset, param_offset + len) of its flattened view, at [shard_offset, shard_offset + len) of
  /// the shard (and of exp_avg / exp_avg_sq). The pieces tile the shard in order.
  using Piece = ParameterShards::Piece;
  const std::vector<Piece>& pieces() const { return pieces_; }

 private:
  void init_state(const std::vector<torch::Tensor>& params);  // steps, moments, flat offsets
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
  std::shared_ptr<ParameterShards> shards_;  // mode Full: the parameter shards (also the model's provider)
  policy::Transformer model_{nullptr};       // mode Full: the model they are installed on

  // ZeRO-2's reduction during backward (begin_backward_reduction).
  friend struct GradientArrived;
  struct Bucket {
    std::vector<size_t> params;  // consecutive parameter indices, descending
    int64_t begin = 0, end = 0;  // their flat range
  };
  void gradient_arrived(size_t param);  // a gradient accumulator's post-hook
  void mark_arrived(size_t param);      // counts `param` in its bucket; reduces the buckets now complete
  void reduce_bucket(size_t b);
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;            // per parameter
  std::vector<int64_t> offsets_;             // per parameter: its flat offset
  std::vector<size_t> pending_;              // per bucket: parameters not arrived in this micro-batch
  std::vector<bool> arrived_;                // per parameter: arrived in this micro-batch
  std::vector<bool> arrived_in_step_;        // per parameter: arrived in some micro-batch of this step
  size_t next_bucket_ = 0;                   // the first bucket not yet reduced in this micro-batch
  bool armed_ = false;
  torch::Tensor grad_sum_;                   // [shard size]: this step's reduced buckets, summed
  int64_t live_grad_bytes_ = 0, peak_live_grad_bytes_ = 0;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they hold the hooks
  std::vector<uintptr_t> hook_keys_;
  std::vector<size_t> hooked_params_;         // the parameter of accumulators_[k]
};

/// Bytes of AdamW's moments this rank holds: a ShardedAdamW's shard (state_bytes()), or exp_avg and
/// exp_avg_sq of every parameter torch::optim::AdamW has state for. `optimizer` must be one of the two.
int64_t adamw_state_bytes(const torch::optim::Optimizer& optimizer);

}  // namespace spade::trainer
