// Transformer: a Llama-style decoder-only language model (llama / qwen2 / qwen3 / qwen3_moe) as a
// torch::nn::Module whose parameter names equal the Hugging Face safetensors names, so
// `named_parameters()` keys are exactly the checkpoint's tensor names (trainer-anchors §6).
//
// Numerics follow transformers' modeling_llama / modeling_qwen2 / modeling_qwen3:
//   RMSNorm computed in fp32, cast back to the input dtype, then multiplied by the weight;
//   rotate-half RoPE with inv_freq = theta^(-2i/d) computed in fp32 (+ optional llama3 scaling);
//   grouped-query attention (kv head j serves query heads j*g .. j*g+g-1), scale 1/sqrt(head_dim),
//   softmax in fp32; SwiGLU MLP down(silu(gate(x)) * up(x)); Qwen3 per-head q/k RMSNorm before RoPE;
//   qwen3_moe sparse layers: router softmax in fp32, top-k experts, optional renormalisation of the
//   top-k probabilities, weighted sum of the chosen experts' SwiGLU outputs (Qwen3MoeSparseMoeBlock).
//
// Thread safety: a module is not safe for concurrent forward() calls that share a KVCache; distinct
// caches on one module are fine under torch::NoGradGuard (the parameters are only read).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "policy/model_config.h"

namespace spade::policy {

/// Per-layer key/value cache for incremental decoding. Layer l holds K and V of shape
/// [B, kv_heads, S, head_dim] (S = length()) in the model's dtype, on the model's device.
/// Storage is over-allocated (capacity doubles) so appending one token does not copy the history.
/// Not thread-safe.
struct KVCache {
  /// Appends k, v ([B, kv_heads, T, head_dim]) to layer `layer` and returns views of the whole
  /// cached K and V for that layer ([B, kv_heads, S+T, head_dim]). Layers must be appended in order
  /// 0..L-1 for each forward; length() advances when the last used layer has been appended.
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k, const torch::Tensor& v);

  /// Storage of one layer after append_column(): K and V [B, kv_heads, capacity, head_dim], contiguous,
  /// in the model's dtype; columns [0, length) are valid, column length-1 is the new (unwritten) one.
  struct Column {
    torch::Tensor k, v;
    int64_t length = 0;
  };
  /// Decode fast path (TransformerImpl's CPU decode kernel): appends one column to layer `layer`
  /// (growing the storage as append() does) and returns the layer's whole storage; the caller writes
  /// the new keys/values into column length-1 itself. The layer must exist (an append() came first).
  /// Throws spade::Error if it does not.
  Column append_column(size_t layer);

  /// Number of cached layers (0 if empty).
  size_t num_layers() const { return k_.size(); }

  /// Number of cached positions (columns of the key mask), identical for every row.
  int64_t length() const { return lengths_.empty() ? 0 : lengths_[0]; }
  /// Batch size of the cache (0 if empty).
  int64_t batch_size() const;

  /// Keeps only rows `rows` (int64 [B'] on any device), in that order: used to drop finished
  /// sequences (or duplicate a prompt for n samples). Lengths are unchanged.
  void select_rows(const torch::Tensor& rows);

  /// Prepends `n` zero columns to every layer (length += n). The caller marks them as padding in its
  /// key mask. Used to align two caches of different lengths before append_rows().
  void left_pad(int64_t n);

  /// Drops the first `n` columns of every layer (length -= n): used to trim padding that every row
  /// has in front. Positions are RoPE'd into the keys already, so dropping columns changes nothing else.
  void drop_front(int64_t n);

  /// Appends the rows of `other` (same number of layers and the same length) after this cache's rows.
  /// An empty cache simply takes `other`'s contents. Throws spade::Error on a length mismatch.
  void append_rows(const KVCache& other);

  /// Overwrites row `row` in place with row `src_row` of `src` right-aligned at column `offset`:
  /// columns [offset, offset + src.length()) get src's keys/values, columns [0, offset) become zero
  /// padding (the caller masks them out). The storage is not replaced (storage_version() is kept), so
  /// a finished sequence's slot is reused without copying the other rows (continuous batching).
  /// Throws spade::Error if the caches differ in layers, kv heads, head_dim or dtype, a row is out of
  /// range, or offset + src.length() exceeds length().
  void write_row(int64_t row, const KVCache& src, int64_t src_row, int64_t offset);

  /// Empties the cache (frees its storage).
  void clear();

  /// Identifies the current storage tensors: a process-wide unique number that changes whenever any
  /// layer's K or V storage is replaced (growth, select_rows, left_pad, drop_front, append_rows, clear;
  /// a cache made by gather_row or stack gets a fresh one). Appending within the capacity keeps it.
  /// DecodeGraph re-captures when it changes (a captured graph holds the storage's addresses).
  uint64_t storage_version() const { return version_; }

  /// A one-row cache holding the columns `columns` (int64 [C], ascending slot indices, on any device)
  /// of row `row`, compacted to length C: used to park one sequence's real (non-padding) keys/values
  /// between the turns of an episode. Returns an empty cache if this one is empty.
  /// Throws spade::Error if `row` is out of range.
  KVCache gather_row(int64_t row, const torch::Tensor& columns) const;

  /// Stacks the rows of `parts` (in order) into one cache of `length` columns, each part right-aligned
  /// (its columns are the last ones; the front is zero padding the caller masks out). Empty parts
  /// (no layers) become all-padding rows of batch 1. Layer count, kv heads, head_dim, dtype and device
  /// come from the first non-empty part; if every part is empty the result is empty.
  /// Throws spade::Error if a part is longer than `length` or parts differ in layers.
  static KVCache stack(const std::vector<const KVCache*>& parts, int64_t length);

 private:
  void reallocate(int64_t front_pad, int64_t drop, int64_t capacity);
  // Grows layer `layer` (existing or just added) to hold `need` columns; new storage shaped like `like`.
  void reserve(size_t layer, int64_t need, const torch::Tensor& like);
  std::vector<torch::Tensor> k_, v_;   // [B, kv_heads, capacity, head_dim]
  std::vector<int64_t> lengths_;       // filled length per layer
  uint64_t version_ = 0;               // storage_version(); renewed by touch()
  void touch();
};

/// Where the decoder layers' weights live when they are sharded over data-parallel ranks (ZeRO-3,
/// distributed.sharding full; implemented by trainer/parameter_shards.h). Between uses a layer's
/// parameter tensors are empty; forward() asks for each layer's weights just before it runs the layer
/// and gives them back right after, and a checkpointed layer's backward asks again for the
/// recomputation and hands over the weights' gradients itself (they never reach .grad). Every call may
/// be a collective: the model must run the same forward / backward sequence on every rank.
class LayerWeightsProvider {
 public:
  virtual ~LayerWeightsProvider() = default;
  /// At the start of every forward(): the embeddings, final norm and output projection must be whole
  /// on return. Throws spade::Error when the model may not run now (e.g. outside a training step).
  virtual void begin_forward() = 0;
  /// Layer `layer`'s parameter tensors hold their full values until release_layer(layer).
  virtual void gather_layer(size_t layer) = 0;
  virtual void release_layer(size_t layer) = 0;
  /// A checkpointed layer's backward: the gradients of its weights `params` (TransformerImpl::
  /// layer_parameters order; grads[i] undefined when the loss does not reach params[i]), called
  /// between gather_layer and release_layer, instead of accumulating them into params[i].grad().
  virtual void layer_gradients(size_t layer, const std::vector<torch::Tensor>& params,
                               const std::vector<torch::Tensor>& grads) = 0;
};

class TransformerImpl : public torch::nn::Module {
 public:
  /// Builds the module with parameters registered under HF names and zero-initialised except RMSNorm
  /// weights (1). Throws spade::Error if `config` is invalid (ModelConfig::validate).
  explicit TransformerImpl(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  /// Runs the decoder and returns the final-normed hidden states [B, T, hidden] (model dtype).
  ///   input_ids  [B, T] int64 token ids.
  ///   positions  [B, T] int64 RoPE positions (for left-padded rows: 0 at the first real token).
  ///   cache      if non-null, K/V of these T tokens are appended to it and attention covers the
  ///              cached S tokens plus the new T (causal by slot index: new token t sees slots <= S+t).
  ///   key_mask   optional [B, S+T] bool, true = real token that may be attended, false = padding.
  ///              Padding queries attend to themselves only, so their (unused) outputs stay finite.
  /// Throws c10::Error on shape mismatch.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& positions,
                        KVCache* cache = nullptr, const torch::Tensor& key_mask = {});

  /// Activation checkpointing (config train.activation_checkpointing; issue 5). When on, forward()
  /// calls made with grad mode enabled and without a KV cache keep only each decoder layer's input
  /// ([B, T, hidden]) for backward instead of the layer's intermediate activations; backward recomputes
  /// the layer from that input (one extra forward of every layer per backward) and differentiates the
  /// recomputation. The recomputation is the same function of the same inputs, so values and gradients
  /// equal the stored-activation ones: there is no dropout or other randomness in these models (HF
  /// attention_dropout is 0 for every family served here, and is not implemented), and the autocast
  /// state of the forward is re-entered for the recomputation. Parameter gradients reach the normal
  /// .grad accumulators through the autograd graph (the layer's weights are inputs of the checkpoint
  /// node), so loss.backward(), torch::autograd::grad and gradient accumulation all work. The weights
  /// must not be modified in place between forward and backward (not detected). Default off.
  void set_activation_checkpointing(bool enabled) { activation_checkpointing_ = enabled; }
  bool activation_checkpointing() const { return activation_checkpointing_; }

  /// How forward() computes attention for a whole sequence with no KV cache and no key mask (T > 1:
  /// training, the reference policy, teacher-forced scoring); every other call (prefill onto a cache,
  /// padded batches, decode) always uses kMatmul.
  ///   kMatmul: the grouped batched GEMMs of decoder_layer (scores [B, kv_heads, groups*T, T] fp32,
  ///            softmax, P.V), reading K/V in place.
  ///   kSdpa:   compat::causal_attention (scaled_dot_product_attention, is_causal) on K/V expanded to
  ///            the query heads. On CUDA with PyTorch 2.x that is FlashAttention-2 for bf16/fp16: no
  ///            [T, T] score matrix in memory and no separate softmax pass (for a Qwen3-4B shape,
  ///            a micro-batch of 2 x 4096 tokens has 2*8*(4*4096)*4096 fp32 scores = 4.3 GB per layer;
  ///            issue 5's MFU target). q and k are cast to v's dtype first (under autocast v
  ///            is the projection's low-precision output while RoPE left q/k in fp32; the matmul path's
  ///            autocast casts the same way).
  ///   kAuto (default): kSdpa on CUDA, kMatmul elsewhere (on CPU LibTorch 1.13 has only the math
  ///            kernel, which materialises the same scores and additionally copies K/V per group).
  /// Both compute the same function (tests/policy/test_attention_backend.cpp: values and gradients
  /// within fp32 rounding, with and without activation checkpointing).
  enum class AttentionBackend { kAuto, kMatmul, kSdpa };
  void set_attention_backend(AttentionBackend backend) { attention_backend_ = backend; }
  AttentionBackend attention_backend() const { return attention_backend_; }

  /// CPU decode kernel (issue 4): when on (the default), forward() calls that decode one token per row
  /// onto a non-empty KV cache (T == 1) on CPU in float32 with grad mode and CPU autocast off, for a
  /// dense (non-MoE) model, run decode_cpu() instead of the generic ATen layer: the same formulas
  /// (decoder_layer's numerics, fp32 throughout) as fused loops over raw buffers plus direct BLAS
  /// calls, so a step costs ~7 BLAS calls per layer instead of ~30 ATen dispatches. Results equal the
  /// generic path up to fp32 summation order (tests/policy/test_decode_kernel.cpp). Off: always the
  /// generic path. Built only when CMake found a BLAS (SPADE_HAVE_BLAS); without one this flag is ignored.
  void set_cpu_decode_kernel(bool enabled) { cpu_decode_kernel_ = enabled; }
  bool cpu_decode_kernel() const { return cpu_decode_kernel_; }
  /// Whether forward(input_ids, positions, cache, ...) would run the CPU decode kernel now (the
  /// conditions above, checked against this call's ids [B, T] and cache, the weights and the thread's
  /// grad/autocast mode).
  bool decode_cpu_applies(const torch::Tensor& input_ids, const KVCache* cache) const;

  /// Inputs of forward_fixed(): one decode step whose tensors all have shapes and addresses fixed in
  /// advance (policy/decode_graph.h captures it as a CUDA graph). B rows, C = the cache's capacity.
  struct FixedDecode {
    torch::Tensor input_ids;          // [B, 1] int64
    torch::Tensor positions;          // [B, 1] int64 RoPE positions
    torch::Tensor inv_freq;           // rope_inv_freq(config()) on the model's device (float32 [head_dim/2])
    torch::Tensor column;             // int64 [1]: the cache column the new keys/values are written to
    torch::Tensor mask;               // [B, C] bool: the columns each row may attend (must include `column`)
    std::vector<torch::Tensor> k, v;  // per layer: K/V storage [B, kv_heads, C, head_dim], model dtype
  };
  /// One decode step on fixed storage: writes each layer's new keys/values into column `column` of k[l]
  /// and v[l] (index_copy_ at a device-side index) and attends over all C columns under `mask`, so no
  /// shape depends on the cache length and nothing is copied to the host (capturable). Returns the
  /// final-normed hidden states [B, 1, hidden] (model dtype). The same numerics as forward() with a
  /// KVCache and key mask (decoder_layer with FixedKV): masked columns get probability exactly 0, so
  /// values equal forward()'s up to summation order, provided the masked columns hold finite values
  /// (DecodeGraph zeroes them). Dense and MoE layers (MoE copies routing to the host: not capturable).
  /// Throws c10::Error on mismatched shapes.
  torch::Tensor forward_fixed(const FixedDecode& in);

  /// Sharded layer weights (ZeRO-3): forward() then brackets every decoder layer with the provider's
  /// gather_layer / release_layer, and requires activation checkpointing for a forward with gradients
  /// (throws spade::Error otherwise: a stored-activation graph would keep every layer's weights);
  /// forward_fixed() and the CPU decode kernel are refused. nullptr (the default): weights are plain
  /// parameters. The provider is shared by the module; set it before any forward.
  void set_weights_provider(std::shared_ptr<LayerWeightsProvider> provider) { provider_ = std::move(provider); }
  bool weights_sharded() const { return provider_ != nullptr; }
  LayerWeightsProvider* weights_provider() const { return provider_.get(); }

  /// Layer `layer`'s defined weights (handles to the registered parameters) in the order
  /// LayerWeightsProvider::layer_gradients uses. Throws c10::Error for a layer out of range.
  std::vector<torch::Tensor> layer_parameters(size_t layer) const;

  /// Output projection: hidden [..., hidden] -> logits [..., vocab] in float32. Uses the embedding
  /// matrix when tie_word_embeddings.
  torch::Tensor lm_head(const torch::Tensor& hidden);

  /// The sampler's projection of each row's last hidden state: hidden [B, hidden] -> logits [B, vocab]
  /// float32, lm_head()'s values up to fp32 summation order. With the CPU decode kernel on, for fp32
  /// CPU input under no grad, one BLAS call (a matrix-vector product for B == 1: the [vocab, hidden]
  /// weight is read once, where ATen's matmul packs it first); otherwise lm_head(). Throws c10::Error
  /// if hidden is not [B, hidden].
  torch::Tensor next_token_logits(const torch::Tensor& hidden);

  /// Re-initialises all weights deterministically from `seed`: linear and embedding weights ~ N(0, std)
  /// (HF initializer_range 0.02), biases 0, norm weights 1.
  void init_weights(uint64_t seed, double std = 0.02);

  /// Weights of one decoder layer (handles to the registered parameters; undefined if absent).
  struct LayerWeights {
    torch::Tensor input_norm, q_proj, k_proj, v_proj, o_proj;
    torch::Tensor q_bias, k_bias, v_bias, o_bias;  // attention_bias (o_bias: not qwen2)
    torch::Tensor q_norm, k_norm;                  // qk_norm (qwen3), [head_dim]
    torch::Tensor post_norm, gate_proj, up_proj, down_proj;  // dense MLP (undefined in a MoE layer)
    torch::Tensor router;                                     // MoE: mlp.gate.weight [experts, hidden]
    std::vector<torch::Tensor> expert_gate, expert_up, expert_down;  // MoE: mlp.experts.{e}.*_proj.weight
  };

 private:
  ModelConfig config_;
  torch::Tensor embed_tokens_;   // [vocab, hidden]   model.embed_tokens.weight
  std::vector<LayerWeights> layers_;
  torch::Tensor final_norm_;     // [hidden]          model.norm.weight
  torch::Tensor lm_head_;        // [vocab, hidden]   lm_head.weight (== embed_tokens_ when tied)
  torch::Tensor inv_freq_;       // [head_dim/2] float32 RoPE inverse frequencies (buffer, not saved)
  bool activation_checkpointing_ = false;
  bool cpu_decode_kernel_ = true;
  AttentionBackend attention_backend_ = AttentionBackend::kAuto;
  std::shared_ptr<LayerWeightsProvider> provider_;  // set_weights_provider
  // The decode kernel: one token per row. input_ids, positions [B, 1] int64 (CPU); cache non-empty with
  // B rows and every layer; key_mask undefined or [B, cache+1] bool. Returns the final-normed hidden
  // states [B, 1, hidden] float32, like forward(). Throws spade::Error for an out-of-range token id or a
  // mismatched cache/key_mask. transformer_decode.cpp.
  torch::Tensor decode_cpu(const torch::Tensor& input_ids, const torch::Tensor& positions, KVCache& cache,
                           const torch::Tensor& key_mask);
  // decoder_layer() as one checkpoint node (activation checkpointing); transformer.cpp.
  torch::Tensor checkpointed_layer(const torch::Tensor& x, const LayerWeights& w, const ModelConfig& c,
                                   const torch::Tensor& rope_cos, const torch::Tensor& rope_sin,
                                   const torch::Tensor& mask, size_t layer, bool sdpa_causal);
};
TORCH_MODULE(Transformer);

/// "auto" | "matmul" | "sdpa" -> TransformerImpl::AttentionBackend (config train.attention, `spade bench
/// step --attention`). Throws spade::Error naming `where` and the allowed values otherwise.
TransformerImpl::AttentionBackend parse_attention_backend(const std::string& name, const std::string& where);

/// One layer's fixed K/V storage for decoder_layer (TransformerImpl::forward_fixed): k, v [B, kv_heads, C,
/// head_dim]; column int64 [1], the column the step's keys/values are written to.
struct FixedKV {
  torch::Tensor k, v, column;
};

/// One decoder layer (pre-norm attention block, then pre-norm MLP or MoE block) on the residual stream
/// x [B, T, hidden]: returns x + attn(...) + mlp(...) [B, T, hidden]. rope_cos/rope_sin [B, 1, T, head_dim]
/// in x's dtype; mask [B|1, 1, 1, T, S] bool (true = may attend) or undefined (no masking: T == 1 without
/// a key mask); cache as in forward() (layer index `layer`). sdpa_causal: attention is plain causal
/// over these T tokens, computed by compat::causal_attention (AttentionBackend::kSdpa); mask must then
/// be undefined and cache null. fixed: instead of a cache, the step's keys/values (T == 1) are written
/// into fixed->k/v at fixed->column and attention covers all C columns of that storage (mask [B, 1, 1, 1,
/// C]; forward_fixed). forward() runs this for every layer.
torch::Tensor decoder_layer(const torch::Tensor& x, const TransformerImpl::LayerWeights& w, const ModelConfig& c,
                            const torch::Tensor& rope_cos, const torch::Tensor& rope_sin, const torch::Tensor& mask,
                            KVCache* cache, size_t layer, bool sdpa_causal = false, const FixedKV* fixed = nullptr);

/// RMSNorm as in HF LlamaRMSNorm: (x.float() * rsqrt(mean(x.float()^2, -1) + eps)).to(x.dtype) * weight.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

/// RoPE inverse frequencies [head_dim/2] float32: theta^(-2i/d), i = 0..d/2-1 (HF
/// _compute_default_rope_parameters), then llama3 scaling if configured (HF _compute_llama3_parameters).
torch::Tensor rope_inv_freq(const ModelConfig& config);

/// Applies rotate-half RoPE to x [B, H, T, D] at positions [B, T] (int64):
/// x*cos + rotate_half(x)*sin with angles positions * inv_freq (fp32) duplicated to D, cast to x's dtype.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& positions, const torch::Tensor& inv_freq);

/// The trainer's and the sampler's logprob, one definition so on-policy TIS ratios are exactly 1:
/// log_softmax(logits.float() / temperature, -1) gathered at targets.
/// logits [N, V] (any float dtype), targets [N] int64 -> [N] float32. temperature > 0.
torch::Tensor token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets, double temperature);

/// Entropy (nats) of softmax(logits.float() / temperature): [N, V] -> [N] float32.
torch::Tensor token_entropy(const torch::Tensor& logits, double temperature);

}  // namespace spade::policy
