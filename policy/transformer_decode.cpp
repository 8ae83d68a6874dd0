// The CPU decode kernel (TransformerImpl::decode_cpu, issue 4): one new token per row onto a KV cache,
// fp32, the decoder of transformer.cpp written as loops over raw buffers (llama2.c style) with the
// matrix products handed to BLAS directly. A decode step of a small model is dominated by per-op
// overhead, not arithmetic: the generic path issues ~30 ATen ops per layer (dispatch, allocation,
// OpenMP regions); this one issues ~7 BLAS calls per layer, and the attention of each (row, kv head)
// is policy/cpu_attention.h's fused kernel.
//
// Numerics are decoder_layer()'s (HF modeling_llama / qwen2 / qwen3): RMSNorm in fp32, rotate-half
// RoPE with fp32 angles, GQA with kv head j serving query heads j*g .. j*g+g-1, scale 1/sqrt(head_dim),
// fp32 softmax, SwiGLU MLP. Only the summation order differs (tests/policy/test_decode_kernel.cpp).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <dlfcn.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "policy/cpu_attention.h"
#include "policy/torch_compat.h"
#include "policy/transformer.h"

#ifdef SPADE_HAVE_BLAS
// Reference (Fortran) BLAS, provided by every BLAS (OpenBLAS here: libblas.so.3). Column-major.
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
void sgemv_(const char* trans, const int* m, const int* n, const float* alpha, const float* a, const int* lda,
            const float* x, const int* incx, const float* beta, float* y, const int* incy);
}
#endif

namespace spade::policy {

#ifdef SPADE_HAVE_BLAS

namespace {

// ---- BLAS threads. ---------------------------------------------------------------------------------

/// OpenBLAS runs a call on all its threads once the product is large enough by its own rule (e.g. a
/// matrix-vector product of >= 9216 elements), and its pthread workers then spin (sched_yield) between
/// calls. A decode step is a chain of small calls, where waking the second thread can cost more than it
/// saves. Rules (measured on the 2-vCPU bench machine, OpenBLAS 0.3.21, quiet; bench/RESULTS.md):
///  - a product of up to kThreadedRows rows over a weight of >= kThreadedGemvBytes keeps OpenBLAS's
///    threads: it is bound by memory bandwidth, and two threads stream ~21-23 GB/s where one reaches
///    ~12 GB/s (768x768 and 2048x768 weights out of cache); at 100M parameters this took batch-1 decode
///    from 29 to 40-45 tokens/s and batch 2 from 29 to 40 (batch 4: 58 vs 53-59, unchanged). Below
///    that size the weight is cache-resident and one thread is as fast.
///  - a product of several rows below kSerialFlops runs single-threaded (a batch-16 256x256 product
///    is ~2 MFLOP, tens of microseconds); larger ones keep OpenBLAS's choice.
/// The thread count is process-wide in OpenBLAS: while a serial call runs, BLAS calls of other threads
/// are single-threaded too (spade samples and trains in one thread). Found at run time (dlsym), so
/// another BLAS simply keeps its own threading.
constexpr double kSerialFlops = 8e6;
constexpr double kThreadedGemvBytes = 256.0 * 1024;
constexpr int64_t kThreadedRows = 4;

class SerialBlas {
 public:
  explicit SerialBlas(bool serial) {
    static const auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    static const auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (!serial || !set || !get) return;
    set_ = set;
    saved_ = get();
    if (saved_ > 1) set_(1);
    else set_ = nullptr;
  }
  ~SerialBlas() {
    if (set_) set_(saved_);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  void (*set_)(int) = nullptr;
  int saved_ = 1;
};

// ---- Row-major BLAS helpers (leading dimension = row stride, in elements). ------------------------

/// c[M, N] = alpha * a[M, K] . b[N, K]^T + beta * c. For M == 1 a matrix-vector product (no packing
/// of b: the weight is read once, which is what bounds a one-row decode step).
void gemm_nt(int M, int N, int K, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
             float* c, int ldc) {
  if (M == 1) {  // y[N] = b[N, K] . x[K]: column-major b^T is K x N, so op = 'T'
    const int inc = 1;
    sgemv_("T", &K, &N, &alpha, b, &ldb, a, &inc, &beta, c, &inc);
    return;
  }
  // Row-major c = a b^T is column-major c^T = b a^T: b (row-major [N, K]) is column-major K x N.
  sgemm_("T", "N", &N, &M, &K, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}

/// A weight product y[M, N] = x[M, K] . w[N, K]^T + beta * y (gemm_nt), threaded by the rules above.
void linear(int64_t M, int64_t N, int64_t K, const float* x, const float* w, float beta, float* y) {
  const bool threaded = (M <= kThreadedRows && 4.0 * N * K >= kThreadedGemvBytes) || 2.0 * M * N * K >= kSerialFlops;
  const SerialBlas serial(!threaded);
  gemm_nt(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f, x, static_cast<int>(K), w,
          static_cast<int>(K), beta, y, static_cast<int>(N));
}

/// y = x * rsqrt(mean(x^2) + eps) * w over n elements (HF LlamaRMSNorm in fp32). In place if y == x.
void rms_norm_row(const float* x, const float* w, int64_t n, double eps, float* y) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float r = 1.0f / std::sqrt(static_cast<float>(ss / n) + static_cast<float>(eps));
  for (int64_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * r);
}

/// Rotate-half RoPE in place on one head v[d]: v*cos + rotate_half(v)*sin, with cos/sin [d/2] (the
/// angle of pair i is used for elements i and i + d/2, HF emb = cat(freqs, freqs)).
void rope_head(float* v, const float* cos, const float* sin, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float a = v[i], b = v[i + half];
    v[i] = a * cos[i] - b * sin[i];
    v[i + half] = b * cos[i] + a * sin[i];
  }
}

bool is_cpu_f32(const torch::Tensor& t) {
  return !t.defined() || (t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous());
}

const float* ptr(const torch::Tensor& t) {
  return t.defined() ? static_cast<const float*>(compat::const_data(t)) : nullptr;
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t n) {
  if (!bias) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += bias[i];
}

/// Grouped-query attention of every (row, kv head) pair: q [B, nh*d]; K/V storage kc, vc [B, kvh, cap, d]
/// with S valid columns; mask [B, S] or null; output attn [B, nh*d]. Each pair is cpu::attend_group
/// (policy/cpu_attention.h). Pairs are independent, so they run on the intra-op threads when there is
/// enough work: a chunk of pairs gets at least ~1 MFLOP (tens of microseconds), more than the ~20-50 us
/// it costs to wake a sleeping OpenMP worker (OMP_WAIT_POLICY=PASSIVE, issue 4); smaller steps (e.g.
/// one row of a small model at a short context) stay on the calling thread.
void attend(const float* q, const float* kc, const float* vc, const bool* mask, int64_t B, int64_t nh, int64_t kvh,
            int64_t d, int64_t S, int64_t cap, float scale, float* attn) {
  const int64_t g = nh / kvh;
  const int64_t flops_per_pair = 4 * g * S * d;  // two [g, S, d] products
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flops_per_pair));
  at::parallel_for(0, B * kvh, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(g * S);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / kvh, j = p % kvh;
      cpu::attend_group(q + (b * nh + j * g) * d, kc + p * cap * d, vc + p * cap * d, mask ? mask + b * S : nullptr, g,
                        d, S, scale, scores.data(), attn + (b * nh + j * g) * d);
    }
  });
}

}  // namespace

bool TransformerImpl::decode_cpu_applies(const torch::Tensor& input_ids, const KVCache* cache) const {
  if (!cpu_decode_kernel_ || !cache || input_ids.size(1) != 1 || !input_ids.device().is_cpu()) return false;
  if (cache->length() == 0 || cache->num_layers() != layers_.size() || cache->batch_size() != input_ids.size(0))
    return false;
  if (torch::GradMode::is_enabled() || compat::autocast_enabled(c10::DeviceType::CPU)) return false;
  if (!is_cpu_f32(embed_tokens_) || !is_cpu_f32(final_norm_) || !is_cpu_f32(lm_head_)) return false;
  for (const LayerWeights& w : layers_) {
    if (w.router.defined()) return false;  // MoE layers: generic path
    for (const torch::Tensor* t : {&w.input_norm, &w.q_proj, &w.k_proj, &w.v_proj, &w.o_proj, &w.q_bias, &w.k_bias,
                                   &w.v_bias, &w.o_bias, &w.q_norm, &w.k_norm, &w.post_norm, &w.gate_proj,
                                   &w.up_proj, &w.down_proj})
      if (!is_cpu_f32(*t)) return false;
  }
  return true;
}

torch::Tensor TransformerImpl::decode_cpu(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                          KVCache& cache, const torch::Tensor& key_mask) {
  const ModelConfig& c = config_;
  const int64_t B = input_ids.size(0), H = c.hidden_size, V = c.vocab_size, F = c.intermediate_size;
  const int64_t nh = c.num_attention_heads, kvh = c.kv_heads(), d = c.head_size(), half = d / 2;
  const int64_t S = cache.length() + 1;  // attended slots after this step's append
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const double eps = c.rms_norm_eps;

  auto ids = input_ids.to(torch::kLong).contiguous();
  auto pos = positions.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* idp = ids.data_ptr<int64_t>();
  const int64_t* posp = pos.data_ptr<int64_t>();
  torch::Tensor mask;
  if (key_mask.defined()) {
    if (key_mask.dim() != 2 || key_mask.size(0) != B || key_mask.size(1) != S)
      throw spade::Error("Transformer::decode_cpu: key_mask must be [B, cache+1] = [" + std::to_string(B) + ", " +
                         std::to_string(S) + "]");
    mask = key_mask.to(torch::kCPU, torch::kBool).contiguous();
  }
  const bool* maskp = mask.defined() ? mask.data_ptr<bool>() : nullptr;

  // Workspace (fp32): residual x [B, H], normed h [B, H], q [B, nh*d], k, v [B, kvh*d], attention
  // output [B, nh*d], gate and up [B, F], RoPE cos/sin [B, d/2].
  auto out = torch::empty({B, 1, H}, torch::kFloat32);
  float* x = out.data_ptr<float>();
  std::vector<float> work(B * H + B * nh * d * 2 + B * kvh * d * 2 + B * F * 2 + B * half * 2);
  float* h = work.data();
  float* q = h + B * H;
  float* attn = q + B * nh * d;
  float* kn = attn + B * nh * d;
  float* vn = kn + B * kvh * d;
  float* gate = vn + B * kvh * d;
  float* up = gate + B * F;
  float* cosv = up + B * F;
  float* sinv = cosv + B * half;

  // 1. Token embedding; RoPE angles positions * inv_freq in fp32 (HF: position_ids.float() @ inv_freq).
  const float* emb = ptr(embed_tokens_);
  const torch::Tensor inv_freq_f32 = inv_freq_.to(torch::kCPU, torch::kFloat32).contiguous();
  const float* inv_freq = ptr(inv_freq_f32);
  for (int64_t b = 0; b < B; ++b) {
    if (idp[b] < 0 || idp[b] >= V)
      throw spade::Error("Transformer::decode_cpu: token id " + std::to_string(idp[b]) + " of row " +
                         std::to_string(b) + " outside the vocabulary [0, " + std::to_string(V) + ")");
    std::copy(emb + idp[b] * H, emb + (idp[b] + 1) * H, x + b * H);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(posp[b]) * inv_freq[i];
      cosv[b * half + i] = std::cos(angle);
      sinv[b * half + i] = std::sin(angle);
    }
  }

  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerWeights& w = layers_[l];
    // 2. Attention block: pre-norm, projections (+ biases), (qwen3) per-head q/k RMSNorm, RoPE.
    for (int64_t b = 0; b < B; ++b) rms_norm_row(x + b * H, ptr(w.input_norm), H, eps, h + b * H);
    linear(B, nh * d, H, h, ptr(w.q_proj), 0.0f, q);
    linear(B, kvh * d, H, h, ptr(w.k_proj), 0.0f, kn);
    linear(B, kvh * d, H, h, ptr(w.v_proj), 0.0f, vn);
    add_bias(q, ptr(w.q_bias), B, nh * d);
    add_bias(kn, ptr(w.k_bias), B, kvh * d);
    add_bias(vn, ptr(w.v_bias), B, kvh * d);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < nh; ++j) {
        float* qh = q + (b * nh + j) * d;
        if (w.q_norm.defined()) rms_norm_row(qh, ptr(w.q_norm), d, eps, qh);
        rope_head(qh, cosv + b * half, sinv + b * half, d);
      }
      for (int64_t j = 0; j < kvh; ++j) {
        float* kh = kn + (b * kvh + j) * d;
        if (w.k_norm.defined()) rms_norm_row(kh, ptr(w.k_norm), d, eps, kh);
        rope_head(kh, cosv + b * half, sinv + b * half, d);
      }
    }

    // 3. KV cache: write the new keys/values into column S-1 of [B, kvh, capacity, d].
    const KVCache::Column col = cache.append_column(l);
    if (col.k.scalar_type() != torch::kFloat32)
      throw spade::Error("Transformer::decode_cpu: the KV cache holds " + std::string(c10::toString(col.k.scalar_type())) +
                         ", the model float32");
    const int64_t cap = col.k.size(2);
    float* kc = col.k.data_ptr<float>();
    float* vc = col.v.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < kvh; ++j) {
        const int64_t slot = ((b * kvh + j) * cap + (S - 1)) * d;
        std::copy(kn + (b * kvh + j) * d, kn + (b * kvh + j + 1) * d, kc + slot);
        std::copy(vn + (b * kvh + j) * d, vn + (b * kvh + j + 1) * d, vc + slot);
      }

    // 4. Grouped-query attention of every (row, kv head) pair: attend() above.
    attend(q, kc, vc, maskp, B, nh, kvh, d, S, cap, scale, attn);
    // x += attn . o_proj^T (+ o bias): BLAS beta = 1 accumulates into the residual stream.
    linear(B, H, nh * d, attn, ptr(w.o_proj), 1.0f, x);
    add_bias(x, ptr(w.o_bias), B, H);

    // 5. MLP block: pre-norm, SwiGLU down(silu(gate(h)) * up(h)), added to the residual stream.
    for (int64_t b = 0; b < B; ++b) rms_norm_row(x + b * H, ptr(w.post_norm), H, eps, h + b * H);
    linear(B, F, H, h, ptr(w.gate_proj), 0.0f, gate);
    linear(B, F, H, h, ptr(w.up_proj), 0.0f, up);
    for (int64_t i = 0; i < B * F; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    linear(B, H, F, gate, ptr(w.down_proj), 1.0f, x);
  }

  // 6. Final norm (in place).
  for (int64_t b = 0; b < B; ++b) rms_norm_row(x + b * H, ptr(final_norm_), H, eps, x + b * H);
  return out;
}

torch::Tensor TransformerImpl::next_token_logits(const torch::Tensor& hidden) {
  TORCH_CHECK(hidden.dim() == 2 && hidden.size(1) == config_.hidden_size,
              "Transformer::next_token_logits: hidden must be [B, hidden], got ", hidden.sizes());
  if (!cpu_decode_kernel_ || torch::GradMode::is_enabled() || !hidden.device().is_cpu() ||
      hidden.scalar_type() != torch::kFloat32 || !is_cpu_f32(lm_head_))
    return lm_head(hidden);
  const torch::Tensor h = hidden.contiguous();
  const int64_t B = h.size(0), H = config_.hidden_size, V = config_.vocab_size;
  auto logits = torch::empty({B, V}, torch::kFloat32);
  linear(B, V, H, ptr(h), ptr(lm_head_), 0.0f, logits.data_ptr<float>());
  return logits;
}

#else  // no BLAS: the generic path only

torch::Tensor TransformerImpl::next_token_logits(const torch::Tensor& hidden) { return lm_head(hidden); }

bool TransformerImpl::decode_cpu_applies(const torch::Tensor&, const KVCache*) const { return false; }

torch::Tensor TransformerImpl::decode_cpu(const torch::Tensor&, const torch::Tensor&, KVCache&, const torch::Tensor&) {
  throw spade::Error("Transformer::decode_cpu: built without BLAS (SPADE_HAVE_BLAS)");
}

#endif

}  // namespace spade::policy
