#include "rollout/sampler.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "common/splitmix64.h"
#include "rollout/running_batch.h"

namespace spade::rollout {

namespace {

using detail::ArrivalFn;
using detail::Draw;
using detail::FinishFn;
using detail::Request;
using detail::RequestQueue;
using detail::Rng;
using detail::Row;
using detail::RunningBatch;
using detail::Sequence;
using detail::TokenFn;

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
    return {best, log_softmax_at(logits, V, best), {}};
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
    return {pick, log_softmax_at(z.data(), V, pick), {}};
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
  return {token, log_softmax_at(z.data(), V, token), {}};
}

/// Next token and logprob of every unfinished row, on the host (CPU logits [B, V] float32): draw_on_host()
/// per row with its own params. No tensor ops: on CPU a step's sampling is a few loops over the vocabulary.
void choose_on_host(const torch::Tensor& logits, std::vector<Row>& rows) {
  const torch::Tensor l = logits.to(torch::kFloat32).contiguous();
  const int64_t V = l.size(1);
  const float* lp = l.data_ptr<float>();
  std::vector<float> z(V);
  for (size_t r = 0; r < rows.size(); ++r)
    if (!rows[r].done) rows[r].draw = draw_on_host(lp + r * V, V, *rows[r].req.params, rows[r].rng, z);
}

/// The same choice as tensor ops on the logits' device (logits [k, V] float32, e.g. CUDA) for the rows
/// `which` (logits row j is rows[which[j]]), all drawing with `params`: only the surviving candidates
/// and the logprobs are copied to the host.
void choose_on_device(const torch::Tensor& logits, const SamplingParams& params, std::vector<Row>& all,
                      const std::vector<int64_t>& which) {
  struct Rows {  // rows[j] = all[which[j]]
    std::vector<Row>& all;
    const std::vector<int64_t>& which;
    Row& operator[](int64_t j) { return all[which[j]]; }
  } rows{all, which};
  const int64_t B = which.size(), vocab = logits.size(1);
  std::vector<int64_t> chosen(B);
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
  for (int64_t r = 0; r < B; ++r) rows[r].draw = {chosen[r], lp.data_ptr<float>()[r], {}};
}

/// The `k` most likely tokens of logits[V] (any device) at `temperature` (0: 1, as the greedy logprob),
/// with their log_softmax values, most likely first, ties by the lower id.
std::vector<TokenLogprob> top_logprobs_of(const torch::Tensor& logits, double temperature, int k) {
  const torch::Tensor l = logits.to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t V = l.size(0);
  const float t = static_cast<float>(temperature == 0 ? 1.0 : temperature);
  std::vector<float> z(V);
  for (int64_t i = 0; i < V; ++i) z[i] = l.data_ptr<float>()[i] / t;
  const float m = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (float v : z) sum += std::exp(v - m);
  const double log_sum = std::log(sum);
  std::vector<int64_t> ids(V);
  for (int64_t i = 0; i < V; ++i) ids[i] = i;
  const int64_t n = std::min<int64_t>(k, V);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), ByLogitDescending{z.data()});
  std::vector<TokenLogprob> top(n);
  for (int64_t j = 0; j < n; ++j) top[j] = {ids[j], static_cast<float>((z[ids[j]] - m) - log_sum)};  // log_softmax_at's
  return top;
}

}  // namespace

void detail::draw_tokens(const torch::Tensor& logits, bool on_host, std::vector<Row>& rows) {
  for (Row& row : rows)
    if (row.done) row.draw = Draw{0, 0.f, {}};  // fed and ignored; its params may be gone
  if (on_host) {
    choose_on_host(logits, rows);
  } else {
    // Rows sharing a SamplingParams draw together (in generate() and run_turns() that is every row).
    std::vector<const SamplingParams*> groups;
    std::vector<std::vector<int64_t>> members;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].done) continue;
      const auto it = std::find(groups.begin(), groups.end(), rows[r].req.params);
      if (it == groups.end()) {
        groups.push_back(rows[r].req.params);
        members.push_back({static_cast<int64_t>(r)});
      } else {
        members[it - groups.begin()].push_back(r);
      }
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool all = members[g].size() == rows.size();
      const torch::Tensor part =
          all ? logits : logits.index_select(0, torch::tensor(members[g], torch::kLong).to(logits.device()));
      choose_on_device(part, *groups[g], rows, members[g]);
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const SamplingParams* p = rows[r].req.params;
    if (!rows[r].done && p->top_logprobs > 0)
      rows[r].draw.top = top_logprobs_of(logits[r], p->temperature, p->top_logprobs);
  }
}

namespace {

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
  if (params.top_logprobs < 0)
    throw spade::Error("generate: top_logprobs must be >= 0 (0 = none), not " + std::to_string(params.top_logprobs));
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

/// The sampler proper: runs `requests` and every follow-up turn `finish` returns until none is left (and,
/// with `arrivals`, until it adds none either). Pending tokens of each sequence are prefilled on top of
/// its cached K/V; sampled tokens are appended to seq->tokens when `keep` (then finished rows park their
/// real K/V columns back in seq->cache). A sequence may have at most one request queued or running.
/// `params` holds the batch-wide settings (admission budgets, backend, decode graph); each request
/// samples with its own req.params. Adds every real token fed through the model to *forwarded; fills
/// *stats when given. One iteration is one round (rollout/running_batch.h): every row in the batch gets
/// one token. `arrivals` and `on_token` may be empty.
void run(policy::Transformer& model, const std::vector<Request>& requests, const SamplingParams& params,
         int max_batch, bool keep, int64_t* forwarded, SamplerStats* stats, const FinishFn& finish,
         const ArrivalFn& arrivals = {}, const TokenFn& on_token = {}) {
  validate(params, max_batch);
  SamplerStats local_stats;
  SamplerStats& st = stats ? *stats : local_stats;
  st = SamplerStats{};
  RequestQueue queue;  // if anything throws, marks the sequences with a turn queued or running broken
  for (const Request& q : requests) queue.push(q);
  if (arrivals) arrivals(queue, static_cast<size_t>(max_batch) - std::min<size_t>(max_batch, queue.size()));
  if (queue.empty()) return;

  torch::NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  RunningBatch batch(model, params, keep, forwarded, st);
  // New requests join once per round, after the finished rows have freed theirs (and before those rows
  // are dropped, so that waiting requests can take their slots in place).
  std::function<void()> refill;
  if (arrivals) batch.expect_arrivals();
  if (arrivals)
    refill = [&] {
      const size_t busy = batch.running() + queue.size();
      if (busy < static_cast<size_t>(max_batch)) arrivals(queue, max_batch - busy);
    };
  while (!queue.empty() || !batch.empty()) {
    // Schedule: the head of the queue that fits the free rows and the budgets, prefilled together.
    const std::vector<Request> group = queue.admit(batch.running(), batch.reserved(), max_batch, params);
    if (!group.empty()) batch.prefill(group);
    // Every row's next token; record them, finish rows (their next turns join the queue), take new
    // requests, drop the finished rows.
    batch.choose();
    batch.update(queue, finish, on_token, refill);
    // One decode step for the rows left.
    if (!batch.empty()) batch.decode();
  }
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
  }
  return "?";
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
    else requests.push_back({seqs[a], cap, sampling_stream(seed, a), a, &params});
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

void generate_stream(policy::Transformer& model, const SamplingParams& batch_params, int max_batch,
                     StreamSource& source, SamplerStats* stats) {
  validate(batch_params, max_batch);
  // The sequences of the requests taken and not finished (keep = false: a request's tokens and K/V are
  // dropped when it ends; on_finish gets its result).
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> live;
  const ArrivalFn arrivals = [&](RequestQueue& queue, size_t free) {
    for (StreamRequest& r : source.take(free)) {
      if (r.params == nullptr) throw spade::Error("generate_stream: request " + std::to_string(r.id) + " has no params");
      validate(*r.params, max_batch);
      if (r.prompt.empty()) throw spade::Error("generate_stream: request " + std::to_string(r.id) + " has an empty prompt");
      if (live.count(r.id)) throw spade::Error("generate_stream: request id " + std::to_string(r.id) + " is already running");
      if (r.params->max_new_tokens <= 0) {  // as generate(): an empty "length" result
        source.on_finish(r.id, GenerationResult{});
        continue;
      }
      auto seq = std::make_unique<Sequence>();
      seq->tokens = std::move(r.prompt);
      queue.push({seq.get(), r.params->max_new_tokens, r.stream, static_cast<size_t>(r.id), r.params});
      live.emplace(r.id, std::move(seq));
    }
  };
  const FinishFn finish = [&](const Request& q, GenerationResult&& result) -> std::optional<Request> {
    live.erase(q.tag);  // its row is done: the batch no longer reads the sequence
    source.on_finish(q.tag, std::move(result));
    return std::nullopt;
  };
  const TokenFn on_token = [&](const Request& q, const GenerationResult& so_far) { return source.on_token(q.tag, so_far); };
  int64_t forwarded = 0;
  run(model, {}, batch_params, max_batch, /*keep=*/false, &forwarded, stats, finish, arrivals, on_token);
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
    return Request{&s, t.max_new_tokens, t.stream, t.id, &params};
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
