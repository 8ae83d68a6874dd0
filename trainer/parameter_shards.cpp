#include "trainer/parameter_shards.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <unordered_map>

#include "common/error.h"

namespace spade::trainer {

namespace {

// "model.layers.<l>.<rest>" -> l; anything else -> -1 (the root unit).
int64_t layer_of(const std::string& name) {
  const std::string prefix = "model.layers.";
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const size_t dot = name.find('.', prefix.size());
  return std::stoll(name.substr(prefix.size(), dot - prefix.size()));
}

}  // namespace

ParameterShards::ParameterShards(policy::Transformer model, const DistributedContext& dist,
                                 c10::optional<torch::Device> device, bool prefetch)
    : dist_(dist), prefetch_enabled_(prefetch) {
  const int64_t layers = model->config().num_hidden_layers;
  units_.resize(static_cast<size_t>(1 + layers));
  for (const auto& item : model->named_parameters()) {
    const torch::Tensor& p = item.value();
    const size_t i = params_.size();
    if (!p.is_contiguous() || p.scalar_type() != torch::kFloat)
      throw Error("sharding full: parameter " + item.key() + " must be a contiguous float32 tensor (is " +
                  std::string(c10::toString(p.scalar_type())) + (p.is_contiguous() ? "" : ", non-contiguous") + ")");
    const int64_t l = layer_of(item.key());
    if (l >= layers) throw Error("sharding full: parameter " + item.key() + " names a layer the model does not have");
    Unit& u = units_[static_cast<size_t>(l + 1)];
    u.params.push_back(i);
    u.offsets.push_back(u.numel);
    u.numel += p.numel();
    params_.push_back(p);
    names_.push_back(item.key());
    shapes_.push_back(p.sizes().vec());
    numels_.push_back(p.numel());
  }
  const int world = dist.world_size(), rank = dist.rank();
  for (Unit& u : units_) {
    u.chunk = (u.numel + world - 1) / world;
    const int64_t begin = std::min(u.numel, u.chunk * rank), end = std::min(u.numel, u.chunk * (rank + 1));
    u.owned = end - begin;
    u.shard_offset = shard_size_;
    shard_size_ += u.owned;
    for (size_t k = 0; k < u.params.size(); ++k) {  // the owned range's parts, parameter by parameter
      const int64_t lo = std::max(begin, u.offsets[k]), hi = std::min(end, u.offsets[k] + numels_[u.params[k]]);
      if (lo < hi) pieces_.push_back({u.params[k], lo - u.offsets[k], u.shard_offset + lo - begin, hi - lo});
    }
  }
  const torch::TensorOptions f32 = torch::TensorOptions().dtype(torch::kFloat).device(
      device ? *device : params_.empty() ? torch::Device(torch::kCPU) : params_[0].device());
  shard_ = torch::empty({shard_size_}, f32);
  torch::NoGradGuard no_grad;
  for (const Piece& pc : pieces_)
    shard_.narrow(0, pc.shard_offset, pc.len).copy_(params_[pc.param].view({-1}).narrow(0, pc.param_offset, pc.len));
  for (Unit& u : units_) {
    u.gathered = true;  // the module's full tensors, until now
    release(u);
  }
  has_gradient_.assign(params_.size(), false);
}

torch::Tensor ParameterShards::mine_padded(const Unit& u) const {
  torch::NoGradGuard no_grad;
  torch::Tensor mine = torch::zeros({u.chunk}, shard_.options());
  mine.narrow(0, 0, u.owned).copy_(shard_.narrow(0, u.shard_offset, u.owned));
  return mine;
}

torch::Tensor ParameterShards::gather_unit_flat(const Unit& u) const {
  torch::NoGradGuard no_grad;
  return torch::cat(dist_.all_gather_tensors(mine_padded(u))).narrow(0, 0, u.numel);
}

void ParameterShards::drain_prefetch() {
  if (!prefetch_.valid()) return;
  prefetch_.wait();
  gathered_ = std::max<int64_t>(0, gathered_ - 4 * units_[prefetch_unit_].chunk * dist_.world_size());
}

void ParameterShards::gather(size_t unit) {
  Unit& u = units_.at(unit);
  if (u.gathered) return;
  torch::Tensor flat;
  if (prefetch_.valid() && prefetch_unit_ == unit) {
    torch::NoGradGuard no_grad;
    flat = torch::cat(prefetch_.wait()).narrow(0, 0, u.numel);
    gathered_ = std::max<int64_t>(0, gathered_ - 4 * u.chunk * dist_.world_size());
    ++prefetched_;
  } else {
    drain_prefetch();  // started for a unit that did not come next: waited for (every rank alike), dropped
    flat = gather_unit_flat(u);
  }
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < u.params.size(); ++k) {
    const size_t i = u.params[k];
    params_[i].set_data(flat.narrow(0, u.offsets[k], numels_[i]).view(shapes_[i]));
  }
  u.gathered = true;
  gathered_ += 4 * u.numel;
  peak_gathered_ = std::max(peak_gathered_, gathered_);
  if (unit == 0 || !prefetch_enabled_) return;
  // The next layer in this pass's direction: forward when this layer is the first or lies past the
  // previous one, else backward (the recomputation runs the layers in reverse, starting with the last).
  const bool forward = unit == 1 || unit > last_layer_unit_;
  last_layer_unit_ = unit;
  const size_t next = forward ? unit + 1 : unit - 1;
  if (next < 1 || next >= units_.size() || units_[next].gathered) return;
  prefetch_ = dist_.all_gather_start(mine_padded(units_[next]));
  prefetch_unit_ = next;
  gathered_ += 4 * units_[next].chunk * dist_.world_size();
  peak_gathered_ = std::max(peak_gathered_, gathered_);
}

void ParameterShards::release(Unit& u) {
  if (!u.gathered) return;
  torch::NoGradGuard no_grad;
  for (size_t i : u.params) {
    params_[i].mutable_grad() = torch::Tensor();
    params_[i].set_data(torch::empty({0}, shard_.options()));
  }
  // Autocast caches its bf16 copy of each weight until the outermost autocast region ends (the whole
  // micro-batch's forward): dropped here, so they go with the layer.
  at::autocast::clear_cache();
  u.gathered = false;
  gathered_ = std::max<int64_t>(0, gathered_ - 4 * u.numel);
}

void ParameterShards::reduce(const Unit& u, const std::vector<torch::Tensor>& grads) {
  if (!grad_sum_.defined())
    throw Error("sharding full: a gradient reached sharded weights outside an optimizer step (a frozen model's "
                "layers, or a backward after finish_gradients)");
  torch::NoGradGuard no_grad;
  const int world = dist_.world_size();
  torch::Tensor flat = torch::zeros({u.chunk * world}, shard_.options());
  for (size_t k = 0; k < u.params.size(); ++k) {
    const torch::Tensor& g = grads[k];
    if (!g.defined()) continue;  // no gradient here: zeros
    flat.narrow(0, u.offsets[k], numels_[u.params[k]]).copy_(g.reshape({-1}));
    has_gradient_[u.params[k]] = true;
  }
  const torch::Tensor sum = dist_.reduce_scatter(flat.split(u.chunk));
  grad_sum_.narrow(0, u.shard_offset, u.owned).add_(sum.narrow(0, 0, u.owned));
}

void ParameterShards::begin_step() {
  if (in_step_) return;
  in_step_ = true;
  grad_sum_ = torch::zeros({shard_size_}, shard_.options());
  std::fill(has_gradient_.begin(), has_gradient_.end(), false);
  gather(0);
}

torch::Tensor ParameterShards::finish_gradients(std::vector<bool>& has_gradient) {
  if (!in_step_) throw Error("sharding full: finish_gradients without begin_step");
  Unit& root = units_[0];
  std::vector<torch::Tensor> grads;
  for (size_t i : root.params) grads.push_back(params_[i].grad());
  reduce(root, grads);
  grads.clear();
  release(root);
  drain_prefetch();
  in_step_ = false;
  has_gradient = has_gradient_;
  return std::move(grad_sum_);
}

void ParameterShards::idle_forward() {
  for (size_t l = 1; l < units_.size(); ++l) {
    gather(l);
    release(units_[l]);
  }
}

void ParameterShards::idle_micro_batch() {
  idle_forward();
  idle_backward();
}

void ParameterShards::idle_backward() {
  for (size_t l = units_.size(); l-- > 1;) {
    gather(l);
    reduce(units_[l], std::vector<torch::Tensor>(units_[l].params.size()));
    release(units_[l]);
  }
}

void ParameterShards::gather_into(const std::vector<torch::Tensor>& into) const {
  if (into.size() != params_.size())
    throw Error("sharding full: gather_into got " + std::to_string(into.size()) + " tensors for " +
                std::to_string(params_.size()) + " parameters");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < into.size(); ++i) {
    if (into[i].numel() == 0 && numels_[i] != 0) {
      torch::Tensor t = into[i];  // released (empty): allocated again
      t.set_data(torch::empty(shapes_[i], into[i].options()));
    } else if (into[i].sizes().vec() != shapes_[i]) {
      throw Error("sharding full: gather_into: tensor " + std::to_string(i) + " has the wrong shape");
    }
  }
  gather_each([&](size_t i, const std::string&, const torch::Tensor& values) { into[i].copy_(values); });
}

void ParameterShards::gather_each(const ParameterVisitor& visit) const {
  if (prefetch_.valid())
    throw Error("sharding full: gather_each during a step (a layer prefetch is pending): call it between steps");
  torch::NoGradGuard no_grad;
  for (const Unit& u : units_) {
    const torch::Tensor flat = gather_unit_flat(u);
    for (size_t k = 0; k < u.params.size(); ++k) {
      const size_t i = u.params[k];
      visit(i, names_[i], flat.narrow(0, u.offsets[k], numels_[i]).view(shapes_[i]));
    }
  }
}

void ParameterShards::begin_forwards() {
  in_step_ = true;
  gather(0);
}

void ParameterShards::end_forwards() {
  drain_prefetch();
  release(units_[0]);
  in_step_ = false;
}

void ParameterShards::begin_forward() {
  if (!in_step_)
    throw Error("the model's weights are sharded over " + std::to_string(dist_.world_size()) +
                " data-parallel ranks (distributed.sharding full): it runs forward only inside an optimizer step "
                "(grpo_update), on every rank at once; sampling and scoring use a whole copy of the weights");
}

void ParameterShards::gather_layer(size_t layer) {
  if (!in_step_) begin_forward();  // throws: outside a step
  gather(layer + 1);
}

void ParameterShards::release_layer(size_t layer) { release(units_.at(layer + 1)); }

void ParameterShards::layer_gradients(size_t layer, const std::vector<torch::Tensor>& params,
                                      const std::vector<torch::Tensor>& grads) {
  const Unit& u = units_.at(layer + 1);
  std::unordered_map<const c10::TensorImpl*, size_t> slot;
  for (size_t k = 0; k < u.params.size(); ++k) slot[params_[u.params[k]].unsafeGetTensorImpl()] = k;
  std::vector<torch::Tensor> ordered(u.params.size());
  for (size_t j = 0; j < params.size() && j < grads.size(); ++j) {
    const auto it = slot.find(params[j].unsafeGetTensorImpl());
    if (it == slot.end())
      throw Error("sharding full: layer " + std::to_string(layer) + " handed over a gradient for a tensor that is not "
                  "one of its parameters");
    ordered[it->second] = grads[j];
  }
  reduce(u, ordered);
}

std::shared_ptr<ParameterShards> shard_frozen_model(policy::Transformer model, const DistributedContext& dist,
                                                    c10::optional<torch::Device> device) {
  auto shards = std::make_shared<ParameterShards>(model, dist, device, /*prefetch=*/true);
  model->set_weights_provider(shards);
  return shards;
}

void release_parameters(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor t : tensors) t.set_data(torch::empty({0}, t.options()));
}

}  // namespace spade::trainer
