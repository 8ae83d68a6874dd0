#include "policy/transformer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::policy {

// ---------------------------------------------------------------------------------------------
// KVCache
// ---------------------------------------------------------------------------------------------

void KVCache::touch() {
  static std::atomic<uint64_t> next{1};
  version_ = next.fetch_add(1, std::memory_order_relaxed);
}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(size_t layer, const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  if (layer > k_.size()) throw spade::Error("KVCache::append: layers must be appended in order");
  if (layer == k_.size()) {
    k_.emplace_back();
    v_.emplace_back();
    lengths_.push_back(0);
  }
  const int64_t len = lengths_[layer], t = k.size(2), need = len + t;
  reserve(layer, need, k);
  torch::Tensor& kb = k_[layer];
  torch::Tensor& vb = v_[layer];
  kb.narrow(2, len, t).copy_(k);
  vb.narrow(2, len, t).copy_(v);
  lengths_[layer] = need;
  return {kb.narrow(2, 0, need), vb.narrow(2, 0, need)};
}

void KVCache::reserve(size_t layer, int64_t need, const torch::Tensor& like) {
  torch::Tensor& kb = k_[layer];
  torch::Tensor& vb = v_[layer];
  if (kb.defined() && kb.size(2) >= need) return;
  // Grow: capacity doubles so decoding one token at a time copies the history O(log S) times.
  const int64_t len = lengths_[layer];
  const int64_t cap = std::max<int64_t>(need, kb.defined() ? 2 * kb.size(2) : need + 64);
  auto grow = [&](const torch::Tensor& old) {
    auto fresh = torch::empty({like.size(0), like.size(1), cap, like.size(3)}, like.options());
    if (old.defined() && len > 0) fresh.narrow(2, 0, len).copy_(old.narrow(2, 0, len));
    return fresh;
  };
  kb = grow(kb);
  vb = grow(vb);
  touch();
}

KVCache::Column KVCache::append_column(size_t layer) {
  if (layer >= k_.size() || !k_[layer].defined())
    throw spade::Error("KVCache::append_column: layer " + std::to_string(layer) + " is not cached yet (" +
                       std::to_string(k_.size()) + " layers); append() the first tokens");
  reserve(layer, lengths_[layer] + 1, k_[layer]);
  lengths_[layer] += 1;
  return {k_[layer], v_[layer], lengths_[layer]};
}

int64_t KVCache::batch_size() const { return k_.empty() || !k_[0].defined() ? 0 : k_[0].size(0); }

void KVCache::select_rows(const torch::Tensor& rows) {
  for (size_t l = 0; l < k_.size(); ++l) {
    auto idx = rows.to(k_[l].device(), torch::kLong);
    k_[l] = k_[l].index_select(0, idx);
    v_[l] = v_[l].index_select(0, idx);
  }
  touch();
}

void KVCache::reallocate(int64_t front_pad, int64_t drop, int64_t capacity) {
  for (size_t l = 0; l < k_.size(); ++l) {
    const int64_t keep = lengths_[l] - drop;
    for (torch::Tensor* buf : {&k_[l], &v_[l]}) {
      auto fresh = torch::zeros({buf->size(0), buf->size(1), capacity, buf->size(3)}, buf->options());
      if (keep > 0) fresh.narrow(2, front_pad, keep).copy_(buf->narrow(2, drop, keep));
      *buf = fresh;
    }
    lengths_[l] = front_pad + keep;
  }
  touch();
}

void KVCache::left_pad(int64_t n) {
  if (n <= 0 || k_.empty()) return;
  reallocate(n, 0, length() + n + 64);
}

void KVCache::drop_front(int64_t n) {
  if (n <= 0 || k_.empty()) return;
  if (n > length()) throw spade::Error("KVCache::drop_front: cannot drop more columns than cached");
  reallocate(0, n, length() - n + 64);
}

void KVCache::append_rows(const KVCache& other) {
  if (other.k_.empty()) return;
  if (k_.empty()) {
    *this = other;  // shares other's storage, and so its version
    return;
  }
  if (other.k_.size() != k_.size() || other.length() != length())
    throw spade::Error("KVCache::append_rows: caches differ in layers or length (" + std::to_string(length()) +
                       " vs " + std::to_string(other.length()) + "); left_pad() the shorter one first");
  const int64_t len = length();
  for (size_t l = 0; l < k_.size(); ++l) {
    for (auto [buf, ob] : {std::make_pair(&k_[l], &other.k_[l]), std::make_pair(&v_[l], &other.v_[l])}) {
      auto fresh = torch::cat({buf->narrow(2, 0, len), ob->narrow(2, 0, len)}, 0);
      auto grown = torch::empty({fresh.size(0), fresh.size(1), len + 64, fresh.size(3)}, fresh.options());
      grown.narrow(2, 0, len).copy_(fresh);
      *buf = grown;
    }
  }
  touch();
}

void KVCache::write_row(int64_t row, const KVCache& src, int64_t src_row, int64_t offset) {
  const int64_t n = src.length();
  if (src.k_.size() != k_.size() || k_.empty())
    throw spade::Error("KVCache::write_row: caches differ in layers (" + std::to_string(k_.size()) + " vs " +
                       std::to_string(src.k_.size()) + ")");
  if (row < 0 || row >= batch_size() || src_row < 0 || src_row >= src.batch_size())
    throw spade::Error("KVCache::write_row: row " + std::to_string(row) + " of " + std::to_string(batch_size()) +
                       " or source row " + std::to_string(src_row) + " of " + std::to_string(src.batch_size()) +
                       " out of range");
  if (offset < 0 || offset + n > length())
    throw spade::Error("KVCache::write_row: " + std::to_string(n) + " columns at offset " + std::to_string(offset) +
                       " do not fit in " + std::to_string(length()));
  for (size_t l = 0; l < k_.size(); ++l) {
    for (auto [buf, sb] : {std::make_pair(&k_[l], &src.k_[l]), std::make_pair(&v_[l], &src.v_[l])}) {
      if (buf->size(1) != sb->size(1) || buf->size(3) != sb->size(3) || buf->scalar_type() != sb->scalar_type())
        throw spade::Error("KVCache::write_row: layer " + std::to_string(l) + " differs in kv heads, head_dim or dtype");
      torch::Tensor dst = buf->select(0, row);  // [kv_heads, capacity, head_dim]
      dst.narrow(1, 0, offset).zero_();
      dst.narrow(1, offset, n).copy_(sb->select(0, src_row).narrow(1, 0, n));
    }
  }
}

void KVCache::clear() {
  k_.clear();
  v_.clear();
  lengths_.clear();
  touch();
}

KVCache KVCache::gather_row(int64_t row, const torch::Tensor& columns) const {
  KVCache out;
  if (k_.empty()) return out;
  if (row < 0 || row >= batch_size())
    throw spade::Error("KVCache::gather_row: row " + std::to_string(row) + " out of range [0, " +
                       std::to_string(batch_size()) + ")");
  const int64_t c = columns.numel();
  for (size_t l = 0; l < k_.size(); ++l) {
    auto cols = columns.to(k_[l].device(), torch::kLong);
    for (auto [src, dst] : {std::make_pair(&k_[l], &out.k_), std::make_pair(&v_[l], &out.v_)}) {
      auto fresh = torch::empty({1, src->size(1), c + 64, src->size(3)}, src->options());
      fresh.narrow(2, 0, c).copy_(src->narrow(0, row, 1).index_select(2, cols));
      dst->push_back(fresh);
    }
    out.lengths_.push_back(c);
  }
  out.touch();
  return out;
}

KVCache KVCache::stack(const std::vector<const KVCache*>& parts, int64_t length) {
  KVCache out;
  const KVCache* like = nullptr;
  for (const KVCache* p : parts)
    if (p && !p->k_.empty()) {
      like = p;
      break;
    }
  if (!like) return out;
  int64_t rows = 0;
  for (const KVCache* p : parts) {
    if (!p || p->k_.empty()) {
      rows += 1;
      continue;
    }
    if (p->k_.size() != like->k_.size()) throw spade::Error("KVCache::stack: parts differ in layer count");
    if (p->length() > length)
      throw spade::Error("KVCache::stack: a part has " + std::to_string(p->length()) + " columns, more than " +
                         std::to_string(length));
    rows += p->batch_size();
  }
  for (size_t l = 0; l < like->k_.size(); ++l) {
    for (bool is_v : {false, true}) {
      const torch::Tensor& ref = is_v ? like->v_[l] : like->k_[l];
      auto fresh = torch::zeros({rows, ref.size(1), length + 64, ref.size(3)}, ref.options());
      int64_t r = 0;
      for (const KVCache* p : parts) {
        if (!p || p->k_.empty()) {
          r += 1;
          continue;
        }
        const torch::Tensor& src = is_v ? p->v_[l] : p->k_[l];
        const int64_t len = p->lengths_[l], b = src.size(0);
        if (len > 0) fresh.narrow(0, r, b).narrow(2, length - len, len).copy_(src.narrow(2, 0, len));
        r += b;
      }
      (is_v ? out.v_ : out.k_).push_back(fresh);
    }
    out.lengths_.push_back(length);
  }
  out.touch();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Numerics shared by forward and tests
// ---------------------------------------------------------------------------------------------

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  auto xf = x.to(torch::kFloat32);
  auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

torch::Tensor rope_inv_freq(const ModelConfig& c) {
  const int64_t d = c.head_size();
  // HF: 1.0 / (base ** (arange(0, dim, 2, int64).float() / dim)), all in float32.
  auto exponent = torch::arange(0, d, 2, torch::kLong).to(torch::kFloat32) / static_cast<double>(d);
  auto inv_freq = 1.0 / torch::pow(c.rope_theta, exponent);
  const RopeScaling& s = c.rope_scaling;
  if (s.rope_type == "llama3") {
    // HF _compute_llama3_parameters (Llama 3.1): long wavelengths divided by factor, short kept,
    // a linear blend in between.
    const double old_ctx = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old_ctx / s.low_freq_factor, high_wavelen = old_ctx / s.high_freq_factor;
    auto wavelen = 2 * M_PI / inv_freq;
    auto scaled = torch::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
    auto smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    auto smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    auto medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
    inv_freq = torch::where(medium, smoothed, scaled);
  }
  return inv_freq;
}

namespace {

// cos and sin of the RoPE angles, [B, 1, T, D] in `dtype`: angles positions * inv_freq in fp32,
// duplicated to D (HF: emb = cat(freqs, freqs)).
std::pair<torch::Tensor, torch::Tensor> rope_cos_sin(const torch::Tensor& positions, const torch::Tensor& inv_freq,
                                                     c10::ScalarType dtype) {
  auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq.to(positions.device()).view({1, 1, -1});
  auto emb = torch::cat({freqs, freqs}, -1).unsqueeze(1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);  // rotate_half
  return x * cos + rotated * sin;
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& positions, const torch::Tensor& inv_freq) {
  auto [cos, sin] = rope_cos_sin(positions, inv_freq, x.scalar_type());
  return rotate(x, cos, sin);
}

torch::Tensor token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets, double temperature) {
  TORCH_CHECK(temperature > 0, "token_logprobs: temperature must be > 0");
  auto logp = torch::log_softmax(logits.to(torch::kFloat32) / temperature, -1);
  return logp.gather(-1, targets.to(torch::kLong).unsqueeze(-1)).squeeze(-1);
}

torch::Tensor token_entropy(const torch::Tensor& logits, double temperature) {
  TORCH_CHECK(temperature > 0, "token_entropy: temperature must be > 0");
  auto logp = torch::log_softmax(logits.to(torch::kFloat32) / temperature, -1);
  return -(logp.exp() * logp).sum(-1);
}

// ---------------------------------------------------------------------------------------------
// Module construction: a tree of plain modules so named_parameters() yields HF names.
// ---------------------------------------------------------------------------------------------

namespace {

std::shared_ptr<torch::nn::Module> child(torch::nn::Module& parent, const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>());
}

torch::Tensor param(torch::nn::Module& m, const std::string& name, std::vector<int64_t> shape, double fill) {
  return m.register_parameter(name, torch::full(shape, fill, torch::kFloat32));
}

}  // namespace

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  config_.validate("TransformerImpl");
  const int64_t h = config_.hidden_size, d = config_.head_size();
  const int64_t nh = config_.num_attention_heads, kv = config_.kv_heads(), ff = config_.intermediate_size;
  auto model = child(*this, "model");
  embed_tokens_ = param(*child(*model, "embed_tokens"), "weight", {config_.vocab_size, h}, 0.0);
  auto layers = child(*model, "layers");
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    auto layer = child(*layers, std::to_string(i));
    LayerWeights w;
    w.input_norm = param(*child(*layer, "input_layernorm"), "weight", {h}, 1.0);
    auto attn = child(*layer, "self_attn");
    auto q = child(*attn, "q_proj"), k = child(*attn, "k_proj"), v = child(*attn, "v_proj"),
         o = child(*attn, "o_proj");
    w.q_proj = param(*q, "weight", {nh * d, h}, 0.0);
    w.k_proj = param(*k, "weight", {kv * d, h}, 0.0);
    w.v_proj = param(*v, "weight", {kv * d, h}, 0.0);
    w.o_proj = param(*o, "weight", {h, nh * d}, 0.0);
    if (config_.attention_bias) {
      w.q_bias = param(*q, "bias", {nh * d}, 0.0);
      w.k_bias = param(*k, "bias", {kv * d}, 0.0);
      w.v_bias = param(*v, "bias", {kv * d}, 0.0);
    }
    if (config_.o_proj_bias()) w.o_bias = param(*o, "bias", {h}, 0.0);
    if (config_.qk_norm) {
      w.q_norm = param(*child(*attn, "q_norm"), "weight", {d}, 1.0);
      w.k_norm = param(*child(*attn, "k_norm"), "weight", {d}, 1.0);
    }
    w.post_norm = param(*child(*layer, "post_attention_layernorm"), "weight", {h}, 1.0);
    auto mlp = child(*layer, "mlp");
    if (config_.is_moe_layer(i)) {
      const int64_t E = config_.num_experts, mf = config_.moe_intermediate_size;
      w.router = param(*child(*mlp, "gate"), "weight", {E, h}, 0.0);
      auto experts = child(*mlp, "experts");
      for (int64_t e = 0; e < E; ++e) {
        auto ex = child(*experts, std::to_string(e));
        w.expert_gate.push_back(param(*child(*ex, "gate_proj"), "weight", {mf, h}, 0.0));
        w.expert_up.push_back(param(*child(*ex, "up_proj"), "weight", {mf, h}, 0.0));
        w.expert_down.push_back(param(*child(*ex, "down_proj"), "weight", {h, mf}, 0.0));
      }
    } else {
      w.gate_proj = param(*child(*mlp, "gate_proj"), "weight", {ff, h}, 0.0);
      w.up_proj = param(*child(*mlp, "up_proj"), "weight", {ff, h}, 0.0);
      w.down_proj = param(*child(*mlp, "down_proj"), "weight", {h, ff}, 0.0);
    }
    layers_.push_back(w);
  }
  final_norm_ = param(*child(*model, "norm"), "weight", {h}, 1.0);
  // Tied: lm_head shares the embedding's storage (and is not a separate parameter / tensor name).
  lm_head_ = config_.tie_word_embeddings ? embed_tokens_
                                         : param(*child(*this, "lm_head"), "weight", {config_.vocab_size, h}, 0.0);
  inv_freq_ = rope_inv_freq(config_);
}

void TransformerImpl::init_weights(uint64_t seed, double std) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool is_norm = name.find("norm.weight") != std::string::npos;
    if (is_norm) {
      p.fill_(1.0);
    } else if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
      p.zero_();
    } else {
      auto w = torch::empty(p.sizes(), torch::kFloat32);
      w.normal_(0.0, std, gen);
      p.copy_(w);
    }
  }
}

torch::Tensor TransformerImpl::lm_head(const torch::Tensor& hidden) {
  return torch::matmul(hidden, lm_head_.t()).to(torch::kFloat32);
}

namespace {

// qwen3_moe sparse MLP (HF Qwen3MoeSparseMoeBlock): h [B, T, hidden] -> [B, T, hidden].
torch::Tensor moe_mlp(const torch::Tensor& h, const TransformerImpl::LayerWeights& w, const ModelConfig& c) {
  const int64_t H = h.size(-1), k = c.num_experts_per_tok;
  auto x = h.reshape({-1, H});                                             // [N, hidden]
  auto probs = torch::softmax(torch::linear(x, w.router), -1, torch::kFloat32);  // [N, experts] fp32
  auto [top_p, top_i] = probs.topk(k, -1);                                 // [N, k], descending
  if (c.norm_topk_prob) top_p = top_p / top_p.sum(-1, /*keepdim=*/true);
  top_p = top_p.to(x.scalar_type());
  // Rows routed to each expert (host side: one pass over the N x k choices).
  auto idx = top_i.to(torch::kCPU).contiguous();
  const int64_t* ip = idx.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> rows(c.num_experts), slots(c.num_experts);
  for (int64_t n = 0; n < idx.size(0); ++n)
    for (int64_t j = 0; j < k; ++j) {
      rows[ip[n * k + j]].push_back(n);
      slots[ip[n * k + j]].push_back(n * k + j);
    }
  auto out = torch::zeros_like(x);
  auto flat_p = top_p.reshape({-1});
  const auto i64 = torch::TensorOptions().dtype(torch::kLong).device(x.device());
  for (int64_t e = 0; e < c.num_experts; ++e) {  // expert order, as HF's index_add_ loop
    if (rows[e].empty()) continue;
    auto r = torch::tensor(rows[e], torch::kLong).to(i64.device());
    auto xe = x.index_select(0, r);
    auto ye = torch::linear(torch::silu(torch::linear(xe, w.expert_gate[e])) * torch::linear(xe, w.expert_up[e]),
                            w.expert_down[e]);
    auto pe = flat_p.index_select(0, torch::tensor(slots[e], torch::kLong).to(i64.device()));
    out.index_add_(0, r, ye * pe.unsqueeze(-1));
  }
  return out.view(h.sizes());
}

}  // namespace

torch::Tensor decoder_layer(const torch::Tensor& x_in, const TransformerImpl::LayerWeights& w, const ModelConfig& c,
                            const torch::Tensor& rope_cos, const torch::Tensor& rope_sin, const torch::Tensor& mask,
                            KVCache* cache, size_t l, bool sdpa_causal, const FixedKV* fixed) {
  const int64_t B = x_in.size(0), T = x_in.size(1);
  const int64_t nh = c.num_attention_heads, kvh = c.kv_heads(), d = c.head_size(), groups = nh / kvh;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  torch::Tensor x = x_in;

  // 2. Attention block: pre-norm, projections, (qwen3) q/k norm, RoPE.
  torch::Tensor h = rms_norm(x, w.input_norm, c.rms_norm_eps);
  torch::Tensor q = torch::linear(h, w.q_proj, w.q_bias).view({B, T, nh, d});
  torch::Tensor k = torch::linear(h, w.k_proj, w.k_bias).view({B, T, kvh, d});
  torch::Tensor v = torch::linear(h, w.v_proj, w.v_bias).view({B, T, kvh, d});
  if (c.qk_norm) {  // Qwen3: RMSNorm over head_dim, per head, before RoPE
    q = rms_norm(q, w.q_norm, c.rms_norm_eps);
    k = rms_norm(k, w.k_norm, c.rms_norm_eps);
  }
  q = rotate(q.transpose(1, 2), rope_cos, rope_sin);  // [B, nh, T, d]
  k = rotate(k.transpose(1, 2), rope_cos, rope_sin);  // [B, kvh, T, d]
  v = v.transpose(1, 2);

  // 3. KV cache: append the new keys/values, attend over cache + new (fixed storage: write them at the
  //    given column, attend over every column; the mask hides the unused ones).
  if (fixed) {
    TORCH_CHECK(T == 1 && cache == nullptr && mask.defined(), "decoder_layer: fixed K/V need T == 1, a mask, no cache");
    fixed->k.index_copy_(2, fixed->column, k);
    fixed->v.index_copy_(2, fixed->column, v);
    k = fixed->k;                                         // [B, kvh, C, d]
    v = fixed->v;
  } else if (cache) {
    std::tie(k, v) = cache->append(l, k, v);              // [B, kvh, S, d]
  }

  torch::Tensor attn;
  if (sdpa_causal) {
    // 4a. Causal attention in one fused call (AttentionBackend::kSdpa). Query head j*groups+g uses kv
    //     head j (HF repeat_kv), so K/V are expanded to [B, nh, T, d] in that order.
    TORCH_CHECK(!mask.defined() && cache == nullptr, "decoder_layer: sdpa_causal takes no mask and no cache");
    auto expand = [&](const torch::Tensor& t) {
      return groups == 1 ? t : t.unsqueeze(2).expand({B, kvh, groups, T, d}).reshape({B, nh, T, d});
    };
    const auto dt = v.scalar_type();
    attn = compat::causal_attention(q.to(dt), expand(k.to(dt)), expand(v));  // [B, nh, T, d]
  } else {
    // 4b. Grouped-query attention: query head j*groups+g uses kv head j (HF repeat_kv), without
    //     materialising repeated K/V: the g query heads of kv head j are stacked as g*T query rows,
    //     [B, kvh, g*T, d], so both products are plain batched GEMMs over (B, kvh) that read the cached
    //     K/V in place (a broadcast matmul would copy K and V g times per layer and step).
    const int64_t S = k.size(2);
    auto qg = q.reshape({B, kvh, groups * T, d});
    auto scores = torch::matmul(qg, k.transpose(-1, -2)).mul_(scale);           // [B, kvh, g*T, S]
    if (mask.defined())
      scores.view({B, kvh, groups, T, S}).masked_fill_(mask.logical_not(), -std::numeric_limits<float>::infinity());
    auto probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
    attn = torch::matmul(probs, v).view({B, nh, T, d});                          // [B, kvh, g*T, d] as heads
  }
  attn = attn.transpose(1, 2).reshape({B, T, nh * d});
  x = x + torch::linear(attn, w.o_proj, w.o_bias);

  // 5. MLP block: pre-norm, SwiGLU (or a mixture of SwiGLU experts).
  h = rms_norm(x, w.post_norm, c.rms_norm_eps);
  if (w.router.defined()) x = x + moe_mlp(h, w, c);
  else x = x + torch::linear(torch::silu(torch::linear(h, w.gate_proj)) * torch::linear(h, w.up_proj), w.down_proj);
  return x;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What a checkpointed layer needs to recompute itself in backward (kept alive by the autograd node).
struct LayerCall : torch::CustomClassHolder {
  TransformerImpl::LayerWeights w;  // handles to the module's parameters (same storage)
  ModelConfig config;
  size_t layer = 0;
  bool sdpa_causal = false;         // decoder_layer's attention choice (AttentionBackend)
  bool autocast = false;            // autocast state of the forward, re-entered for the recomputation
  c10::ScalarType autocast_dtype = c10::ScalarType::BFloat16;
  std::shared_ptr<LayerWeightsProvider> provider;  // sharded weights (ZeRO-3), or null
};

// Holds a sharded layer's weights whole for its lifetime (LayerWeightsProvider); no-op without one.
class GatheredLayer {
 public:
  GatheredLayer(LayerWeightsProvider* provider, size_t layer) : provider_(provider), layer_(layer) {
    if (provider_) provider_->gather_layer(layer_);
  }
  ~GatheredLayer() {
    if (provider_) provider_->release_layer(layer_);
  }
  GatheredLayer(const GatheredLayer&) = delete;
  GatheredLayer& operator=(const GatheredLayer&) = delete;

 private:
  LayerWeightsProvider* provider_;
  size_t layer_;
};

// Activation checkpointing of one decoder layer (TransformerImpl::set_activation_checkpointing). The
// layer's parameters are inputs of the node (so their gradients flow through the outer graph into the
// usual accumulators); forward runs without a graph and saves only x (and the shared rope/mask tensors);
// backward recomputes the layer with a graph from a detached copy of x and differentiates it. With
// sharded weights (call->provider) the parameters are not inputs (they are empty between uses, and an
// accumulator made for an empty tensor would keep its shape): forward and the recomputation each gather
// the layer, and backward hands the weights' gradients to the provider.
struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& rope_cos,
                               const torch::Tensor& rope_sin, const c10::optional<torch::Tensor>& mask,
                               torch::TensorList params, c10::intrusive_ptr<LayerCall> call) {
    (void)params;  // reached through call->w (the same tensors); inputs only to route their gradients
    ctx->save_for_backward({x, rope_cos, rope_sin, mask.value_or(torch::Tensor())});
    torch::Tensor y;
    {
      GatheredLayer gathered(call->provider.get(), call->layer);
      y = decoder_layer(x, call->w, call->config, rope_cos, rope_sin, mask.value_or(torch::Tensor()), nullptr,
                        call->layer, call->sdpa_causal);
    }
    ctx->saved_data["call"] = c10::IValue::make_capsule(call);
    ctx->saved_data["n_params"] = static_cast<int64_t>(params.size());
    return {y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto call = ctx->saved_data["call"].toCapsule();
    const LayerCall& lc = *static_cast<LayerCall*>(call.get());
    const int64_t n_params = ctx->saved_data["n_params"].toInt();
    std::vector<torch::Tensor> params = layer_parameters(lc.w);
    TORCH_INTERNAL_ASSERT(lc.provider || static_cast<int64_t>(params.size()) == n_params);
    GatheredLayer gathered(lc.provider.get(), lc.layer);
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode grad_on(true);
      // The recomputation runs under the forward's autocast state (backward itself runs outside it).
      compat::AutocastGuard autocast(x.device().type(), lc.autocast, lc.autocast_dtype);
      y = decoder_layer(x, lc.w, lc.config, saved[1], saved[2], saved[3], nullptr, lc.layer, lc.sdpa_causal);
    }
    std::vector<torch::Tensor> inputs{x};
    inputs.insert(inputs.end(), params.begin(), params.end());
    variable_list grads = torch::autograd::grad({y}, inputs, {grad_outputs[0]}, /*retain_graph=*/false,
                                                /*create_graph=*/false, /*allow_unused=*/true);
    // One gradient per forward input, flattened: x, rope_cos, rope_sin, mask, params..., call.
    variable_list out{grads[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
    if (lc.provider) {
      lc.provider->layer_gradients(lc.layer, params, std::vector<torch::Tensor>(grads.begin() + 1, grads.end()));
    } else {
      out.insert(out.end(), grads.begin() + 1, grads.end());
    }
    out.emplace_back();
    return out;
  }

  // The layer's defined weights in a fixed order (the order passed to forward).
  static std::vector<torch::Tensor> layer_parameters(const TransformerImpl::LayerWeights& w) {
    std::vector<torch::Tensor> out;
    for (const torch::Tensor* t : {&w.input_norm, &w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.q_bias, &w.k_bias,
                                   &w.v_bias, &w.o_bias, &w.q_norm, &w.k_norm, &w.post_norm, &w.gate_proj,
                                   &w.up_proj, &w.down_proj, &w.router})
      if (t->defined()) out.push_back(*t);
    for (const auto* list : {&w.expert_gate, &w.expert_up, &w.expert_down})
      for (const torch::Tensor& t : *list) out.push_back(t);
    return out;
  }
};

}  // namespace

torch::Tensor TransformerImpl::checkpointed_layer(const torch::Tensor& x, const LayerWeights& w, const ModelConfig& c,
                                                  const torch::Tensor& rope_cos, const torch::Tensor& rope_sin,
                                                  const torch::Tensor& mask, size_t layer, bool sdpa_causal) {
  auto call = c10::make_intrusive<LayerCall>();
  call->w = w;
  call->config = c;
  call->layer = layer;
  call->sdpa_causal = sdpa_causal;
  const c10::DeviceType dev = x.device().type();
  if (dev == c10::DeviceType::CPU || dev == c10::DeviceType::CUDA) {
    call->autocast = compat::autocast_enabled(dev);
    call->autocast_dtype = compat::autocast_dtype(dev);
  }
  call->provider = provider_;
  // Sharded weights are not inputs of the node (CheckpointedLayer); x must then carry the graph.
  const std::vector<torch::Tensor> params =
      provider_ ? std::vector<torch::Tensor>{} : CheckpointedLayer::layer_parameters(w);
  if (provider_ && !x.requires_grad())
    throw spade::Error("Transformer::forward: with sharded weights the decoder layers' gradients flow through "
                       "the hidden states, which do not require grad here (model.embed_tokens.weight is frozen?)");
  c10::optional<torch::Tensor> m;
  if (mask.defined()) m = mask;
  return CheckpointedLayer::apply(x, rope_cos, rope_sin, m, torch::TensorList(params), call)[0];
}

std::vector<torch::Tensor> TransformerImpl::layer_parameters(size_t layer) const {
  TORCH_CHECK(layer < layers_.size(), "Transformer::layer_parameters: layer ", layer, " of ", layers_.size());
  return CheckpointedLayer::layer_parameters(layers_[layer]);
}

TransformerImpl::AttentionBackend parse_attention_backend(const std::string& name, const std::string& where) {
  if (name == "auto") return TransformerImpl::AttentionBackend::kAuto;
  if (name == "matmul") return TransformerImpl::AttentionBackend::kMatmul;
  if (name == "sdpa") return TransformerImpl::AttentionBackend::kSdpa;
  throw spade::Error(where + ": attention backend must be auto, matmul or sdpa, not '" + name + "'");
}

// The whole decoder, top to bottom (cf. llama2.c `forward`).
torch::Tensor TransformerImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                       KVCache* cache, const torch::Tensor& key_mask) {
  const ModelConfig& c = config_;
  TORCH_CHECK(input_ids.dim() == 2, "Transformer::forward: input_ids must be [B, T], got ", input_ids.sizes());
  TORCH_CHECK(positions.sizes() == input_ids.sizes(), "Transformer::forward: positions must match input_ids");
  if (provider_) {
    // Sharded weights (ZeRO-3): training forwards only, each layer recomputed in backward.
    if (cache)
      throw spade::Error("Transformer::forward: the weights are sharded over data-parallel ranks; decoding with a "
                         "KV cache runs on a whole copy of the weights (the inference copy)");
    if (torch::GradMode::is_enabled() && !activation_checkpointing_)
      throw spade::Error("Transformer::forward: sharded weights (distributed.sharding full) need activation "
                         "checkpointing for a forward with gradients (train.activation_checkpointing: true)");
    provider_->begin_forward();
  }
  if (cache && decode_cpu_applies(input_ids, cache)) return decode_cpu(input_ids, positions, *cache, key_mask);
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0, S = past + T;
  const auto inv_freq = inv_freq_.to(input_ids.device());

  // Plain causal attention over the whole sequence may run fused (AttentionBackend); then no mask.
  const bool sdpa = cache == nullptr && !key_mask.defined() && T > 1 &&
                    (attention_backend_ == AttentionBackend::kSdpa ||
                     (attention_backend_ == AttentionBackend::kAuto && input_ids.device().is_cuda()));

  // Attention mask [B, 1, 1, T, S] (broadcast over kv heads and groups): new token t sits at slot
  // past+t and may see slots <= past+t that are real (key_mask). Every query also sees itself, so a
  // padding query never has an all-masked row (its output is unused but must stay finite).
  torch::Tensor mask;
  if (!sdpa && (T > 1 || key_mask.defined())) {
    auto opts = torch::TensorOptions().dtype(torch::kLong).device(input_ids.device());
    auto q_slot = torch::arange(past, S, opts).view({T, 1});
    auto k_slot = torch::arange(0, S, opts).view({1, S});
    auto allowed = (k_slot <= q_slot).view({1, T, S});
    if (key_mask.defined()) {
      TORCH_CHECK(key_mask.dim() == 2 && key_mask.size(0) == B && key_mask.size(1) == S,
                  "Transformer::forward: key_mask must be [B, cache+T] = [", B, ", ", S, "], got ", key_mask.sizes());
      allowed = allowed.logical_and(key_mask.to(torch::kBool).view({B, 1, S}));
      allowed = allowed.logical_or((k_slot == q_slot).view({1, T, S}));
    }
    mask = allowed.view({allowed.size(0), 1, 1, T, S});
  }

  // 1. Token embedding; RoPE cos/sin of these positions (shared by every layer).
  torch::Tensor x = torch::embedding(embed_tokens_, input_ids);  // [B, T, hidden]
  const auto [rope_cos, rope_sin] = rope_cos_sin(positions, inv_freq, x.scalar_type());  // [B, 1, T, d]

  // 2-5. The decoder layers (decoder_layer below), each recomputed in backward when checkpointed.
  const bool checkpoint = activation_checkpointing_ && cache == nullptr && torch::GradMode::is_enabled();
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (checkpoint) {
      x = checkpointed_layer(x, layers_[l], c, rope_cos, rope_sin, mask, l, sdpa);
    } else {
      GatheredLayer gathered(provider_.get(), l);
      x = decoder_layer(x, layers_[l], c, rope_cos, rope_sin, mask, cache, l, sdpa);
    }
  }

  // 6. Final norm (logits via lm_head()).
  return rms_norm(x, final_norm_, c.rms_norm_eps);
}

// One decode step on fixed storage (DecodeGraph): forward()'s steps 1-6 for T == 1 with FixedKV layers.
torch::Tensor TransformerImpl::forward_fixed(const FixedDecode& in) {
  const ModelConfig& c = config_;
  if (provider_)
    throw spade::Error("Transformer::forward_fixed: the weights are sharded over data-parallel ranks; decoding runs "
                       "on a whole copy of the weights (the inference copy)");
  TORCH_CHECK(in.input_ids.dim() == 2 && in.input_ids.size(1) == 1, "Transformer::forward_fixed: input_ids must be [B, 1]");
  TORCH_CHECK(in.positions.sizes() == in.input_ids.sizes(), "Transformer::forward_fixed: positions must match input_ids");
  TORCH_CHECK(in.k.size() == layers_.size() && in.v.size() == layers_.size(), "Transformer::forward_fixed: ",
              in.k.size(), " K and ", in.v.size(), " V storages for ", layers_.size(), " layers");
  const int64_t B = in.input_ids.size(0), C = in.k[0].size(2);
  TORCH_CHECK(in.mask.dim() == 2 && in.mask.size(0) == B && in.mask.size(1) == C,
              "Transformer::forward_fixed: mask must be [B, C] = [", B, ", ", C, "], got ", in.mask.sizes());
  const torch::Tensor mask = in.mask.view({B, 1, 1, 1, C});
  torch::Tensor x = torch::embedding(embed_tokens_, in.input_ids);  // [B, 1, hidden]
  const auto [rope_cos, rope_sin] = rope_cos_sin(in.positions, in.inv_freq, x.scalar_type());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const FixedKV kv{in.k[l], in.v[l], in.column};
    x = decoder_layer(x, layers_[l], c, rope_cos, rope_sin, mask, nullptr, l, false, &kv);
  }
  return rms_norm(x, final_norm_, c.rms_norm_eps);
}

}  // namespace spade::policy
