#include "rollout/sampler.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <optional>
#include <unordered_set>

#include "common/error.h"
#include "common/splitmix64.h"
#include "policy/decode_graph.h"

namespace spade::rollout {

/// One sequence: its token history and, between turns, the K/V of tokens[0, cached) (batch 1,
/// compact). While a turn runs, its keys/values live in the running batch's cache instead.
struct GenerationSession::Sequence {
  std::vector<int64_t> tokens;
  int64_t cached = 0;
  policy::KVCache cache;
  bool released = false;
  bool in_turn = false;  // a turn of it is queued or running in the sampler
  bool broken = false;   // it was in a turn when the sampler threw: its cache is lost (release it)
};

namespace {

using Sequence = GenerationSession::Sequence;


/// xoshiro-free, portable stream: splitmix64 counter mode (same numbers on every platform/libstdc++).
struct Rng {
  uint64_t state;
  double uniform() {  // [0, 1) with 53 random bits
    state += 0x9E3779B97F4A7C15ull;
    return static_cast<double>(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
  }
};

/// One turn of one sequence waiting for a slot: prefill seq's pending tokens, then sample up to cap
/// tokens from the random stream `stream`. `tag` is the caller's (result index or sequence id).
struct Request {
  Sequence* seq;
  int cap;          // max new tokens, >= 1
  uint64_t stream;  // seed of the row's random stream (sampling_stream())
  size_t tag;
};

/// Called when a request's turn ends, with its result (and, when `keep`, the sequence's K/V parked
/// back in seq->cache); returns the sequence's next turn, if any, which joins the queue.
using FinishFn = std::function<std::optional<Request>(const Request&, GenerationResult&&)>;

struct Row {
  Request req;
  int64_t reserve;        // tokens reserved under max_tokens_in_flight: KV length at admission + cap
  int64_t next_position;  // RoPE position of the next token to feed
  Rng rng;
  GenerationResult result;
  bool done = false;      // finished, result handed out; kept in the batch until it is compacted
};

/// One row's next token and its logprob.
struct Draw {
  int64_t token;
  float logprob;
};

/// log_softmax(z)[token] for z[V] (policy::token_logprobs' formula: z - max - log(sum(exp(z - max)))).
float log_softmax_at(const float* z, int64_t V, int64_t token) {
  float m = z[0];
  for (int64_t i = 1; i < V; ++i) m = std::max(m, z[i]);
  double sum = 0;
  for (int64_t i = 0; i < V; ++i) sum += std::exp(z[i] - m);
  return static_cast<float>((z[token] - m) - std::log(sum));
}

/// Orders token ids by z descending, ties by the lower id first (the order a stable sort of 0..V-1
/// gives, and the device path's sort).
struct ByLogitDescending {
  const float* z;
  bool operator()(int64_t a, int64_t b) const { return z[a] > z[b] || (z[a] == z[b] && a < b); }
};

/// The candidates of a draw, in ByLogitDescending order: the k largest of z[V] when 0 < k < V (one
/// pass keeping a sorted buffer: O(V) for small k), else all V, sorted lazily: at(j) sorts only as
/// far as needed (the next block found by nth_element, blocks doubling from 64), so a top-p or
/// min-p walk that stops after a few dozen tokens costs O(V), not a sort of a 150k vocabulary.
class Candidates {
 public:
  Candidates(const float* z, int64_t V, int k) : z_(z) {
    const ByLogitDescending before{z};
    if (k > 0 && k < V) {
      ids_.reserve(k + 1);
      for (int64_t i = 0; i < V; ++i) {
        if (static_cast<int>(ids_.size()) == k && !before(i, ids_.back())) continue;
        ids_.insert(std::upper_bound(ids_.begin(), ids_.end(), i, before), i);
        if (static_cast<int>(ids_.size()) > k) ids_.pop_back();
      }
      sorted_ = static_cast<int64_t>(ids_.size());
    } else {
      ids_.resize(V);
      for (int64_t i = 0; i < V; ++i) ids_[i] = i;
    }
  }
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  /// The j-th most likely candidate (0 <= j < size()).
  int64_t at(int64_t j) {
    if (j >= sorted_) {
      const int64_t upto = std::min(size(), std::max<int64_t>({64, 2 * sorted_, j + 1}));
      const ByLogitDescending before{z_};
      std::nth_element(ids_.begin() + sorted_, ids_.begin() + (upto - 1), ids_.end(), before);
      std::sort(ids_.begin() + sorted_, ids_.begin() + upto, before);
      sorted_ = upto;
    }
    return ids_[j];
  }

 private:
  const float* z_;
  std::vector<int64_t> ids_;
  int64_t sorted_ = 0;  // ids_[0, sorted_) are in final order; the rest all rank after them
};

/// The draw of one row on the host, for logits[V] (float32): the same semantics as the tensor path
/// below (HF order: temperature, top-k, softmax over the survivors, top-p, min-p, then a draw from the
/// renormalised survivors), with the logprob under the unfiltered temperature-scaled distribution.
/// Greedy (temperature 0): the first argmax, logprob at temperature 1. `z` is scratch of size V.
/// Without any filter (top-k off, top-p 1, min-p 0) the draw walks the vocabulary in id order: the
/// same distribution without sorting it.
Draw draw_on_host(const float* logits, int64_t V, const SamplingParams& p, Rng& rng, std::vector<float>& z) {
  if (p.temperature == 0) {
    const int64_t best = std::max_element(logits, logits + V) - logits;
    return {best, log_softmax_at(logits, V, best)};
  }
  const float t = static_cast<float>(p.temperature);  // as ATen's float tensor / double scalar
  for (int64_t i = 0; i < V; ++i) z[i] = logits[i] / t;
  const bool top_k = p.top_k > 0 && p.top_k < V;
  if (!top_k && p.top_p >= 1 && p.min_p <= 0) {
    const double top = *std::max_element(z.begin(), z.begin() + V);
    double total = 0;
    for (int64_t i = 0; i < V; ++i) total += std::exp(z[i] - top);
    const double u = rng.uniform() * total;
    double acc = 0;
    int64_t pick = 0;
    for (int64_t i = 0; i < V; ++i) {
      const double w = std::exp(z[i] - top);
      if (w <= 0) continue;
      acc += w;
      pick = i;
      if (u < acc) break;
    }
    return {pick, log_softmax_at(z.data(), V, pick)};
  }
  Candidates cand(z.data(), V, p.top_k);
  // Softmax over the candidates (descending), then the top-p / min-p survivors: a token survives
  // top-p if the mass strictly before it is < top_p, min-p if its probability >= min_p * the largest.
  const double top = z[cand.at(0)];
  double total = 0;
  if (top_k)
    for (int64_t j = 0; j < cand.size(); ++j) total += std::exp(z[cand.at(j)] - top);
  else
    for (int64_t i = 0; i < V; ++i) total += std::exp(z[i] - top);
  std::vector<double> kept_prob;  // unnormalised weights of the survivors, in candidate order
  double before = 0, kept = 0;
  for (int64_t j = 0; j < cand.size(); ++j) {
    const double w = std::exp(z[cand.at(j)] - top), pj = w / total;
    if (before >= p.top_p || (p.min_p > 0 && pj < p.min_p * (1.0 / total))) break;
    before += pj;
    kept += w;
    kept_prob.push_back(w);
  }
  // Draw u in [0, kept) over the survivors' unnormalised weights (the most likely always survives).
  const double u = rng.uniform() * kept;
  double acc = 0;
  size_t pick = 0;
  for (size_t j = 0; j < kept_prob.size(); ++j) {
    acc += kept_prob[j];
    pick = j;
    if (u < acc) break;
  }
  const int64_t token = cand.at(static_cast<int64_t>(pick));
  return {token, log_softmax_at(z.data(), V, token)};
}

/// Next token and logprob of every row, on the host (CPU logits [B, V] float32): draw_on_host() per
/// row. No tensor ops: on CPU a step's sampling is a few loops over the vocabulary.
void choose_on_host(const torch::Tensor& logits, const SamplingParams& params, std::vector<Row>& rows,
                    std::vector<int64_t>& chosen, std::vector<float>& logprobs) {
  const torch::Tensor l = logits.to(torch::kFloat32).contiguous();
  const int64_t V = l.size(1);
  const float* lp = l.data_ptr<float>();
  std::vector<float> z(V);
  for (size_t r = 0; r < rows.size(); ++r) {
    const Draw d = draw_on_host(lp + r * V, V, params, rows[r].rng, z);
    chosen[r] = d.token;
    logprobs[r] = d.logprob;
  }
}

/// The same choice as tensor ops on the logits' device (logits [B, V] float32, e.g. CUDA): only the
/// surviving candidates and the logprobs are copied to the host.
void choose_on_device(const torch::Tensor& logits, const SamplingParams& params, std::vector<Row>& rows,
                      std::vector<int64_t>& chosen, std::vector<float>& logprobs) {
  const int64_t B = rows.size(), vocab = logits.size(1);
  if (params.temperature == 0) {
    auto am = logits.argmax(-1).to(torch::kCPU).contiguous();
    for (int64_t r = 0; r < B; ++r) chosen[r] = am.data_ptr<int64_t>()[r];
  } else {
    // Candidates sorted by probability (descending): top-k, or the whole vocabulary.
    auto z = logits / params.temperature;
    torch::Tensor vals, cand;
    if (params.top_k > 0 && params.top_k < vocab) std::tie(vals, cand) = z.topk(params.top_k, -1, true, true);
    else std::tie(vals, cand) = z.sort(-1, /*descending=*/true);
    auto probs = torch::softmax(vals, -1);  // renormalised over the top-k survivors (HF order)
    // Top-p on the device: a token survives if the mass strictly before it is < top_p; only the
    // widest surviving prefix is copied to the host.
    auto before = probs.cumsum(-1) - probs;
    auto keep_tok = before < params.top_p;
    if (params.min_p > 0) keep_tok = keep_tok.logical_and(probs >= probs.narrow(1, 0, 1) * params.min_p);
    const int64_t width = std::max<int64_t>(1, keep_tok.sum(1).max().item<int64_t>());
    probs = (probs * keep_tok).narrow(1, 0, width).to(torch::kCPU, torch::kDouble).contiguous();
    cand = cand.narrow(1, 0, width).to(torch::kCPU).contiguous();
    const double* pp = probs.data_ptr<double>();
    const int64_t* cp = cand.data_ptr<int64_t>();
    for (int64_t r = 0; r < B; ++r) {
      const double* p = pp + r * width;
      double total = 0;
      for (int64_t j = 0; j < width; ++j) total += p[j];
      double u = rows[r].rng.uniform() * total, acc = 0;
      int64_t pick = 0;  // the most likely token always survives the filters
      for (int64_t j = 0; j < width; ++j) {
        if (p[j] <= 0) continue;
        acc += p[j];
        pick = j;
        if (u < acc) break;
      }
      chosen[r] = cp[r * width + pick];
    }
  }
  const double temperature = params.temperature == 0 ? 1.0 : params.temperature;
  auto chosen_t = torch::tensor(chosen, torch::kLong).to(logits.device());
  auto lp = policy::token_logprobs(logits, chosen_t, temperature).to(torch::kCPU).contiguous();
  std::copy(lp.data_ptr<float>(), lp.data_ptr<float>() + B, logprobs.begin());
}

void validate(const SamplingParams& params, int max_batch) {
  if (max_batch < 1) throw spade::Error("generate: max_batch must be >= 1");
  // 0 < temperature < 1e-5 (vLLM's _SAMPLING_EPS, below which it samples greedily) overflows logits /
  // temperature in float32 (1e-40: inf, NaN logprobs); NaN or inf would pass a plain >= 0 check.
  if (!(params.temperature == 0 || (params.temperature >= 1e-5 && std::isfinite(params.temperature))))
    throw spade::Error("generate: temperature must be 0 (greedy) or finite and >= 1e-5, not " +
                       std::to_string(params.temperature));
  if (!(params.top_p > 0 && params.top_p <= 1)) throw spade::Error("generate: top_p must be in (0, 1]");
  if (!(params.min_p >= 0 && params.min_p <= 1)) throw spade::Error("generate: min_p must be in [0, 1]");
  if (!params.stop_strings.empty() && !params.detokenize)
    throw spade::Error("generate: stop_strings need SamplingParams::detokenize (e.g. the tokenizer's decode)");
  for (const std::string& s : params.stop_strings)
    if (s.empty()) throw spade::Error("generate: an empty stop string would stop every sequence at once");
  if (params.max_tokens_in_flight < 0)
    throw spade::Error("generate: max_tokens_in_flight must be >= 0 (0 = unlimited), not " +
                       std::to_string(params.max_tokens_in_flight));
}

/// Restores the model's training mode when the sampler returns or throws.
struct EvalModeGuard {
  policy::Transformer& model;
  bool was_training;
  explicit EvalModeGuard(policy::Transformer& m) : model(m), was_training(m->is_training()) { model->eval(); }
  ~EvalModeGuard() {
    if (was_training) model->train();
  }
};

/// The sampler proper: runs `requests` and every follow-up turn `finish` returns until none is left.
/// Pending tokens of each sequence are prefilled on top of its cached K/V; sampled tokens are appended
/// to seq->tokens when `keep` (then finished rows park their real K/V columns back in seq->cache).
/// A sequence may have at most one request queued or running. Adds every real token fed through the
/// model to *forwarded; fills *stats when given.
void run(policy::Transformer& model, const std::vector<Request>& requests, const SamplingParams& params,
         int max_batch, bool keep, int64_t* forwarded, SamplerStats* stats, const FinishFn& finish) {
  validate(params, max_batch);
  SamplerStats local_stats;
  SamplerStats& st = stats ? *stats : local_stats;
  st = SamplerStats{};
  std::deque<Request> queue;
  std::vector<Sequence*> entered;  // every sequence queued by this call (in_turn marks the live ones)
  // If anything throws, the sequences with a turn queued or running have lost their K/V (it lived in
  // the batch): mark them broken, so that a later turn cannot treat zeros as their history.
  struct Unwind {
    std::vector<Sequence*>& entered;
    int exceptions = std::uncaught_exceptions();
    ~Unwind() {
      if (std::uncaught_exceptions() == exceptions) return;
      for (Sequence* s : entered)
        if (s->in_turn) {
          s->in_turn = false;
          s->broken = true;
          s->cache.clear();
          s->cached = 0;
        }
    }
  } unwind{entered};
  auto enqueue = [&](const Request& q) {
    if (q.cap < 1) throw spade::Error("generate: a turn needs max_new_tokens >= 1, not " + std::to_string(q.cap));
    if (q.seq->in_turn)
      throw spade::Error("generate: sequence " + std::to_string(q.tag) + " already has a turn queued or running");
    if (static_cast<int64_t>(q.seq->tokens.size()) <= q.seq->cached)
      throw spade::Error("generate: sequence " + std::to_string(q.tag) + " has no new tokens to condition on");
    q.seq->in_turn = true;
    entered.push_back(q.seq);
    queue.push_back(q);
  };
  for (const Request& q : requests) enqueue(q);
  if (queue.empty()) return;

  torch::NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  const torch::Device device = model->parameters().front().device();
  if (params.backend == SamplingParams::Backend::kHost && !device.is_cpu())
    throw spade::Error("generate: SamplingParams::Backend::kHost needs CPU logits; the model is on " + device.str());
  const bool host_draw = params.backend == SamplingParams::Backend::kHost ||
                         (params.backend == SamplingParams::Backend::kAuto && device.is_cpu());
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  const std::unordered_set<int64_t> stop(params.stop_token_ids.begin(), params.stop_token_ids.end());
  size_t stop_window = 0;
  for (const std::string& s : params.stop_strings) stop_window = std::max(stop_window, s.size() + 8);
  using GraphMode = SamplingParams::DecodeGraphMode;
  std::unique_ptr<policy::DecodeGraph> graph;  // decode steps through fixed buffers (a CUDA graph)
  if (params.decode_graph == GraphMode::kOn ||
      (params.decode_graph == GraphMode::kAuto && policy::DecodeGraph::capturable(*model)))
    graph = std::make_unique<policy::DecodeGraph>(model);

  std::vector<Row> rows;             // active rows, in batch order
  policy::KVCache cache;             // [B, kv_heads, S, head_dim] per layer
  torch::Tensor key_mask;            // [B, S] bool: true = real token
  bool padded = false;               // key_mask has a false entry (else decode steps need no mask)
  torch::Tensor next_logits;         // [B, V] float32: logits for each row's next token
  const int64_t budget = params.max_tokens_in_flight;  // 0 = unlimited
  // After a forward each row's KV holds next_position real tokens (positions 0 .. next_position - 1).
  auto record_forward = [&] {
    int64_t in_flight = 0;
    for (const Row& row : rows) in_flight += row.next_position;
    st.peak_tokens_in_flight = std::max(st.peak_tokens_in_flight, in_flight);
    st.peak_rows = std::max(st.peak_rows, static_cast<int>(rows.size()));
    st.peak_columns = std::max(st.peak_columns, cache.length());
  };

  // Drops the padding columns every row has in front if there are at least `min_columns` of them.
  auto trim_front = [&](int64_t min_columns) {
    auto any = key_mask.any(0).to(torch::kCPU).contiguous();
    const bool* a = any.data_ptr<bool>();
    int64_t common = 0;
    while (common < any.size(0) && !a[common]) ++common;
    if (common >= min_columns) {
      cache.drop_front(common);
      key_mask = key_mask.narrow(1, common, key_mask.size(1) - common).contiguous();
    }
    padded = !key_mask.all().item<bool>();
  };
  // Drops every row not in `keep_rows` (ascending) from the batch, and from `also` ([B, ...] on the
  // device) when given, then trims the padding columns every remaining row has in front.
  auto compact = [&](const std::vector<int64_t>& keep_rows, torch::Tensor* also) {
    std::vector<Row> kept;
    for (int64_t r : keep_rows) kept.push_back(std::move(rows[r]));
    rows = std::move(kept);
    if (rows.empty()) {
      cache.clear();
      return;
    }
    auto sel = torch::tensor(keep_rows, i64).to(device);
    cache.select_rows(sel);
    key_mask = key_mask.index_select(0, sel);
    if (also) *also = also->index_select(0, sel);
    trim_front(1);
  };

  while (!queue.empty() || !rows.empty()) {
    // 1. Admit queued sequences into free slots (within the prefill budget): stack their cached K/V
    //    right-aligned to the longest, prefill their pending tokens left-padded to the longest (the
    //    padding sits between history and new tokens; the key mask hides it). A new row that fits in
    //    the running batch's columns takes a finished row's slot in place (KVCache::write_row: no other
    //    row is copied); the rest join at the end after aligning the group with the running batch by
    //    left-padding the shorter. With a budget of tokens in flight, the head of the queue waits (FIFO)
    //    until the rows' reservations leave room for its own (history + pending + cap); with an empty
    //    batch it is admitted regardless.
    std::vector<Request> idx;
    int64_t H = 0, T = 0;
    std::vector<int64_t> free_slots;  // finished rows still in the batch
    for (size_t r = 0; r < rows.size(); ++r)
      if (rows[r].done) free_slots.push_back(r);
    const size_t running = rows.size() - free_slots.size();
    if (!queue.empty() && running < static_cast<size_t>(max_batch)) {
      int64_t reserved = 0;
      for (const Row& row : rows) reserved += row.done ? 0 : row.reserve;
      while (!queue.empty() && running + idx.size() < static_cast<size_t>(max_batch)) {
        const Request& q = queue.front();
        const Sequence& s = *q.seq;
        const int64_t h = std::max(H, s.cached);
        const int64_t t = std::max<int64_t>(T, s.tokens.size() - s.cached);
        if (!idx.empty() && static_cast<int64_t>(idx.size() + 1) * (h + t) > params.max_prefill_tokens) break;
        const int64_t need = static_cast<int64_t>(s.tokens.size()) + q.cap;
        if (budget > 0 && reserved + need > budget && !(running == 0 && idx.empty())) break;
        reserved += need;
        H = h;
        T = t;
        idx.push_back(q);
        queue.pop_front();
      }
    }
    if (!idx.empty()) {
      const int64_t n = idx.size();
      auto ids = torch::zeros({n, T}, i64);
      auto pos = torch::zeros({n, T}, i64);
      auto mask = torch::zeros({n, H + T}, torch::kBool);
      std::vector<const policy::KVCache*> parts;
      for (int64_t r = 0; r < n; ++r) {
        Sequence& s = *idx[r].seq;
        const int64_t h = s.cached, L = static_cast<int64_t>(s.tokens.size()) - h, off = T - L;
        ids[r].narrow(0, off, L).copy_(torch::tensor(std::vector<int64_t>(s.tokens.begin() + h, s.tokens.end()), i64));
        pos[r].narrow(0, off, L).copy_(torch::arange(h, h + L, i64));
        mask[r].narrow(0, H - h, h).fill_(true);
        mask[r].narrow(0, H + off, L).fill_(true);
        parts.push_back(&s.cache);
        *forwarded += L;
      }
      policy::KVCache fresh = policy::KVCache::stack(parts, H);
      std::vector<Row> joining;
      for (const Request& q : idx) {  // the group cache now holds these rows
        q.seq->cache.clear();
        q.seq->cached = q.seq->tokens.size();
        const int64_t len = static_cast<int64_t>(q.seq->tokens.size());
        joining.push_back(Row{q, len + q.cap, len, Rng{q.stream}, {}});
      }
      mask = mask.to(device);
      auto hidden = model->forward(ids.to(device), pos.to(device), &fresh, mask);
      auto logits = model->next_token_logits(hidden.select(1, T - 1));  // [n, V]
      const int64_t P = H + T;
      if (rows.empty()) {
        cache = std::move(fresh);
        key_mask = mask;
        next_logits = logits;
        rows = std::move(joining);
      } else {
        const int64_t S = cache.length();
        std::vector<int64_t> rest;  // group rows that join at the end of the batch
        size_t reused = 0;
        for (int64_t j = 0; j < n; ++j) {
          if (P > S || reused == free_slots.size()) {
            rest.push_back(j);
            continue;
          }
          const int64_t f = free_slots[reused++];
          cache.write_row(f, fresh, j, S - P);
          key_mask[f].zero_();
          key_mask[f].narrow(0, S - P, P).copy_(mask[j]);
          next_logits[f].copy_(logits[j]);
          rows[f] = std::move(joining[j]);
          ++st.reused_slots;
        }
        if (!rest.empty()) {
          if (static_cast<int64_t>(rest.size()) < n) {
            auto sel = torch::tensor(rest, i64).to(device);
            fresh.select_rows(sel);
            mask = mask.index_select(0, sel);
            logits = logits.index_select(0, sel);
          }
          const int64_t m = rest.size();
          if (S > P) {
            fresh.left_pad(S - P);
            mask = torch::cat({torch::zeros({m, S - P}, mask.options()), mask}, 1);
          } else if (P > S) {
            cache.left_pad(P - S);
            key_mask = torch::cat({torch::zeros({key_mask.size(0), P - S}, key_mask.options()), key_mask}, 1);
          }
          cache.append_rows(fresh);
          key_mask = torch::cat({key_mask, mask}, 0);
          next_logits = torch::cat({next_logits, logits}, 0);
          for (int64_t j : rest) rows.push_back(std::move(joining[j]));
        }
        // Finished rows no new row took: dropped now (with a decode graph kept as in step 3, unless new
        // rows were appended: the storage is new anyway, and the batch must not exceed max_batch).
        if (reused < free_slots.size() && (!graph || !rest.empty())) {
          std::vector<int64_t> live;
          for (size_t r = 0; r < rows.size(); ++r)
            if (!rows[r].done) live.push_back(r);
          compact(live, &next_logits);
        } else if (reused > 0) {
          // Rows written in place sit behind padding; when the longest row has left, every row has
          // padding in front that no compaction trims while the queue keeps the slots busy. Trim it
          // once it is a quarter of the columns (or 64), so the cache stays within ~4/3 of the longest
          // row and the copy (and a graph's re-capture) is amortised.
          trim_front(std::max<int64_t>(64, cache.length() / 4));
        }
      }
      padded = !key_mask.all().item<bool>();
      ++st.prefills;
      st.peak_prefill_tokens = std::max(st.peak_prefill_tokens, n * P);
      record_forward();
    }

    // 2. Choose the next token of every row (and its logprob): one round.
    const int64_t B = rows.size();
    ++st.rounds;
    std::vector<int64_t> chosen(B);
    std::vector<float> logprobs(B);
    if (host_draw) choose_on_host(next_logits, params, rows, chosen, logprobs);
    else choose_on_device(next_logits, params, rows, chosen, logprobs);
    auto chosen_t = torch::tensor(chosen, i64).to(device);

    // 3. Record; finish rows that sampled a stop token, spelled a stop string or reached their cap.
    std::vector<int64_t> keep_rows;  // rows that go on generating
    for (int64_t r = 0; r < B; ++r) {
      if (rows[r].done) continue;
      GenerationResult& res = rows[r].result;
      res.tokens.push_back(chosen[r]);
      res.logprobs.push_back(logprobs[r]);
      if (keep) rows[r].req.seq->tokens.push_back(chosen[r]);
      bool stopped = stop.count(chosen[r]) > 0;
      if (!stopped && stop_window > 0) {
        const size_t w = std::min(stop_window, res.tokens.size());
        const std::string text = params.detokenize(std::vector<int64_t>(res.tokens.end() - w, res.tokens.end()));
        for (const std::string& s : params.stop_strings)
          if (text.find(s) != std::string::npos) {
            stopped = true;
            res.stop_string = s;
            break;
          }
      }
      if (!stopped && static_cast<int>(res.tokens.size()) < rows[r].req.cap) {
        keep_rows.push_back(r);
        continue;
      }
      res.finish_reason = stopped ? FinishReason::kStop : FinishReason::kLength;
      if (keep) {  // park the row's real K/V columns (all its tokens but the last, not yet fed)
        Sequence& s = *rows[r].req.seq;
        auto cols = key_mask[r].nonzero().view({-1});
        s.cache = cache.gather_row(r, cols);
        s.cached = cols.size(0);
        if (s.cached != static_cast<int64_t>(s.tokens.size()) - 1)
          throw spade::Error("generate: internal error: cached " + std::to_string(s.cached) + " of " +
                             std::to_string(s.tokens.size()) + " tokens");
      }
      rows[r].done = true;
      rows[r].req.seq->in_turn = false;
      std::optional<Request> next = finish(rows[r].req, std::move(rows[r].result));
      if (next) enqueue(*next);
    }
    // Compaction drops finished rows. It copies every remaining row and replaces the cache's storage
    // (which a decode graph must then capture anew, ~ a few eager steps' time). So when the queue has
    // a sequence waiting, finished rows stay for one step (decoded and ignored: rows do not interact)
    // and step 1 writes the new rows into their slots in place. With a graph they also stay until a
    // quarter of the batch has finished. Without either, with a budget of tokens in flight (whose
    // accounting assumes a finished row holds no KV), or when no row is left, they go at once.
    const int64_t finished = B - static_cast<int64_t>(keep_rows.size());
    const bool refill = !queue.empty() && budget == 0;
    if (finished > 0 && (keep_rows.empty() || (!refill && (!graph || 4 * finished >= B || budget > 0)))) {
      compact(keep_rows, &chosen_t);
      if (rows.empty()) continue;
    }

    // 4. Decode one step for the remaining rows.
    const int64_t Bk = rows.size();
    std::vector<int64_t> positions(Bk);
    for (int64_t r = 0; r < Bk; ++r) positions[r] = rows[r].next_position++;
    key_mask = torch::cat({key_mask, torch::ones({Bk, 1}, key_mask.options())}, 1);
    // Without padding a one-token step needs no mask (it may attend to every cached slot).
    auto step_ids = chosen_t.view({Bk, 1});
    auto step_pos = torch::tensor(positions, i64).to(device).view({Bk, 1});
    const torch::Tensor step_mask = padded ? key_mask : torch::Tensor();
    if (graph) {
      next_logits = graph->step(step_ids, step_pos, cache, step_mask);  // overwritten by the next step
    } else {
      auto hidden = model->forward(step_ids, step_pos, &cache, step_mask);
      next_logits = model->next_token_logits(hidden.select(1, 0));
    }
    for (const Row& row : rows) *forwarded += row.done ? 0 : 1;  // deferred finished rows are not real tokens
    ++st.decode_steps;
    record_forward();
  }
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  return reason == FinishReason::kStop ? "stop" : "length";
}

SamplingParams::DecodeGraphMode parse_decode_graph_mode(const std::string& name, const std::string& where) {
  if (name == "auto") return SamplingParams::DecodeGraphMode::kAuto;
  if (name == "off") return SamplingParams::DecodeGraphMode::kOff;
  if (name == "on") return SamplingParams::DecodeGraphMode::kOn;
  throw spade::Error(where + ": decode graph mode must be auto, off or on, not '" + name + "'");
}

uint64_t sampling_stream(uint64_t seed, size_t index) { return splitmix64(seed ^ splitmix64(index + 1)); }

namespace {
/// One turn for each of `seqs` (request a: tag a, stream sampling_stream(seed, a), cap caps[a] or
/// params.max_new_tokens); results in `seqs` order. A cap <= 0 gives an empty "length" result.
std::vector<GenerationResult> one_turn_each(policy::Transformer& model, const std::vector<Sequence*>& seqs,
                                            const SamplingParams& params, uint64_t seed, int max_batch,
                                            const std::vector<int>& caps, bool keep, int64_t* forwarded,
                                            SamplerStats* stats) {
  std::vector<GenerationResult> results(seqs.size());
  std::vector<Request> requests;
  for (size_t a = 0; a < seqs.size(); ++a) {
    const int cap = caps.empty() ? params.max_new_tokens : caps[a];
    if (cap <= 0) results[a].finish_reason = FinishReason::kLength;
    else requests.push_back({seqs[a], cap, sampling_stream(seed, a), a});
  }
  run(model, requests, params, max_batch, keep, forwarded, stats,
      [&](const Request& q, GenerationResult&& r) -> std::optional<Request> {
        results[q.tag] = std::move(r);
        return std::nullopt;
      });
  return results;
}
}  // namespace

std::vector<GenerationResult> generate(policy::Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                       const SamplingParams& params, uint64_t seed, int max_batch,
                                       SamplerStats* stats) {
  validate(params, max_batch);
  for (size_t i = 0; i < prompts.size(); ++i)
    if (prompts[i].empty()) throw spade::Error("generate: prompt " + std::to_string(i) + " is empty");
  std::vector<Sequence> seqs(prompts.size());
  std::vector<Sequence*> ptrs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    seqs[i].tokens = prompts[i];
    ptrs.push_back(&seqs[i]);
  }
  int64_t forwarded = 0;
  return one_turn_each(model, ptrs, params, seed, max_batch, {}, /*keep=*/false, &forwarded, stats);
}

GenerationSession::GenerationSession(policy::Transformer& model) : model_(model) {}
GenerationSession::~GenerationSession() = default;

namespace {
GenerationSession::Sequence& lookup(const std::vector<std::unique_ptr<GenerationSession::Sequence>>& seqs, size_t id,
                                    const char* where) {
  if (id >= seqs.size() || seqs[id]->released)
    throw spade::Error(std::string("GenerationSession::") + where + ": unknown or released sequence " +
                       std::to_string(id));
  return *seqs[id];
}

/// lookup() for an operation that changes the sequence or runs a turn of it: not while a turn of it is
/// queued or running (from a run_turns() callback), nor after the sampler threw during its turn.
GenerationSession::Sequence& lookup_idle(const std::vector<std::unique_ptr<GenerationSession::Sequence>>& seqs,
                                         size_t id, const char* where) {
  GenerationSession::Sequence& s = lookup(seqs, id, where);
  if (s.in_turn)
    throw spade::Error(std::string("GenerationSession::") + where + ": sequence " + std::to_string(id) +
                       " has a turn queued or running");
  if (s.broken)
    throw spade::Error(std::string("GenerationSession::") + where + ": sequence " + std::to_string(id) +
                       " was in a turn when the sampler threw; its cache is lost: release it");
  return s;
}
}  // namespace

size_t GenerationSession::add_sequence(const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw spade::Error("GenerationSession::add_sequence: empty prompt");
  seqs_.push_back(std::make_unique<Sequence>());
  seqs_.back()->tokens = prompt;
  return seqs_.size() - 1;
}

void GenerationSession::append(size_t id, const std::vector<int64_t>& tokens) {
  Sequence& s = lookup_idle(seqs_, id, "append");
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
}

std::vector<GenerationResult> GenerationSession::generate(const std::vector<size_t>& ids, const SamplingParams& params,
                                                          uint64_t seed, int max_batch,
                                                          const std::vector<int>& max_new_tokens,
                                                          SamplerStats* stats) {
  if (!max_new_tokens.empty() && max_new_tokens.size() != ids.size())
    throw spade::Error("GenerationSession::generate: " + std::to_string(max_new_tokens.size()) +
                       " max_new_tokens caps for " + std::to_string(ids.size()) + " sequences");
  std::vector<Sequence*> ptrs;
  std::unordered_set<size_t> seen;
  for (size_t id : ids) {
    ptrs.push_back(&lookup_idle(seqs_, id, "generate"));
    if (!seen.insert(id).second)
      throw spade::Error("GenerationSession::generate: sequence " + std::to_string(id) + " listed twice");
  }
  return one_turn_each(model_, ptrs, params, seed, max_batch, max_new_tokens, /*keep=*/true, &forwarded_, stats);
}

void GenerationSession::run_turns(const std::vector<TurnRequest>& first, const SamplingParams& params, int max_batch,
                                  const TurnEnd& on_turn_end, SamplerStats* stats) {
  auto request = [&](const TurnRequest& t) {
    Sequence& s = lookup(seqs_, t.id, "run_turns");  // in_turn is checked when it is queued
    if (s.broken) lookup_idle(seqs_, t.id, "run_turns");  // throws the broken error
    return Request{&s, t.max_new_tokens, t.stream, t.id};
  };
  std::vector<Request> requests;
  for (const TurnRequest& t : first) requests.push_back(request(t));
  run(model_, requests, params, max_batch, /*keep=*/true, &forwarded_, stats,
      [&](const Request& q, GenerationResult&& r) -> std::optional<Request> {
        std::optional<TurnRequest> next = on_turn_end({q.tag, q.cap, q.stream}, std::move(r));
        if (!next) return std::nullopt;
        return request(*next);
      });
}

void GenerationSession::drop_cache(size_t id) {
  Sequence& s = lookup_idle(seqs_, id, "drop_cache");
  s.cache.clear();
  s.cached = 0;
}

void GenerationSession::release(size_t id) {
  Sequence& s = lookup(seqs_, id, "release");
  if (s.in_turn)
    throw spade::Error("GenerationSession::release: sequence " + std::to_string(id) + " has a turn queued or running");
  s.cache.clear();
  s.tokens.clear();
  s.tokens.shrink_to_fit();
  s.cached = 0;
  s.released = true;
}

const std::vector<int64_t>& GenerationSession::tokens(size_t id) const { return lookup(seqs_, id, "tokens").tokens; }
int64_t GenerationSession::cached_tokens(size_t id) const { return lookup(seqs_, id, "cached_tokens").cached; }
int64_t GenerationSession::forwarded_tokens() const { return forwarded_; }

}  // namespace spade::rollout
