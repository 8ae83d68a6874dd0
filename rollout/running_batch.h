// The sampler's request queue and running batch (internal to rollout/, not public API; the behaviour is
// documented in rollout/sampler.h). sampler.cpp's run() drives them in the shape of vLLM v1's engine
// core loop, once per sampling round:
//   schedule  RequestQueue::admit()   the head of the queue that fits the free rows and the budgets
//   execute   RunningBatch::prefill() one forward over the admitted group, which then joins the batch
//             RunningBatch::choose()  every row's next token and logprob from its logits
//   update    RunningBatch::update()  record the tokens; finish rows (park their K/V, hand their
//                                     follow-up turns to the queue); drop finished rows
//   execute   RunningBatch::decode()  one forward feeding every row its token (a decode step)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "common/splitmix64.h"
#include "policy/decode_graph.h"
#include "policy/transformer.h"
#include "rollout/sampler.h"

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

namespace detail {

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
/// tokens from the random stream `stream` with the filters and stops of `params`. `tag` is the
/// caller's (result index, sequence id or stream request id).
struct Request {
  Sequence* seq;
  int cap;          // max new tokens, >= 1
  uint64_t stream;  // seed of the row's random stream (sampling_stream())
  size_t tag;
  /// This row's sampling (temperature, top-k/p, min-p, top_logprobs, stops); valid until its turn ends
  /// (its FinishFn returns). The queue itself never reads it.
  const SamplingParams* params = nullptr;
};

class RequestQueue;

/// Called when a request's turn ends, with its result (and, when `keep`, the sequence's K/V parked
/// back in seq->cache); returns the sequence's next turn, if any, which joins the queue.
using FinishFn = std::function<std::optional<Request>(const Request&, GenerationResult&&)>;
/// Called after each token that does not end a request's turn, with its result so far; false ends the
/// turn at once (FinishReason::kAbort; the FinishFn follows).
using TokenFn = std::function<bool(const Request&, const GenerationResult&)>;
/// Called once per round before admission with the queue and the rows free (max_batch minus the rows
/// running and queued); may push requests (generate_stream's arrivals).
using ArrivalFn = std::function<void(RequestQueue&, size_t free)>;

/// One row's next token and its logprob (and, with params->top_logprobs, the most likely tokens).
struct Draw {
  int64_t token;
  float logprob;
  std::vector<TokenLogprob> top;
};

/// A request in the running batch.
struct Row {
  Request req;
  int64_t reserve;        // tokens reserved under max_tokens_in_flight: KV length at admission + cap
  int64_t next_position;  // RoPE position of the next token to feed
  Rng rng;
  GenerationResult result;
  bool done = false;      // finished, result handed out; kept in the batch until it is compacted (its
                          // req.params may then be gone: it draws nothing)
  Draw draw{};            // this round's token (the next decode step's input) and its logprob
};

/// Sets rows[r].draw for every unfinished row from logits [rows.size(), V] (float32), each drawn from
/// its row's random stream with its req.params' filters (finished rows get token 0, fed and ignored):
/// as loops over the raw logits on the host when `on_host` (CPU logits only), else as tensor ops on the
/// logits' device (rows sharing a SamplingParams draw together). Fills draw.top for rows whose
/// params->top_logprobs > 0. Defined in sampler.cpp with the draws.
void draw_tokens(const torch::Tensor& logits, bool on_host, std::vector<Row>& rows);

/// The requests waiting for a row, first in first out. If an exception leaves the sampler while it
/// lives, the sequences with a turn queued or running have lost their K/V (it lived in the batch): its
/// destructor then marks them broken (cache cleared), so that a later turn cannot treat zeros as their
/// history.
class RequestQueue {
 public:
  RequestQueue() = default;
  ~RequestQueue();
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  /// Queues `q` and marks its sequence in_turn. Throws spade::Error for a cap < 1, a sequence that
  /// already has a turn queued or running, or one with no pending tokens (tokens.size() <= cached).
  void push(const Request& q);
  bool empty() const { return waiting_.empty(); }
  size_t size() const { return waiting_.size(); }
  /// The turn of `seq` has ended (RunningBatch::update, before its FinishFn): it leaves entered_.
  void leave(Sequence* seq) { entered_.erase(seq); }

  /// Schedule: removes and returns the requests at the head of the queue (FIFO, none skips ahead) that
  /// join a batch of `running` unfinished rows whose reservations total `reserved` tokens, while
  ///   - the batch stays within max_batch rows;
  ///   - the group's rows x (its longest cached history + its longest pending run), the columns its
  ///     prefill pads to, stay within params.max_prefill_tokens (the first request is always taken);
  ///   - with params.max_tokens_in_flight > 0, reserved + each taken request's tokens.size() + cap stay
  ///     within it (exceeded only by a request taken alone into a batch with no running row).
  std::vector<Request> admit(size_t running, int64_t reserved, int max_batch, const SamplingParams& params);

 private:
  std::deque<Request> waiting_;
  std::unordered_set<Sequence*> entered_;  // the sequences with a turn queued or running
  int exceptions_ = std::uncaught_exceptions();
};

/// The rows decoding together (continuous batching, sampler.h): row r of the KV cache ([B, kv_heads, S,
/// head_dim] per layer, each row's real tokens right-aligned behind padding), of the key mask ([B, S]
/// bool, true = real token) and of next_logits_ ([B, V] float32) belong to rows_[r]. A finished row may
/// stay in the batch (done, decoded and ignored) until a queued request takes its slot or the batch is
/// compacted. Use inside one run(): under a torch::NoGradGuard with the model in eval mode.
class RunningBatch {
 public:
  /// The draw backend and, per params.decode_graph, a policy::DecodeGraph for decode steps. When `keep`,
  /// sampled tokens are appended to the sequences and finished rows park their K/V in them; every real
  /// token fed through the model is added to *forwarded; `stats` gets the counts and peaks (it must be
  /// zeroed by the caller). Throws spade::Error for Backend::kHost with the model off the CPU.
  RunningBatch(policy::Transformer& model, const SamplingParams& params, bool keep, int64_t* forwarded,
               SamplerStats& stats);

  bool empty() const { return rows_.empty(); }
  /// Rows not finished (RequestQueue::admit's `running`).
  size_t running() const;
  /// Tokens reserved under max_tokens_in_flight by the rows not finished (RequestQueue::admit's `reserved`).
  int64_t reserved() const;

  /// Execute, prefill: one forward over `group` (non-empty, from RequestQueue::admit): each request's
  /// cached K/V stacked right-aligned to the longest, its pending tokens left-padded to the longest (the
  /// padding sits between history and new tokens; the key mask hides it). The sequences' caches move
  /// into the batch. A new row that fits the batch's columns takes a finished row's slot in place
  /// (KVCache::write_row: no other row is copied); the rest join at the end, the group and the batch
  /// aligned by left-padding the shorter. Finished rows no new row took are then dropped (with a decode
  /// graph kept, unless rows were appended); after in-place writes only, padding every row has in front
  /// is trimmed once it reaches max(64, a quarter of the columns).
  void prefill(const std::vector<Request>& group);
  /// Execute, choose: every row's next token and logprob from its logits (one round; finished rows
  /// still in the batch draw too, and are ignored).
  void choose();
  /// Update: appends each unfinished row's draw to its result (and its sequence when `keep`); a row
  /// that sampled a stop token, spelled a stop string or reached its cap finishes: its K/V is parked in
  /// its sequence when `keep`, `finish` gets its result, and the follow-up turn `finish` returns is
  /// pushed on `queue` at once. A row that goes on is reported to `on_token` (when given), which may end
  /// it (kAbort). Then `refill` (when given) may push new requests on `queue`. Finished rows then leave
  /// the batch (compaction), unless a row goes on, there is no budget of tokens in flight, and either a
  /// request is waiting (the next prefill takes their slots in place) or, with a decode graph, fewer than
  /// a quarter of the rows have finished.
  void update(RequestQueue& queue, const FinishFn& finish, const TokenFn& on_token, const std::function<void()>& refill);
  /// Execute, decode: one forward feeding every row its draw (forward(), or the decode graph).
  void decode();
  /// Requests may arrive while the batch runs (generate_stream): finished rows are then kept for new
  /// rows to take in place, as with a decode graph (update(), prefill()).
  void expect_arrivals() { arrivals_ = true; }

 private:
  /// An admission group after its prefill, before it joins the batch.
  struct Prefilled {
    policy::KVCache cache;  // [n, kv_heads, columns, head_dim]
    torch::Tensor mask;     // [n, columns] bool, on the device
    torch::Tensor logits;   // [n, V]: each row's first next-token logits
    std::vector<Row> rows;
    int64_t columns;        // longest cached history + longest pending run
  };
  Prefilled forward_group(const std::vector<Request>& group);
  void join(Prefilled& group);
  void write_into_slot(int64_t slot, Prefilled& group, int64_t j);
  void append(Prefilled& group, const std::vector<int64_t>& rest);
  bool record(Row& row);
  void park(int64_t r);
  void drop_finished(const std::vector<int64_t>& going_on, const RequestQueue& queue);
  /// Whether finished rows stay in the batch until a quarter of it has finished (a compaction copies
  /// every row and would make a decode graph capture anew; an arriving request takes a kept slot in place).
  bool keep_free_slots() const { return graph_ != nullptr || arrivals_; }
  void record_forward();
  void trim_front(int64_t min_columns);
  void compact(const std::vector<int64_t>& keep_rows, torch::Tensor* also);

  policy::Transformer& model_;
  const SamplingParams& params_;
  const bool keep_;
  int64_t* forwarded_;
  SamplerStats& st_;
  const torch::Device device_;
  const int64_t budget_;                     // params.max_tokens_in_flight; 0 = unlimited
  bool host_draw_ = false;                   // draws on the host (draw_tokens' on_host)
  std::unique_ptr<policy::DecodeGraph> graph_;  // decode steps through fixed buffers (a CUDA graph)
  bool arrivals_ = false;                    // expect_arrivals()

  std::vector<Row> rows_;      // in batch order
  policy::KVCache cache_;      // [B, kv_heads, S, head_dim] per layer
  torch::Tensor key_mask_;     // [B, S] bool: true = real token
  bool padded_ = false;        // key_mask_ has a false entry (else decode steps need no mask)
  torch::Tensor next_logits_;  // [B, V] float32: logits for each row's next token
};

}  // namespace detail
}  // namespace spade::rollout
