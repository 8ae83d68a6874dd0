#include "policy/decode_graph.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "policy/torch_compat.h"

#ifdef SPADE_CUDA_GRAPHS  // CMake: LibTorch built with CUDA (policy/CMakeLists.txt)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace spade::policy {

#ifdef SPADE_CUDA_GRAPHS
namespace {
// Set when a capture failed in this process: later DecodeGraphs do not try again (each failed capture
// may leave an unreleased private pool in PyTorch's caching allocator).
std::atomic<bool>& capture_broken() {
  static std::atomic<bool> broken{false};
  return broken;
}
}  // namespace
#endif

#ifdef SPADE_CUDA_GRAPHS
struct DecodeGraph::Graph {
  at::cuda::CUDAGraph graph;
};
#else
struct DecodeGraph::Graph {};
#endif

DecodeGraph::DecodeGraph(Transformer model, bool capture, int64_t span_bucket)
    : model_(std::move(model)), capture_(capture && capturable(*model_)), span_bucket_(span_bucket) {
  if (span_bucket_ < 1) throw spade::Error("DecodeGraph: span_bucket must be >= 1, not " + std::to_string(span_bucket));
}

DecodeGraph::~DecodeGraph() = default;

bool DecodeGraph::capturable(const TransformerImpl& model) {
#ifdef SPADE_CUDA_GRAPHS
  const auto params = model.parameters();
  if (params.empty() || !params.front().device().is_cuda()) return false;
  for (int64_t l = 0; l < model.config().num_hidden_layers; ++l)
    if (model.config().is_moe_layer(l)) return false;
  if (capture_broken().load()) return false;
  // Deterministic mode (run.deterministic) routes CUDA index_copy_ through index_put_ with sorting:
  // not known to be capturable, and determinism matters more there than decode speed.
  if (at::globalContext().deterministicAlgorithms()) return false;
  return !compat::autocast_enabled(c10::DeviceType::CUDA);
#else
  (void)model;
  return false;
#endif
}

torch::Tensor DecodeGraph::step(const torch::Tensor& ids, const torch::Tensor& positions, KVCache& cache,
                                const torch::Tensor& key_mask) {
  const auto layers = static_cast<size_t>(model_->config().num_hidden_layers);
  if (cache.num_layers() != layers || cache.length() == 0)
    throw spade::Error("DecodeGraph::step: the cache holds " + std::to_string(cache.num_layers()) + " of " +
                       std::to_string(layers) + " layers and " + std::to_string(cache.length()) +
                       " columns; prefill every layer first");
  TORCH_CHECK(ids.dim() == 2 && ids.size(1) == 1, "DecodeGraph::step: ids must be [B, 1], got ", ids.sizes());
  const int64_t B = ids.size(0);
  if (cache.batch_size() != B)
    throw spade::Error("DecodeGraph::step: " + std::to_string(B) + " ids for a cache of " +
                       std::to_string(cache.batch_size()) + " rows");
  TORCH_CHECK(positions.sizes() == ids.sizes(), "DecodeGraph::step: positions must match ids ", ids.sizes());
  TORCH_CHECK(!key_mask.defined() || (key_mask.dim() == 2 && key_mask.size(0) == B &&
                                      key_mask.size(1) == cache.length() + 1),
              "DecodeGraph::step: key_mask must be [B, cache+1] = [", B, ", ", cache.length() + 1, "], got ",
              key_mask.sizes());

  // 1. One more column in every layer (growing the storage may replace it: then rebind, recapture).
  std::vector<KVCache::Column> cols(layers);
  for (size_t l = 0; l < layers; ++l) cols[l] = cache.append_column(l);
  const int64_t length = cols[0].length;  // includes the new column, length - 1
  const int64_t C = cols[0].k.size(2);    // the storage's capacity
  if (cache.storage_version() != bound_version_ || !in_.input_ids.defined() || in_.input_ids.size(0) != B) {
    // The storage's columns from the new one on were never written through this cache's current
    // storage (torch::empty on growth): zero them so that masked columns are finite (0 x NaN = NaN).
    for (const KVCache::Column& col : cols) {
      col.k.narrow(2, length - 1, C - length + 1).zero_();
      col.v.narrow(2, length - 1, C - length + 1).zero_();
    }
    const auto dev = cols[0].k.device();
    const auto i64 = torch::TensorOptions().dtype(torch::kLong).device(dev);
    in_.input_ids = torch::zeros({B, 1}, i64);
    in_.positions = torch::zeros({B, 1}, i64);
    in_.column = torch::zeros({1}, i64);
    mask_full_ = torch::zeros({B, C}, torch::TensorOptions().dtype(torch::kBool).device(dev));
    if (!in_.inv_freq.defined()) in_.inv_freq = rope_inv_freq(model_->config()).to(dev);
    graph_.reset();
    bound_version_ = cache.storage_version();
    bound_span_ = 0;
    high_water_ = 0;
  }
  // Attention covers the first `span` columns: `length` rounded up to the bucket (a new graph per bucket).
  const int64_t span = std::min(C, (length + span_bucket_ - 1) / span_bucket_ * span_bucket_);
  if (span != bound_span_) {
    graph_.reset();
    bound_span_ = span;
  }
  in_.k.resize(layers);
  in_.v.resize(layers);
  for (size_t l = 0; l < layers; ++l) {
    in_.k[l] = cols[l].k.narrow(2, 0, span);  // views: the same addresses at every step of this storage
    in_.v[l] = cols[l].v.narrow(2, 0, span);
  }
  in_.mask = mask_full_.narrow(1, 0, span);

  // 2. The step's inputs into the static buffers (mask: columns past `length` stay false).
  in_.input_ids.copy_(ids);
  in_.positions.copy_(positions);
  in_.column.fill_(length - 1);
  // A shorter cache on the same storage (a copy: KVCache copies share storage and version) must not
  // see columns a longer one marked: clear the mask from `length` up to the longest length seen.
  if (length < high_water_) mask_full_.narrow(1, length, high_water_ - length).fill_(false);
  high_water_ = length;
  torch::Tensor mask = mask_full_.narrow(1, 0, length);
  if (key_mask.defined()) {
    mask.copy_(key_mask);
  } else {
    mask.fill_(true);
  }

  // 3. Replay, capture, or run eagerly.
  if (graph_) {
#ifdef SPADE_CUDA_GRAPHS
    graph_->graph.replay();
#endif
  } else if (capture_) {
    capture();
  } else {
    logits_ = eager();
  }
  // Hold no reference to the cache's storage between steps: when the cache grows or drops rows it
  // replaces its storage layer by layer, and references here would keep all of the old storage alive
  // (peak memory old + new instead of new + one layer). A graph is never replayed on a storage that is
  // not the cache's current one (storage_version()), so it needs none either.
  std::fill(in_.k.begin(), in_.k.end(), torch::Tensor());
  std::fill(in_.v.begin(), in_.v.end(), torch::Tensor());
  return logits_;
}

torch::Tensor DecodeGraph::eager() {
  torch::Tensor hidden = model_->forward_fixed(in_);
  return model_->next_token_logits(hidden.select(1, 0));
}

void DecodeGraph::fall_back(const std::string& why) {
  capture_ = false;
  graph_.reset();
  fallback_reason_ = why;
  static std::once_flag once;
  std::call_once(once, [&] { std::cerr << "spade: warning: CUDA graph decode off, decoding eagerly: " << why << "\n"; });
}

#ifdef SPADE_CUDA_GRAPHS

void DecodeGraph::capture() {
  // As torch.cuda.graph: warm up on a side stream (lazy cuBLAS state is created outside the capture),
  // capture on it, then replay on the caller's stream. Writing the step's K/V twice is harmless: the
  // same values go to the same column.
  const c10::DeviceIndex device = in_.k[0].device().index();
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
  torch::Tensor warm;
  auto g = std::make_unique<Graph>();
  std::string error;
  try {
    c10::cuda::device_synchronize();
    c10::cuda::CUDAStreamGuard guard(side);
    warm = eager();
    g->graph.capture_begin();
    try {
      logits_ = eager();
    } catch (const std::exception& e) {
      error = std::string("capture failed: ") + e.what();
    }
    // End the capture through PyTorch, on the capture stream, even after a failure: capture_end() also
    // ends the caching allocator's routing of this stream's allocations to the graph's private pool
    // (a raw cudaStreamEndCapture leaves the allocator believing a capture is underway for good). For a
    // capture CUDA invalidated, PyTorch < 2.12 throws before that step (pytorch#180395); the process-wide
    // flag below then keeps the residue to one pool.
    try {
      g->graph.capture_end();
    } catch (const std::exception& e) {
      if (error.empty()) error = std::string("capture_end failed: ") + e.what();
    }
  } catch (const std::exception& e) {  // device_synchronize, the warm-up step or capture_begin
    if (error.empty()) error = std::string("warm-up failed: ") + e.what();
  }
  if (error.empty()) {
    try {
      c10::cuda::device_synchronize();
      g->graph.replay();
    } catch (const std::exception& e) {
      error = std::string("replay failed: ") + e.what();
    }
  }
  if (!error.empty()) {
    (void)cudaGetLastError();
    g.reset();
    capture_broken().store(true);  // no retry by later DecodeGraphs (capturable() is false from now on)
    fall_back(error);
    logits_ = eager();
    return;
  }
  // The first replay must reproduce the eager step (same kernels on the same inputs).
  const double diff = (logits_ - warm).abs().max().item<double>();
  const double scale = warm.abs().max().item<double>();
  if (!(diff <= 1e-3 * (1.0 + scale))) {
    g.reset();
    fall_back("the captured step's logits differ from the eager step's by " + std::to_string(diff) +
              " (max |logit| " + std::to_string(scale) + ")");
    logits_ = warm;
    return;
  }
  graph_ = std::move(g);
  ++captures_;
}

#else

void DecodeGraph::capture() { throw spade::Error("DecodeGraph::capture: built without CUDA graphs"); }

#endif

}  // namespace spade::policy
