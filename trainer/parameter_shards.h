// Parameter sharding for ZeRO-3 / FSDP (distributed.sharding full; Rajbhandari et al. 2020, "ZeRO",
// §5.1 P_os+g+p; Zhao et al. 2023, "PyTorch FSDP", §3.1 flat parameters per unit). The model is cut
// into units: unit 0 is the root (embeddings, final norm, output projection), unit 1 + l is decoder
// layer l. Each unit's parameters, flattened in model->parameters() order, form one flat vector of U
// elements padded to N equal chunks of ceil(U / N); rank r keeps chunk r (the float32 master weights
// of its slice, parameters()) and the module's parameter tensors are empty while a unit is not in
// use. A layer is all-gathered just before it runs and released right after (forward, and again for
// its recomputation in backward: activation checkpointing is required), its weights' gradients are
// reduce-scattered into the owners' chunks as soon as its backward has produced them; the root is
// gathered for a whole optimizer step (begin_step .. finish_gradients) and its gradients, accumulated
// in .grad across the micro-batches, reduce-scattered at the end. Prefetch (FSDP's forward and
// backward prefetch): when a layer is gathered, the all-gather of the layer that runs next (the one
// after it in a forward, before it in the recomputation of backward) is started at once, so it travels
// while this layer computes; the direction is read from the order of the gathers themselves, which
// every rank runs alike (idle passes included), so all ranks start the same collectives in the same
// order. A prefetch not used next is waited for and dropped.
//
// Collectives: every gather and reduction is one on the data-parallel group, so all ranks must run the
// same sequence of forwards and backwards per step (grpo_update pads a rank with fewer micro-batches
// with idle_forward / idle_micro_batch). Not copyable; not thread-safe (the training thread, and the
// autograd engine's thread that runs a checkpointed layer's backward).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policy/transformer.h"
#include "trainer/distributed.h"

namespace spade::trainer {

class ParameterShards : public policy::LayerWeightsProvider {
 public:
  /// Shards `model`'s parameters (contiguous float32, identical on every rank: broadcast first) over
  /// `dist`, which must outlive this object: keeps this rank's chunks on `device` (default: the
  /// parameters' own; ZeRO-3 keeps the whole loaded model in host memory and puts only the shards on
  /// the GPU) and empties every parameter tensor (empty tensors on `device`, where gathers fill them).
  /// Does not install itself: ShardedAdamW calls model->set_weights_provider. Throws spade::Error for a
  /// non-contiguous / non-float32 parameter or a parameter outside the root and the decoder layers.
  ParameterShards(policy::Transformer model, const DistributedContext& dist,
                  c10::optional<torch::Device> device = c10::nullopt, bool prefetch = true);
  ParameterShards(const ParameterShards&) = delete;
  ParameterShards& operator=(const ParameterShards&) = delete;

  /// One piece of this rank's shard: elements [param_offset, param_offset + len) of parameter `param`
  /// (model->parameters() index), flattened, at [shard_offset, shard_offset + len) of the shard.
  struct Piece {
    size_t param;
    int64_t param_offset, shard_offset, len;
  };
  const std::vector<Piece>& pieces() const { return pieces_; }
  int64_t shard_size() const { return shard_size_; }  // elements this rank owns (sum of its chunks)
  /// This rank's float32 master weights [shard_size()] (updated in place by the optimizer).
  torch::Tensor& parameters() { return shard_; }
  const torch::Tensor& parameters() const { return shard_; }

  /// Starts an optimizer step's forward and backward passes (idempotent until finish_gradients):
  /// gathers the root unit and zeroes the shard's gradient sum. Collective.
  void begin_step();
  /// Ends them: reduce-scatters the root's accumulated .grad, releases the root. Returns this rank's
  /// summed gradient [shard_size()] (every micro-batch, every rank); `has_gradient` (per parameter)
  /// says which parameters got a defined gradient on this rank in this step. Collective.
  torch::Tensor finish_gradients(std::vector<bool>& has_gradient);
  /// The collective sequence of one forward (idle_forward), one backward (idle_backward) or both
  /// (idle_micro_batch) with no tokens: for a rank with fewer micro-batches than another in this step.
  void idle_forward();
  void idle_backward();
  void idle_micro_batch();

  /// A frozen model's forwards (the KL reference under ZeRO-3: shard_frozen_model): gathers the root
  /// unit and admits no-grad forwards, each gathering and releasing one layer at a time, until
  /// end_forwards() releases the root. Collective (begin_forwards). No gradients: a backward through a
  /// frozen model's layers throws spade::Error.
  void begin_forwards();
  void end_forwards();

  /// Every parameter's full values, unit by unit (at most one unit gathered at a time, then freed):
  /// visit(index in model->parameters(), its name in model->named_parameters(), values: float32, its
  /// shape, on the shards' device, valid during the call) for each parameter, units in order.
  /// Collective: every rank calls it (a rank that needs nothing passes a visit that does nothing).
  /// Does not change the model. Used to write checkpoints without a whole copy (trainer/checkpointing.h).
  using ParameterVisitor = std::function<void(size_t param, const std::string& name, const torch::Tensor& values)>;
  void gather_each(const ParameterVisitor& visit) const;
  /// Every parameter's name and full shape (model->named_parameters() order).
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::vector<int64_t>>& shapes() const { return shapes_; }
  /// Every parameter's full values into `into` (tensors shaped like model->parameters(), same order;
  /// any dtype and device: copied with a cast, e.g. the bf16 inference copy; an empty tensor is
  /// allocated to its shape first, so a released copy can be refilled): gather_each. Collective; does
  /// not change the model. Throws spade::Error on a count or shape mismatch.
  void gather_into(const std::vector<torch::Tensor>& into) const;

  /// Bytes of this rank's master-weight shard (4 per owned element), and the most bytes of gathered
  /// (full) parameters held at once since construction.
  int64_t shard_bytes() const { return static_cast<int64_t>(shard_.nbytes()); }
  int64_t peak_gathered_bytes() const { return peak_gathered_; }
  /// Layer gathers served by a prefetch started earlier (0 with prefetch off).
  int64_t prefetched_gathers() const { return prefetched_; }

  // policy::LayerWeightsProvider (called by the model).
  void begin_forward() override;
  void gather_layer(size_t layer) override;
  void release_layer(size_t layer) override;
  void layer_gradients(size_t layer, const std::vector<torch::Tensor>& params,
                       const std::vector<torch::Tensor>& grads) override;

 private:
  struct Unit {
    std::vector<size_t> params;   // model->parameters() indices, ascending
    std::vector<int64_t> offsets;  // each one's offset in the unit's flat vector
    int64_t numel = 0;             // U
    int64_t chunk = 0;             // ceil(U / N)
    int64_t shard_offset = 0;      // where this rank's chunk starts in shard_
    int64_t owned = 0;             // elements of this rank's chunk that are real (not padding)
    bool gathered = false;
  };
  torch::Tensor gather_unit_flat(const Unit& u) const;  // [U] full values (collective)
  torch::Tensor mine_padded(const Unit& u) const;         // this rank's chunk [chunk], zero-padded
  void gather(size_t unit);
  void release(Unit& u);
  void drain_prefetch();                                  // waits for and drops a pending prefetch
  void reduce(const Unit& u, const std::vector<torch::Tensor>& grads);  // grads per u.params (undefined: 0)
  std::vector<torch::Tensor> params_;        // the module's parameter tensors (handles)
  std::vector<std::string> names_;           // their names (named_parameters)
  std::vector<std::vector<int64_t>> shapes_;  // per parameter: its full shape and element count
  std::vector<int64_t> numels_;
  std::vector<Unit> units_;
  const DistributedContext& dist_;
  std::vector<Piece> pieces_;
  int64_t shard_size_ = 0;
  torch::Tensor shard_;                      // [shard_size_] float32 master weights
  torch::Tensor grad_sum_;                   // [shard_size_] float32, this step's reduced gradients
  std::vector<bool> has_gradient_;           // per parameter, this step
  bool in_step_ = false;
  bool prefetch_enabled_ = true;
  size_t prefetch_unit_ = 0;                 // the unit of `prefetch_` (a layer unit, >= 1)
  DistributedContext::PendingGather prefetch_;
  size_t last_layer_unit_ = 0;               // the layer unit gathered last (0: none yet)
  int64_t prefetched_ = 0;
  int64_t gathered_ = 0, peak_gathered_ = 0;  // bytes
};

/// Shards a frozen model (the KL reference: float32, requires_grad off, identical on every rank) over
/// `dist`, which must outlive it, onto `device` (as ParameterShards), and installs the shards as its LayerWeightsProvider: each rank keeps
/// 4 ceil(U / N) bytes per unit U; forwards run between begin_forwards() and end_forwards() of the
/// returned shards (every rank, the same sequence). Throws spade::Error as ParameterShards does.
std::shared_ptr<ParameterShards> shard_frozen_model(policy::Transformer model, const DistributedContext& dist,
                                                    c10::optional<torch::Device> device = c10::nullopt);

/// Empties `tensors` (each keeps its dtype and device, with 0 elements): frees a whole copy of the
/// weights between uses (the rollouts' inference copy during the update); gather_into refills them.
void release_parameters(const std::vector<torch::Tensor>& tensors);

}  // namespace spade::trainer
