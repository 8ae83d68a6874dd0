#include "trainer/chunked_logprobs.h"

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct ChunkedLogprob : public torch::autograd::Function<ChunkedLogprob> {
  // Outputs: logp [n] and entropy [n] in the compute dtype (float32; float64 for float64 hidden).
  static tensor_list forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                             const torch::Tensor& targets, const torch::Tensor& temperature, int64_t chunk) {
    const int64_t n = hidden.size(0);
    const c10::ScalarType ct = hidden.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
    auto opts = hidden.options().dtype(ct);
    // Under autocast (train.autocast=bf16) the matmuls below run in the autocast dtype; backward, which
    // runs outside the autocast scope, casts to the same dtype itself so its recomputed logits equal
    // these and its gradient matmuls run at the same precision (as autograd would for an autocast matmul).
    // Autocast leaves float64 alone, and so does this.
    const c10::DeviceType dev = hidden.device().type();
    const bool autocast = ct != torch::kFloat64 && (dev == c10::DeviceType::CPU || dev == c10::DeviceType::CUDA) &&
                          compat::autocast_enabled(dev);
    ctx->saved_data["mm_dtype"] =
        static_cast<int64_t>(autocast ? compat::autocast_dtype(dev) : hidden.scalar_type());
    torch::Tensor logp = torch::empty({n}, opts), lse = torch::empty({n}, opts), mean_z = torch::empty({n}, opts),
                  entropy = torch::empty({n}, opts);
    // Per chunk, two [m, V] buffers: the logits z and e = exp(z - max), each updated in place, one exp
    // pass (logsumexp and the entropy's softmax share it): lse = max + log(sum e),
    // E_p[z] = sum(e * z) / sum(e) with p = e / sum(e), and H = lse - E_p[z] = -sum p log p.
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t m = std::min(chunk, n - s);
      torch::Tensor z = torch::matmul(hidden.narrow(0, s, m), weight.t()).to(ct);
      z.div_(temperature.narrow(0, s, m).unsqueeze(1));
      const torch::Tensor zmax = std::get<0>(z.max(-1, /*keepdim=*/true));
      torch::Tensor e = (z - zmax).exp_();
      const torch::Tensor sum_e = e.sum(-1);
      const torch::Tensor l = zmax.squeeze(1) + sum_e.log();
      const torch::Tensor ez = e.mul_(z).sum(-1) / sum_e;
      lse.narrow(0, s, m).copy_(l);
      mean_z.narrow(0, s, m).copy_(ez);
      logp.narrow(0, s, m).copy_(z.gather(-1, targets.narrow(0, s, m).unsqueeze(1)).squeeze(1) - l);
      entropy.narrow(0, s, m).copy_(l - ez);
    }
    ctx->save_for_backward({hidden, weight, targets, temperature, lse, mean_z});
    ctx->saved_data["chunk"] = chunk;
    // An output nobody differentiated (the detached entropy metric) arrives undefined in backward,
    // not as zeros, so its term is skipped.
    ctx->set_materialize_grads(false);
    return {logp, entropy};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &hidden = saved[0], &weight = saved[1], &targets = saved[2], &temperature = saved[3],
                        &lse = saved[4], &mean_z = saved[5];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const auto mm = static_cast<c10::ScalarType>(ctx->saved_data["mm_dtype"].toInt());
    const c10::ScalarType ct = lse.scalar_type();
    const torch::Tensor &g = grad_outputs[0], &g_ent = grad_outputs[1];  // dL/dlogp, dL/dH [n]; may be undefined
    if (!g.defined() && !g_ent.defined())
      return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    // No copy unless autocast: then one bf16 copy of the [V, H] output projection per backward
    // (Qwen3-4B: 0.78 GB, freed at the end), outside autocast's own weight cache; the forward made
    // the same copy under autocast.
    const torch::Tensor w = weight.to(mm);
    const int64_t n = hidden.size(0);
    torch::Tensor grad_hidden = torch::empty_like(hidden);
    torch::Tensor grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(ct));
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t m = std::min(chunk, n - s);
      torch::Tensor h = hidden.narrow(0, s, m), tau = temperature.narrow(0, s, m).unsqueeze(1);
      torch::Tensor l = lse.narrow(0, s, m).unsqueeze(1);
      torch::Tensor gm = g.defined() ? g.narrow(0, s, m).unsqueeze(1) : torch::Tensor();
      // dL/dz (header), built in place in the recomputed logits' buffer.
      torch::Tensor dz = torch::matmul(h.to(mm), w.t()).to(ct);
      dz.div_(tau);
      if (g_ent.defined()) {
        // -p * (g + gH * (z - E_p[z])): p needs its own buffer (one exp pass), z becomes the factor.
        const torch::Tensor p = (dz - l).exp_();
        dz.sub_(mean_z.narrow(0, s, m).unsqueeze(1)).mul_(g_ent.narrow(0, s, m).unsqueeze(1));
        if (gm.defined()) dz.add_(gm);
        dz.mul_(p).neg_();
      } else {
        dz.sub_(l).exp_().mul_(-gm);  // -softmax * g
      }
      if (gm.defined()) dz.scatter_add_(1, targets.narrow(0, s, m).unsqueeze(1), gm);  // + onehot * g
      dz = dz.div_(tau).to(mm);
      grad_hidden.narrow(0, s, m).copy_(torch::matmul(dz, w));
      grad_weight.add_(torch::matmul(dz.t(), h.to(mm)).to(ct));
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
                                     int64_t chunk_rows, torch::Tensor* entropy, bool entropy_grad) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "chunked_token_logprobs: hidden [N,H] and weight [V,H] expected");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0) && temperature.numel() == hidden.size(0),
              "chunked_token_logprobs: targets and temperature must be [N]");
  TORCH_CHECK(chunk_rows >= 1, "chunked_token_logprobs: chunk_rows must be >= 1, got ", chunk_rows);
  const bool f64 = hidden.scalar_type() == torch::kFloat64;
  TORCH_CHECK(!f64 || weight.scalar_type() == torch::kFloat64,
              "chunked_token_logprobs: float64 hidden needs a float64 weight, got ", weight.scalar_type());
  tensor_list out = ChunkedLogprob::apply(hidden, weight, targets.to(torch::kLong),
                                          temperature.to(f64 ? torch::kFloat64 : torch::kFloat32).reshape({-1}),
                                          chunk_rows);
  if (entropy) *entropy = entropy_grad ? out[1] : out[1].detach();
  return out[0];
}

}  // namespace spade::trainer
