#include "trainer/sharded_optimizer.h"

#include <torch/torch.h>

#include <cmath>

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

ShardedAdamW::ShardedAdamW(std::vector<torch::Tensor> params, const torch::optim::AdamWOptions& options,
                           const DistributedContext& dist, Sharding mode)
    : torch::optim::Optimizer(params, std::make_unique<torch::optim::AdamWOptions>(options)),
      dist_(dist),
      mode_(mode) {
  if (mode == Sharding::None) throw Error("ShardedAdamW: sharding mode none (use torch::optim::AdamW)");
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
  steps_.assign(params.size(), 0);
  has_grad_.assign(params.size(), false);
  const torch::TensorOptions f32 =
      torch::TensorOptions().dtype(torch::kFloat).device(params.empty() ? torch::Device(torch::kCPU) : params[0].device());
  exp_avg_ = torch::zeros({shard_.size()}, f32);
  exp_avg_sq_ = torch::zeros({shard_.size()}, f32);
}

double ShardedAdamW::reduce_and_clip_gradients(double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor>& params = param_groups_[0].params();
  // Which tensors take part: those with a gradient on some rank, or in an earlier step of this
  // process (torch's zero_grad keeps a zeroed gradient, so AdamW keeps stepping such a tensor).
  std::vector<double> has(params.size());
  for (size_t i = 0; i < params.size(); ++i) has[i] = params[i].grad().defined() || has_grad_[i] ? 1.0 : 0.0;
  has = dist_.all_reduce_max(has);
  for (size_t i = 0; i < params.size(); ++i) has_grad_[i] = has[i] != 0.0;
  const torch::TensorOptions f32 = exp_avg_.options();
  if (mode_ == Sharding::Optimizer) {
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
    torch::Tensor p = param_slice(params[pc.param], pc.param_offset, pc.len);
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

}  // namespace spade::trainer
