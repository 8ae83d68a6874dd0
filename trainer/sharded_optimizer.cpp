#include "trainer/sharded_optimizer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "common/error.h"

namespace spade::trainer {

namespace {

// Calls fn(param index, offset in the parameter, offset in the range, length) for every part of the
// flat range [begin, end) (flat layout: the parameters' numels in order).
template <class Fn>
void for_each_part(const std::vector<int64_t>& numels, int64_t begin, int64_t end, Fn&& fn) {
  int64_t at = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    const int64_t lo = std::max(begin, at), hi = std::min(end, at + numels[i]);
    if (lo < hi) fn(i, lo - at, lo - begin, hi - lo);
    at += numels[i];
  }
}

// A flat view of elements [offset, offset + len) of parameter `p` (shares its storage).
torch::Tensor param_slice(const torch::Tensor& p, int64_t offset, int64_t len) {
  return p.detach().view({-1}).narrow(0, offset, len);
}

}  // namespace

// The post-hook on a parameter's gradient accumulator (AccumulateGrad): runs after the gradient of
// this backward was added into .grad, as torch DDP's reducer hooks do.
struct GradientArrived : torch::autograd::FunctionPostHook {
  GradientArrived(ShardedAdamW* o, size_t p) : owner(o), param(p) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    owner->gradient_arrived(param);
    return outputs;
  }
  ShardedAdamW* owner;
  size_t param;
};

ShardedAdamW::ShardedAdamW(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options,
                           const DistributedContext& dist, Sharding mode)
    : torch::optim::Optimizer(params, std::make_unique<torch::optim::AdamWOptions>(options)),
      dist_(dist),
      mode_(mode) {
  if (mode == Sharding::None) throw Error("ShardedAdamW: sharding mode none (use torch::optim::AdamW)");
  if (mode == Sharding::Full) throw Error("ShardedAdamW: sharding mode full takes the model (its units)");
  if (options.amsgrad()) throw Error("ShardedAdamW: amsgrad is not supported");
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    if (!p.is_contiguous() || p.scalar_type() != torch::kFloat)
      throw Error("ShardedAdamW: parameter " + std::to_string(i) + " must be a contiguous float32 tensor (is " +
                  std::string(c10::toString(p.scalar_type())) + (p.is_contiguous() ? "" : ", non-contiguous") + ")");
    numels_.push_back(p.numel());
    total_ += p.numel();
  }
  shard_ = shard_range(total_, dist.rank(), dist.world_size());
  for_each_part(numels_, shard_.begin, shard_.end, [&](size_t i, int64_t po, int64_t so, int64_t len) {
    pieces_.push_back({i, po, so, len});
  });
  init_state(params);
  if (mode != Sharding::Gradients) return;
  // Buckets of consecutive parameters in reverse order, at most bucket_bytes of float32 each.
  const int64_t cap_bytes = std::max<int64_t>(dist.bucket_bytes(), 1);
  bucket_of_.assign(params.size(), 0);
  for (size_t k = params.size(); k-- > 0;) {
    if (buckets_.empty() || (buckets_.back().end - buckets_.back().begin + numels_[k]) * 4 > cap_bytes)
      buckets_.push_back({{}, offsets_[k], offsets_[k] + numels_[k]});
    Bucket& b = buckets_.back();
    b.params.push_back(k);
    b.begin = offsets_[k];
    bucket_of_[k] = buckets_.size() - 1;
  }
  pending_.assign(buckets_.size(), 0);
  arrived_.assign(params.size(), false);
  arrived_in_step_.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad()) continue;
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params[i]);
    if (!acc) continue;
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<GradientArrived>(this, i)));
    accumulators_.push_back(std::move(acc));
    hooked_params_.push_back(i);
  }
}

ShardedAdamW::ShardedAdamW(policy::Transformer model, const torch::optim::AdamWOptions& options,
                           const DistributedContext& dist, c10::optional<torch::Device> device, bool prefetch)
    : torch::optim::Optimizer(model->parameters(), std::make_unique<torch::optim::AdamWOptions>(options)),
      dist_(dist),
      mode_(Sharding::Full),
      model_(model) {
  if (options.amsgrad()) throw Error("ShardedAdamW: amsgrad is not supported");
  const std::vector<torch::Tensor> params = model->parameters();
  for (const torch::Tensor& p : params) {
    numels_.push_back(p.numel());
    total_ += p.numel();
  }
  shards_ = std::make_shared<ParameterShards>(model, dist, device, prefetch);  // checks the parameters, empties them
  pieces_ = shards_->pieces();
  shard_ = {0, shards_->shard_size()};
  init_state(params);
  model->set_weights_provider(shards_);
}

void ShardedAdamW::init_state(const std::vector<torch::Tensor>& params) {
  steps_.assign(params.size(), 0);
  has_grad_.assign(params.size(), false);
  const torch::TensorOptions f32 =
      torch::TensorOptions().dtype(torch::kFloat).device(params.empty() ? torch::Device(torch::kCPU) : params[0].device());
  exp_avg_ = torch::zeros({shard_.size()}, f32);
  exp_avg_sq_ = torch::zeros({shard_.size()}, f32);
  int64_t at = 0;
  for (int64_t n : numels_) {
    offsets_.push_back(at);
    at += n;
  }
}

ShardedAdamW::~ShardedAdamW() {
  if (model_) model_->set_weights_provider(nullptr);
  for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hook_keys_[k]);
}

void ShardedAdamW::begin_backward_reduction() {
  if (mode_ != Sharding::Gradients) return;
  torch::NoGradGuard no_grad;
  // zero_grad keeps zero-filled .grad tensors (LibTorch 1.13): released, so the full gradients held
  // during backward are only those not yet reduced.
  std::vector<torch::Tensor>& params = param_groups_[0].params();
  for (torch::Tensor& p : params) p.mutable_grad() = torch::Tensor();
  // A parameter's accumulator can be replaced after construction (loading a checkpoint with
  // torch::load sets the tensor's data, after which autograd makes a new AccumulateGrad): move the hook.
  for (size_t k = 0; k < accumulators_.size(); ++k) {
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params[hooked_params_[k]]);
    if (acc == accumulators_[k]) continue;
    accumulators_[k]->del_post_hook(hook_keys_[k]);
    hook_keys_[k] = acc->add_post_hook(std::make_unique<GradientArrived>(this, hooked_params_[k]));
    accumulators_[k] = std::move(acc);
  }
  armed_ = true;
  grad_sum_ = torch::zeros({shard_.size()}, exp_avg_.options());
  std::fill(arrived_in_step_.begin(), arrived_in_step_.end(), false);
  std::fill(arrived_.begin(), arrived_.end(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  next_bucket_ = 0;
  live_grad_bytes_ = peak_live_grad_bytes_ = 0;
}

void ShardedAdamW::gradient_arrived(size_t param) {
  if (!armed_ || arrived_[param]) return;
  const torch::Tensor& g = param_groups_[0].params()[param].grad();
  if (g.defined()) {  // the engine also runs the accumulator for an undefined gradient: not a gradient
    arrived_in_step_[param] = true;
    live_grad_bytes_ += static_cast<int64_t>(g.nbytes());
    peak_live_grad_bytes_ = std::max(peak_live_grad_bytes_, live_grad_bytes_);
  }
  mark_arrived(param);
}

void ShardedAdamW::mark_arrived(size_t param) {
  arrived_[param] = true;
  --pending_[bucket_of_[param]];
  while (next_bucket_ < buckets_.size() && pending_[next_bucket_] == 0) reduce_bucket(next_bucket_++);
}

void ShardedAdamW::expect_gradients_from(const torch::Tensor& loss) {
  if (!armed_) return;
  std::unordered_set<const torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  if (const std::shared_ptr<torch::autograd::Node>& fn = loss.grad_fn()) stack.push_back(fn.get());
  while (!stack.empty()) {
    torch::autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const torch::autograd::Edge& e : n->next_edges())
      if (e.function && !seen.count(e.function.get())) stack.push_back(e.function.get());
  }
  for (size_t k = 0; k < accumulators_.size(); ++k)
    if (!seen.count(accumulators_[k].get()) && !arrived_[hooked_params_[k]]) mark_arrived(hooked_params_[k]);
}

void ShardedAdamW::reduce_bucket(size_t b) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor>& params = param_groups_[0].params();
  const Bucket& bk = buckets_[b];
  torch::Tensor flat = torch::zeros({bk.end - bk.begin}, exp_avg_.options());
  for (size_t i : bk.params) {
    torch::Tensor& g = params[i].mutable_grad();
    if (!g.defined()) continue;  // no gradient here in this micro-batch: zeros
    flat.narrow(0, offsets_[i] - bk.begin, numels_[i]).copy_(g.reshape({-1}));
    if (arrived_in_step_[i] && arrived_[i]) live_grad_bytes_ -= static_cast<int64_t>(g.nbytes());
    g = torch::Tensor();
  }
  // Each owner's part of the bucket, reduced to it (owners ascending: the same sequence on every rank).
  const int world = dist_.world_size();
  for (int r = 0; r < world; ++r) {
    const FlatRange range = shard_range(total_, r, world);
    const int64_t lo = std::max(range.begin, bk.begin), hi = std::min(range.end, bk.end);
    if (lo >= hi) continue;
    torch::Tensor part = flat.narrow(0, lo - bk.begin, hi - lo);
    dist_.reduce(part, r);
    if (r == dist_.rank()) grad_sum_.narrow(0, lo - shard_.begin, hi - lo).add_(part);
  }
}

void ShardedAdamW::begin_step() {
  if (shards_) shards_->begin_step();
}

void ShardedAdamW::idle_forward() {
  if (shards_) shards_->idle_forward();
}

void ShardedAdamW::idle_micro_batch() {
  idle_forward();
  idle_backward();
}

void ShardedAdamW::idle_backward() {
  if (shards_) shards_->idle_backward();
  else end_micro_batch();  // Gradients: the buckets' reduction rounds, with zeros (a no-op otherwise)
}

void ShardedAdamW::gather_parameters_into(const std::vector<torch::Tensor>& into) const {
  if (!shards_)
    throw Error("ShardedAdamW::gather_parameters_into: the parameters are sharded only under sharding full (this "
                "optimizer's mode is " + sharding_name(mode_) + ": they are whole on every rank)");
  shards_->gather_into(into);
}

const ParameterShards& ShardedAdamW::parameter_shards() const {
  if (!shards_)
    throw Error("ShardedAdamW::parameter_shards: the parameters are sharded only under sharding full (this "
                "optimizer's mode is " + sharding_name(mode_) + ")");
  return *shards_;
}

int64_t ShardedAdamW::parameter_bytes() const { return shards_ ? shards_->shard_bytes() : 4 * total_; }

void ShardedAdamW::end_micro_batch() {
  if (!armed_) return;
  while (next_bucket_ < buckets_.size()) reduce_bucket(next_bucket_++);
  std::fill(arrived_.begin(), arrived_.end(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  next_bucket_ = 0;
}

double ShardedAdamW::reduce_and_clip_gradients(double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor>& params = param_groups_[0].params();
  // Which tensors take part: those with a gradient on some rank, or in an earlier step of this
  // process (torch's zero_grad keeps a zeroed gradient, so AdamW keeps stepping such a tensor).
  const bool reduced_in_backward = armed_;
  if (reduced_in_backward && std::any_of(arrived_.begin(), arrived_.end(), [](bool a) { return a; }))
    throw Error("ShardedAdamW: end_micro_batch() was not called after the last backward of this step");
  armed_ = false;
  // ZeRO-3: the layers were reduced during backward; the root's gradients now (ParameterShards).
  std::vector<bool> full_has;
  if (shards_) grad_sum_ = shards_->finish_gradients(full_has);
  std::vector<double> has(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    has[i] = params[i].grad().defined() || has_grad_[i] || (reduced_in_backward && arrived_in_step_[i]) ||
                     (shards_ && full_has[i])
                 ? 1.0
                 : 0.0;
  has = dist_.all_reduce_max(has);
  for (size_t i = 0; i < params.size(); ++i) has_grad_[i] = has[i] != 0.0;
  const torch::TensorOptions f32 = exp_avg_.options();
  if (reduced_in_backward || shards_) {
    // ZeRO-2 during backward: the buckets were reduced as they arrived (begin_backward_reduction);
    // ZeRO-3: each layer's as its backward ended, the root's just now.
    grad_ = grad_sum_;
    grad_sum_ = torch::Tensor();
  } else if (mode_ == Sharding::Optimizer) {
    // ZeRO-1: the full gradients are summed on every rank (bucketed, as plain data parallel does);
    // this rank keeps its range.
    dist_.all_reduce_gradients(params);
    grad_ = torch::zeros({shard_.size()}, f32);
    for (const Piece& pc : pieces_) {
      const torch::Tensor& g = params[pc.param].grad();
      if (g.defined()) grad_.narrow(0, pc.shard_offset, pc.len).copy_(g.reshape({-1}).narrow(0, pc.param_offset, pc.len));
    }
  } else {
    // ZeRO-2: the flat gradient (padded to N equal chunks) is reduce-scattered: rank r receives the
    // sum of chunk r only.
    const int world = dist_.world_size();
    const int64_t cap = shard_capacity(total_, world);
    torch::Tensor flat = torch::zeros({cap * world}, f32);
    int64_t at = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor& g = params[i].grad();
      if (g.defined()) flat.narrow(0, at, numels_[i]).copy_(g.reshape({-1}));
      params[i].mutable_grad() = torch::Tensor();  // released as it is copied: at most P + one tensor
      at += numels_[i];
    }
    std::vector<torch::Tensor> chunks = flat.split(std::max<int64_t>(cap, 1));
    chunks.resize(world, torch::zeros({cap}, f32));  // total 0: no elements to split
    grad_ = dist_.reduce_scatter(chunks).narrow(0, 0, shard_.size()).clone();
  }
  for (torch::Tensor& p : params) p.mutable_grad() = torch::Tensor();  // the shard's gradient is all that stays
  reduced_gradient_bytes_ = static_cast<int64_t>(grad_.nbytes());
  // The global L2 norm from the shards' squared norms (each element lives in exactly one shard).
  const double local_sq = grad_.numel() ? grad_.to(torch::kDouble).pow(2).sum().item<double>() : 0.0;
  const double norm = std::sqrt(dist_.all_reduce_sum({local_sq})[0]);
  if (max_norm > 0) {
    const double coef = max_norm / (norm + 1e-6);  // clip_grad_norm_'s coefficient, clamped at 1
    if (coef < 1.0) grad_.mul_(coef);
  }
  return norm;
}

torch::Tensor ShardedAdamW::step(LossClosure closure) {
  if (closure) throw Error("ShardedAdamW::step: closures are not supported");
  if (!grad_.defined())
    throw Error("ShardedAdamW::step: no reduced gradient (call reduce_and_clip_gradients after backward)");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor>& params = param_groups_[0].params();
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(param_groups_[0].options());
  const double lr = o.lr(), wd = o.weight_decay(), eps = o.eps();
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  for (size_t i = 0; i < params.size(); ++i)
    if (has_grad_[i]) ++steps_[i];  // every rank counts every tensor: the counts stay replicated
  // torch::optim::AdamW::step (LibTorch 1.13), op for op, on this rank's part of each tensor.
  for (const Piece& pc : pieces_) {
    if (!has_grad_[pc.param]) continue;
    torch::Tensor p = shards_ ? shards_->parameters().narrow(0, pc.shard_offset, pc.len)
                              : param_slice(params[pc.param], pc.param_offset, pc.len);
    if (wd != 0) p.mul_(1 - lr * wd);  // decoupled weight decay (Loshchilov & Hutter 2019, Alg. 2 line 12)
    const double t = static_cast<double>(steps_[pc.param]);
    const double bias_correction1 = 1 - std::pow(beta1, t);
    const double bias_correction2 = 1 - std::pow(beta2, t);
    torch::Tensor m = exp_avg_.narrow(0, pc.shard_offset, pc.len);
    torch::Tensor v = exp_avg_sq_.narrow(0, pc.shard_offset, pc.len);
    const torch::Tensor g = grad_.narrow(0, pc.shard_offset, pc.len);
    m.mul_(beta1).add_(g, 1 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1 - beta2);
    const torch::Tensor denom = (v.sqrt() / std::sqrt(bias_correction2)).add_(eps);
    p.addcdiv_(m, denom, -lr / bias_correction1);
  }
  grad_ = torch::Tensor();
  if (shards_) return {};  // ZeRO-3: the shards are the weights; a layer is gathered when it next runs
  // Every rank's updated range into every rank's parameters (padded to equal sizes for allgather).
  const int world = dist_.world_size();
  const int64_t cap = shard_capacity(total_, world);
  torch::Tensor mine = torch::zeros({cap}, exp_avg_.options());
  for (const Piece& pc : pieces_)
    mine.narrow(0, pc.shard_offset, pc.len).copy_(param_slice(params[pc.param], pc.param_offset, pc.len));
  const std::vector<torch::Tensor> all = dist_.all_gather_tensors(mine);
  for (int r = 0; r < world; ++r) {
    if (r == dist_.rank()) continue;  // updated in place above
    const FlatRange range = shard_range(total_, r, world);
    for_each_part(numels_, range.begin, range.end, [&](size_t i, int64_t po, int64_t so, int64_t len) {
      param_slice(params[i], po, len).copy_(all[r].narrow(0, so, len));
    });
  }
  return {};
}

void ShardedAdamW::save(torch::serialize::OutputArchive&) const {
  throw Error("ShardedAdamW: torch::save would keep only rank " + std::to_string(dist_.rank()) +
              "'s optimizer shard; checkpoints write one file per shard (trainer/checkpointing.h)");
}

void ShardedAdamW::load(torch::serialize::InputArchive&) {
  throw Error("ShardedAdamW: torch::load of a sharded optimizer is not supported; checkpoints read the "
              "per-shard files (trainer/checkpointing.h)");
}

int64_t ShardedAdamW::state_bytes() const {
  return static_cast<int64_t>(exp_avg_.nbytes() + exp_avg_sq_.nbytes());
}

int64_t ShardedAdamW::gradient_bytes() const { return reduced_gradient_bytes_; }

void ShardedAdamW::restore(const std::vector<int64_t>& steps, const torch::Tensor& exp_avg,
                           const torch::Tensor& exp_avg_sq) {
  if (steps.size() != steps_.size())
    throw Error("ShardedAdamW::restore: " + std::to_string(steps.size()) + " step counts for " +
                std::to_string(steps_.size()) + " parameter tensors");
  for (const torch::Tensor* t : {&exp_avg, &exp_avg_sq})
    if (t->dim() != 1 || t->size(0) != shard_.size())
      throw Error("ShardedAdamW::restore: a moment of " + std::to_string(t->numel()) + " elements for a shard of " +
                  std::to_string(shard_.size()));
  torch::NoGradGuard no_grad;
  steps_ = steps;
  exp_avg_.copy_(exp_avg.to(exp_avg_.device(), torch::kFloat));
  exp_avg_sq_.copy_(exp_avg_sq.to(exp_avg_sq_.device(), torch::kFloat));
}

int64_t adamw_state_bytes(const torch::optim::Optimizer& optimizer) {
  if (const auto* sharded = dynamic_cast<const ShardedAdamW*>(&optimizer)) return sharded->state_bytes();
  int64_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    const auto& adamw = static_cast<const torch::optim::AdamWParamState&>(*state);
    bytes += static_cast<int64_t>(adamw.exp_avg().nbytes() + adamw.exp_avg_sq().nbytes());
  }
  return bytes;
}

}  // namespace spade::trainer
