// DecodeGraph: the sampler's decode step (one new token per row onto a KVCache) as a CUDA graph.
//
// Why: at batch 64 a decode step of a 4B model reads ~8 GB of weights (~2.5 ms on an H200) but
// launches ~40 small kernels per layer (~1,400 per step of 36 layers); eager LibTorch spends ~5 us of
// host time on each (~7 ms), so the step is bound by launches, not by the GPU (estimates: not measured). A CUDA graph replays the whole step with one
// launch (the technique vLLM and SGLang use for decode, "CUDA graphs" in their docs).
//
// How: TransformerImpl::forward_fixed() runs the step on tensors whose shapes and addresses do not
// change between steps: the ids, positions, write column and [B, C] attention mask live in static
// buffers here, the new keys/values are written into the cache's storage at a device-side column, and
// attention covers the storage's first S columns under the mask, S = the cache length rounded up to a
// multiple of span_bucket (at most the capacity C: K/V reads stay within span_bucket columns of what
// is needed, where the whole capacity could be twice that after a doubling). The graph is captured
// once per cache storage (KVCache::storage_version(): the sampler's row changes and capacity doublings
// replace the storage), batch size and S, and replayed at every other step: a 512-token prompt decoding
// 256 tokens with the default bucket takes 2 captures.
//
// Safety: each capture is checked before use: the eager step run as warm-up and the first replay must
// give the same logits (max abs difference <= 1e-3 x (1 + max |logit|)); if they do not, this object
// falls back to the eager step for good; if capture throws, so does every later DecodeGraph of the
// process (capturable()). Either way it says why on stderr, once per process.
// Without CUDA (CPU models, or a LibTorch built without CUDA) step() runs forward_fixed() eagerly on the
// same buffers: the same results and bookkeeping, which is how the tests cover it on a CPU.
//
// Not thread-safe. The model's weights may change between steps only in place (an optimizer step);
// a DecodeGraph must not outlive the model. STATUS: capture written against PyTorch 2.x / 1.13 headers
// and syntax-checked; run on a GPU by scripts/gpu/run_all.sh (unit tests and the sampler bench).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "policy/transformer.h"

namespace spade::policy {

class DecodeGraph {
 public:
  /// capture: record CUDA graphs when capturable(model) (else every step runs eagerly).
  /// span_bucket: attention spans the cache length rounded up to a multiple of this many columns (see
  /// above; 256: a new capture every 256 decoded tokens at most, and at most 255 masked columns read).
  /// Throws spade::Error if span_bucket < 1.
  explicit DecodeGraph(Transformer model, bool capture = true, int64_t span_bucket = 256);
  ~DecodeGraph();
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  /// Whether this build and `model` allow capture now: LibTorch built with CUDA (SPADE_CUDA_GRAPHS),
  /// the parameters on a CUDA device, no MoE layer (its routing copies to the host), CUDA autocast off,
  /// deterministic algorithms off, and no capture has failed in this process (a failed capture can
  /// leave a private memory pool behind in PyTorch's allocator: it is not retried).
  static bool capturable(const TransformerImpl& model);

  /// Next-token logits [B, V] float32 on the model's device for ids [B, 1] int64 at positions [B, 1]
  /// int64 (both on the model's device), appending their keys/values to `cache` (B rows, every layer
  /// cached, as after a prefill). key_mask: [B, cache.length() + 1] bool (true = may be attended; the
  /// new column must be true) or undefined (every column real). Values equal
  /// model->next_token_logits(model->forward(ids, positions, &cache, key_mask).select(1, 0)) up to
  /// summation order (tests/policy/test_decode_graph.cpp). The result is a view of a static buffer:
  /// the next step() overwrites it (copy it to keep it). Must run under torch::NoGradGuard.
  /// Throws spade::Error for an empty or mismatched cache, c10::Error for mismatched shapes.
  torch::Tensor step(const torch::Tensor& ids, const torch::Tensor& positions, KVCache& cache,
                     const torch::Tensor& key_mask);

  /// Number of CUDA graphs captured so far (0 when capture is off or unavailable).
  int64_t captures() const { return captures_; }
  /// Whether steps are replayed from a CUDA graph (false: eager forward_fixed()).
  bool capturing() const { return capture_; }
  /// Why capture was turned off ("" while it is on or was never requested).
  const std::string& fallback_reason() const { return fallback_reason_; }

 private:
  struct Graph;  // the captured graph (CUDA builds only; decode_graph.cpp)
  // Makes the static buffers match `cache` (storage, rows, capacity): zeroes the storage's unused
  // columns and the mask, drops a captured graph. Returns true if they changed.
  bool bind(KVCache& cache, int64_t B);
  torch::Tensor eager();   // forward_fixed() + next_token_logits() on the static buffers
  void capture();          // warm-up, capture, verify; falls back on failure
  void fall_back(const std::string& why);

  Transformer model_;
  bool capture_;
  int64_t captures_ = 0;
  std::string fallback_reason_;
  uint64_t bound_version_ = 0;  // KVCache::storage_version() the buffers were bound to (0: none)
  int64_t high_water_ = 0;      // the longest cache length stepped on the bound storage
  int64_t span_bucket_;
  int64_t bound_span_ = 0;      // attended columns of the captured graph
  torch::Tensor mask_full_;     // [B, C] bool: the mask buffer over the whole capacity (in_.mask: its first columns)
  TransformerImpl::FixedDecode in_;  // static inputs (and views of the cache's storage during a step)
  torch::Tensor logits_;             // [B, V] float32: the last step's output
  std::unique_ptr<Graph> graph_;
};

}  // namespace spade::policy
