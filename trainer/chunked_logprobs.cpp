#include "trainer/chunked_logprobs.h"

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct ChunkedLogprob : public torch::autograd::Function<ChunkedLogprob> {
  static tensor_list forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                             const torch::Tensor& targets, const torch::Tensor& temperature, int64_t chunk) {
    const int64_t n = hidden.size(0);
    auto f32 = hidden.options().dtype(torch::kFloat32);
    // Under autocast (train.autocast=bf16) the matmuls below run in the autocast dtype; backward, which
    // runs outside the autocast scope, casts to the same dtype itself so its recomputed logits equal
    // these and its gradient matmuls run at the same precision (as autograd would for an autocast matmul).
    const c10::DeviceType dev = hidden.device().type();
    const bool autocast = (dev == c10::DeviceType::CPU || dev == c10::DeviceType::CUDA) && compat::autocast_enabled(dev);
    ctx->saved_data["mm_dtype"] =
        static_cast<int64_t>(autocast ? compat::autocast_dtype(dev) : hidden.scalar_type());
    torch::Tensor logp = torch::empty({n}, f32), lse = torch::empty({n}, f32), entropy = torch::empty({n}, f32);
    // Per chunk, two [m, V] buffers: the logits z and e = exp(z - max), each updated in place, one exp
    // pass (logsumexp and the entropy's softmax share it): lse = max + log(sum e) and
    // entropy = lse - sum(e * z) / sum(e), which is H = -sum p log p with p = e / sum(e).
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t m = std::min(chunk, n - s);
      torch::Tensor z = torch::matmul(hidden.narrow(0, s, m), weight.t()).to(torch::kFloat32);
      z.div_(temperature.narrow(0, s, m).unsqueeze(1));
      const torch::Tensor zmax = std::get<0>(z.max(-1, /*keepdim=*/true));
      torch::Tensor e = (z - zmax).exp_();
      const torch::Tensor sum_e = e.sum(-1);
      const torch::Tensor l = zmax.squeeze(1) + sum_e.log();
      lse.narrow(0, s, m).copy_(l);
      logp.narrow(0, s, m).copy_(z.gather(-1, targets.narrow(0, s, m).unsqueeze(1)).squeeze(1) - l);
      entropy.narrow(0, s, m).copy_(l - e.mul_(z).sum(-1) / sum_e);
    }
    ctx->save_for_backward({hidden, weight, targets, temperature, lse});
    ctx->saved_data["chunk"] = chunk;
    ctx->mark_non_differentiable({entropy});
    return {logp, entropy};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &hidden = saved[0], &weight = saved[1], &targets = saved[2], &temperature = saved[3],
                        &lse = saved[4];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const auto mm = static_cast<c10::ScalarType>(ctx->saved_data["mm_dtype"].toInt());
    // No copy unless autocast: then one bf16 copy of the [V, H] output projection per backward
    // (Qwen3-4B: 0.78 GB, freed at the end), outside autocast's own weight cache; the forward made
    // the same copy under autocast.
    const torch::Tensor w = weight.to(mm);
    const torch::Tensor g = grad_outputs[0].defined() ? grad_outputs[0] : torch::zeros_like(lse);
    const int64_t n = hidden.size(0);
    torch::Tensor grad_hidden = torch::empty_like(hidden);
    torch::Tensor grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32));
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t m = std::min(chunk, n - s);
      torch::Tensor h = hidden.narrow(0, s, m), tau = temperature.narrow(0, s, m).unsqueeze(1);
      // dz = (onehot - softmax) * g / tau, built in place in the recomputed logits' buffer.
      torch::Tensor dz = torch::matmul(h.to(mm), w.t()).to(torch::kFloat32);
      torch::Tensor gm = g.narrow(0, s, m).unsqueeze(1);
      dz.div_(tau).sub_(lse.narrow(0, s, m).unsqueeze(1)).exp_().mul_(-gm);  // -softmax * g
      dz.scatter_add_(1, targets.narrow(0, s, m).unsqueeze(1), gm);           // + onehot * g
      dz = dz.div_(tau).to(mm);
      grad_hidden.narrow(0, s, m).copy_(torch::matmul(dz, w));
      grad_weight.add_(torch::matmul(dz.t(), h.to(mm)).to(torch::kFloat32));
    }
    return {grad_hidden, grad_weight.to(weight.scalar_type()), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor lm_head_weight(policy::Transformer& model) {
  torch::OrderedDict<std::string, torch::Tensor> params = model->named_parameters();
  for (const char* name : {"lm_head.weight", "model.embed_tokens.weight"})
    if (const torch::Tensor* w = params.find(name)) return *w;
  throw Error("lm_head_weight: the model has neither lm_head.weight nor model.embed_tokens.weight");
}

torch::Tensor chunked_token_logprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, const torch::Tensor& temperature,
                                     int64_t chunk_rows, torch::Tensor* entropy) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "chunked_token_logprobs: hidden [N,H] and weight [V,H] expected");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0) && temperature.numel() == hidden.size(0),
              "chunked_token_logprobs: targets and temperature must be [N]");
  TORCH_CHECK(chunk_rows >= 1, "chunked_token_logprobs: chunk_rows must be >= 1");
  tensor_list out = ChunkedLogprob::apply(hidden, weight, targets.to(torch::kLong),
                                          temperature.to(torch::kFloat32).reshape({-1}), chunk_rows);
  if (entropy) *entropy = out[1];
  return out[0];
}

}  // namespace spade::trainer
