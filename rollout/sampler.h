// Batched autoregressive sampling from a policy Transformer with a KV cache, returning the sampled
// token ids and their per-token rollout logprobs (token-in/token-out, docs/design.md "Contracts").
//
// Batching: up to max_batch sequences decode together; sequences of different lengths are
// left-padded (key mask false on padding, RoPE positions counting real tokens only). When a sequence
// finishes, the next queued sequence is prefilled and joins the running batch (continuous batching):
// written into the finished row's slot in place when it fits the batch's columns, else appended (and
// the finished rows dropped). Padding that every row has in front is trimmed whenever rows are dropped,
// and after in-place writes once it reaches max(64, a quarter of the columns), so the batch cache
// stays within ~4/3 of its longest row + 64 columns. Admission is further bounded
// by a prefill budget and an optional budget of tokens in flight (SamplingParams).
//
// Entry points:
//   generate()          one-shot: prompts in, continuations out; no state is kept.
//   GenerationSession   multi-turn: each sequence's KV cache persists between calls, so a turn costs
//                       O(new tokens): the tokens appended since the last call (an observation, and
//                       the previous turn's last sampled token) are prefilled on top of the cached
//                       history, which is never recomputed or re-tokenized (issue 4).
//     ::generate()      one turn for a list of sequences (all of them finish before it returns).
//     ::run_turns()     many turns of many sequences, continuously batched: when a sequence's turn
//                       ends, a callback (e.g. stepping its environment) appends the next observation
//                       and queues its next turn, which takes the next free slot while the other
//                       sequences go on decoding (issue 4: "agent turns of many episodes" fill freed
//                       slots); no turn waits for the slowest sequence of a round of turns.
//   generate_stream()   open-ended: requests arrive while others decode (a server, serve/engine.h), each
//                       with its own SamplingParams and random stream; every sampled token is reported
//                       as it is drawn and a request can be ended early (its client went away).
// All run the same code, so a session turn samples exactly what generate() samples on the full
// history with the same seed (equal tokens; logprobs equal up to fp32 summation order, ~1e-6).
// Thread safety: reads the model's parameters only; do not train the model concurrently. A session
// is not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policy/transformer.h"
#include "policy/sampling_defaults.h"

namespace spade::rollout {

/// Defaults: SPADE reference §5 (policy/sampling_defaults.h).
struct SamplingParams {
  double temperature = policy::sampling_defaults::kTemperature;  // 0 = greedy (argmax; logprobs then use temperature 1), else finite >= 1e-5
  double top_p = policy::sampling_defaults::kTopP;  // nucleus: keep the smallest prefix (by prob, descending) whose mass >= top_p
  int top_k = policy::sampling_defaults::kTopK;     // keep the k most likely tokens; <= 0 disables
  double min_p = policy::sampling_defaults::kMinP;  // keep tokens with p >= min_p * p_max; 0 disables
  int max_new_tokens = 256;   // per sequence
  /// Finishing tokens (e.g. ChatTemplate::eos_id()). Empty = stop only at max_new_tokens.
  std::vector<int64_t> stop_token_ids;
  /// Finishing strings, checked on the decoded text of the sampled tokens after every token (vLLM
  /// `stop`): a sequence finishes as soon as one occurs in its output text. Tokens are never cut
  /// (token-in/token-out): the token that completes the string is the last one kept; the text it
  /// decodes to may extend past the string. Requires `detokenize`.
  std::vector<std::string> stop_strings;
  /// Decodes sampled ids to text (e.g. [&tok](auto& ids) { return tok.decode(ids); }); used only for
  /// stop_strings. Only a window of the last (longest stop string in bytes + 8) tokens is decoded
  /// each step, so the cost per token is O(1); a stop string is thus found if its text is spelled by
  /// at most that many tokens (true whenever every token decodes to >= 1 byte).
  std::function<std::string(const std::vector<int64_t>&)> detokenize;
  /// Also report, for every sampled token, the top_logprobs most likely tokens and their logprobs under
  /// the same distribution as GenerationResult::logprobs (GenerationResult::top_logprobs); 0 = none.
  /// Costs a log-softmax and a top-k over the vocabulary per token of each such row.
  int top_logprobs = 0;
  /// Prefill budget: queued sequences are admitted (prefilled together) while the admitted group's
  /// rows x (cached + new) columns stay within this many tokens (at least one sequence is admitted).
  /// Bounds the attention-score memory of a prefill (rows x heads x T x S floats).
  int64_t max_prefill_tokens = 16384;
  /// Budget of tokens in flight (issue 4: "a request queue with a max-tokens-in-flight budget"); 0 =
  /// unlimited (admission limited by max_batch and max_prefill_tokens only). Tokens in flight = the sum
  /// over the rows in the running batch of their KV length (history + prompt + tokens fed so far; the
  /// padding of the left-padded batch is not counted). Queued sequences are admitted in order (FIFO, no
  /// skipping ahead) while the RESERVED total stays within the budget, where a row reserves its whole
  /// possible length, tokens.size() + its max new tokens, from admission until it leaves the batch.
  /// Why reserve rather than admit by current length (vLLM admits by the blocks a request needs now and
  /// preempts a running request when the cache runs out): this sampler has no preemption, so it must
  /// never admit a row that could later overflow the budget; reserving the worst case guarantees the
  /// KV held never exceeds the budget at any step, at the cost of admitting fewer rows when sequences
  /// stop early. At least one row always runs: a sequence whose own reservation exceeds the budget is
  /// admitted when the batch is empty and then runs alone (its KV may exceed the budget). With a budget,
  /// finished rows leave the batch at once (no deferred removal on the decode-graph path), so the batch
  /// holds no KV of finished rows. Sequences parked in a GenerationSession between calls are not in
  /// flight. Results do not depend on the budget (per-row random streams; equal tokens, logprobs equal
  /// up to summation order). SamplerStats reports the peak.
  int64_t max_tokens_in_flight = 0;
  /// Where the filters and the draw run (same semantics and the same random stream per row either way).
  ///   kAuto:   kHost for CPU logits, kTensor otherwise.
  ///   kHost:   loops over the raw logits on the CPU (CPU logits only; lazy candidate sorting).
  ///   kTensor: tensor ops on the logits' device (topk or a full sort, softmax, cumsum): on CUDA only the
  ///            widest surviving candidate prefix and the logprobs are copied to the host each step. On
  ///            the CPU it runs the CUDA path's ops there (how the tests cover that path without a GPU).
  enum class Backend { kAuto, kHost, kTensor };
  Backend backend = Backend::kAuto;
  /// How decode steps (one new token per row) run.
  ///   kAuto: policy::DecodeGraph, replaying a CUDA graph, when DecodeGraph::capturable(model) (a CUDA
  ///          build, the model on CUDA, no MoE layer, autocast off); otherwise forward() (on the CPU the
  ///          model's CPU decode kernel).
  ///   kOff:  forward() every step.
  ///   kOn:   DecodeGraph everywhere; where it cannot capture it runs its fixed-shape step eagerly (how
  ///          the tests cover it on a CPU).
  /// The sampled tokens and logprobs are the same either way up to summation order.
  enum class DecodeGraphMode { kAuto, kOff, kOn };
  DecodeGraphMode decode_graph = DecodeGraphMode::kAuto;
};

/// "auto" | "off" | "on" -> SamplingParams::DecodeGraphMode (config `decode_graph`, `spade bench sampler
/// --decode-graph`). Throws spade::Error naming `where` and the allowed values otherwise.
SamplingParams::DecodeGraphMode parse_decode_graph_mode(const std::string& name, const std::string& where);

/// Why a generation ended: a stop token (kept as the last token) or a stop string ("stop"), the token
/// cap ("length"), or its caller ended it early ("abort": generate_stream's StreamSource::on_token
/// returned false). The ids are the OpenAI API's finish_reason values (vLLM's for "abort"), used in
/// files and logs.
enum class FinishReason { kStop, kLength, kAbort };
const char* finish_reason_name(FinishReason reason);

/// A token id and its log-probability.
struct TokenLogprob {
  int64_t token;
  float logprob;
};

struct GenerationResult {
  std::vector<int64_t> tokens;   // sampled ids (prompt excluded); a stop token, if any, is the last one
  /// logprobs[i] = policy::token_logprobs(logits_i, tokens[i], temperature): the log-probability under
  /// the UNFILTERED temperature-scaled distribution (what the trainer recomputes), even though the
  /// token was drawn after top-k/top-p/min-p filtering. Greedy: temperature 1.
  std::vector<float> logprobs;
  FinishReason finish_reason = FinishReason::kLength;
  std::string stop_string;       // the stop string that ended the sequence, "" otherwise
  /// With SamplingParams::top_logprobs = k > 0: per sampled token, the k most likely tokens (most likely
  /// first; ties by lower id) with their logprobs under the distribution of `logprobs`. Empty otherwise.
  std::vector<std::vector<TokenLogprob>> top_logprobs;
};

/// What one generate() call did, for tests and benchmarks (optional out-parameter of both entry points).
/// "Tokens in flight" as in SamplingParams::max_tokens_in_flight: after each forward (a prefill group
/// or a decode step), the sum over the rows in the batch of their KV length (real tokens only).
struct SamplerStats {
  int64_t peak_tokens_in_flight = 0;  // max over forwards of the tokens in flight
  int peak_rows = 0;                  // max rows in the batch at one forward (finished rows kept for a step
                                      // until a queued sequence takes their slot, or deferred on the
                                      // decode-graph path, included)
  int prefills = 0;                   // admission prefills (groups of queued sequences prefilled together)
  int64_t peak_prefill_tokens = 0;    // max over prefills of rows x (cached + new) columns, the quantity
                                      // max_prefill_tokens bounds (exceeded only by a lone sequence)
  int64_t decode_steps = 0;           // one-token decode forwards
  int64_t reused_slots = 0;           // admitted rows written in place into a finished row's slot
  int64_t peak_columns = 0;           // max over forwards of the batch cache's columns (real + padding)
  int64_t rounds = 0;                 // sampling rounds: every running row gets one token per round, so
                                      // a sequence admitted with a free slot at round j samples its
                                      // first token at round j (its prefill's logits)
};

/// The seed of the random stream generate() gives prompt `index` under `seed`: splitmix64(seed ^
/// splitmix64(index + 1)) (common/splitmix64.h). A TurnRequest with this stream samples what that
/// generate() call samples for that prompt (same history, params and cap), whatever runs beside it.
uint64_t sampling_stream(uint64_t seed, size_t index);

/// Samples one continuation per prompt; results are in prompt order.
/// Filtering order as in HF generate: temperature, top-k, top-p, min-p, then a draw from the
/// renormalised survivors. Randomness: each prompt i has its own stream seeded by (seed, i), so its
/// draws do not depend on which other prompts share the batch; the same inputs, seed and max_batch
/// give identical results. Runs under torch::NoGradGuard on the model's device. On CPU the filters and
/// the draw run as loops over the raw logits (and decode steps use the model's CPU decode kernel,
/// TransformerImpl::set_cpu_decode_kernel); on other devices as tensor ops (SamplingParams::backend);
/// the semantics are the same.
/// Throws spade::Error for an empty prompt, max_batch < 1 or invalid parameters (temperature neither 0
/// nor finite >= 1e-5, top_p outside (0, 1], min_p outside [0, 1], stop_strings without detokenize,
/// max_tokens_in_flight < 0). `stats`, if given, is overwritten with what the call did.
std::vector<GenerationResult> generate(policy::Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                       const SamplingParams& params, uint64_t seed, int max_batch = 32,
                                       SamplerStats* stats = nullptr);

/// One request of generate_stream(): a prompt with its own sampling parameters and random stream.
struct StreamRequest {
  uint64_t id;                    // the caller's handle, passed back to on_token / on_finish; unique among
                                  // the requests running
  std::vector<int64_t> prompt;    // non-empty, ids in [0, vocab)
  /// Its sampling: temperature, top_p, top_k, min_p, top_logprobs, stop_token_ids, stop_strings (with
  /// detokenize) and max_new_tokens (its cap; <= 0 finishes it at once, empty, "length"). The batch-wide
  /// fields (max_prefill_tokens, max_tokens_in_flight, backend, decode_graph) are ignored here. Not
  /// owned: it must stay valid until on_finish() returns for this request.
  const SamplingParams* params = nullptr;
  uint64_t stream = 0;            // seed of its random stream: sampling_stream(seed, i) samples what
                                  // generate() samples for prompt i under `seed`
};

/// The caller side of generate_stream(). All three are called on the thread running generate_stream().
class StreamSource {
 public:
  virtual ~StreamSource() = default;
  /// New requests to start, at most `free` of them (free = max_batch minus the requests running or
  /// admitted but not yet prefilled). Called before the first round and once per sampling round (one
  /// token per running request); return quickly (it sits between two decode steps).
  virtual std::vector<StreamRequest> take(size_t free) = 0;
  /// After each token of request `id` that does not end it, with its result so far (tokens, logprobs,
  /// top_logprobs). Return false to end the request now: its row leaves the batch and on_finish()
  /// follows at once with FinishReason::kAbort.
  virtual bool on_token(uint64_t id, const GenerationResult& so_far) = 0;
  /// Request `id` ended (stop, length or abort) with its whole result.
  virtual void on_finish(uint64_t id, GenerationResult&& result) = 0;
};

/// Continuous batching over requests that arrive while others decode: each round take() may add
/// requests, which are prefilled and join the running batch (one FIFO queue, the admission rules and
/// budgets of generate(), read from `batch_params`: max_prefill_tokens, max_tokens_in_flight, backend,
/// decode_graph) while the rows already there go on decoding. Rows with different SamplingParams share
/// the batch; each draws with its own filters from its own stream, so a request samples what generate()
/// samples for it alone (equal tokens; logprobs equal up to fp32 summation order). Returns when no
/// request is running or queued and take() returns none: the caller waits for work and calls again.
/// Throws spade::Error for max_batch < 1, invalid batch_params or request params (as generate()), an
/// empty prompt or a request id that is already running; rethrows what the source throws. After an
/// exception, the requests it had taken and not finished are lost (no on_finish for them).
/// Not thread-safe (one caller thread); reads the model's parameters only.
void generate_stream(policy::Transformer& model, const SamplingParams& batch_params, int max_batch,
                     StreamSource& source, SamplerStats* stats = nullptr);

/// Token sequences whose KV caches persist across generate() calls (the turns of many episodes).
/// A sequence is a token history: tokens[0, cached) have keys/values in its cache; the rest are
/// pending and are prefilled by the next generate() that includes it. generate() appends the sampled
/// tokens to the history (the last one stays pending: it has not been fed yet), append() adds
/// observation/template tokens. Between calls each sequence's cache is kept compact (real tokens
/// only, batch 1) on the model's device: memory is 2 x layers x kv_heads x head_dim x cached
/// elements of the model dtype per sequence; release() frees it.
/// Not thread-safe; the model must outlive the session and not change while a sequence is cached.
class GenerationSession {
 public:
  explicit GenerationSession(policy::Transformer& model);
  ~GenerationSession();
  GenerationSession(const GenerationSession&) = delete;
  GenerationSession& operator=(const GenerationSession&) = delete;

  /// Starts a sequence with `prompt` (pending, not yet prefilled); returns its handle (0, 1, 2, ...).
  /// Throws spade::Error if `prompt` is empty.
  size_t add_sequence(const std::vector<int64_t>& prompt);

  /// Appends `tokens` (pending) to sequence `id`. Throws spade::Error for an unknown/released id, one
  /// with a turn queued or running, or one whose turn the sampler lost to an exception.
  void append(size_t id, const std::vector<int64_t>& tokens);

  /// One turn: samples a continuation for each sequence in `ids` (distinct handles) and appends it
  /// to that sequence. Randomness as generate(): the sequence at index a of `ids` draws from the
  /// stream (seed, a), so a turn samples what generate(histories, params, seed, max_batch) would.
  /// `max_new_tokens`: empty = params.max_new_tokens for every sequence, else one cap per id
  /// (a cap <= 0 yields an empty "length" result and leaves the sequence unchanged).
  /// Results are in `ids` order. Throws spade::Error for an unknown id, max_batch < 1 or invalid
  /// parameters (as generate()). `stats`, if given, is overwritten with what the call did (a row's
  /// reservation under max_tokens_in_flight is its whole history + its cap).
  std::vector<GenerationResult> generate(const std::vector<size_t>& ids, const SamplingParams& params, uint64_t seed,
                                         int max_batch = 32, const std::vector<int>& max_new_tokens = {},
                                         SamplerStats* stats = nullptr);

  /// One turn of one sequence for run_turns(): prefill its pending tokens, then sample up to
  /// max_new_tokens (>= 1) tokens from the random stream `stream` (sampling_stream()).
  struct TurnRequest {
    size_t id;
    int max_new_tokens;
    uint64_t stream;
  };
  /// Called by run_turns() when a turn ends, with that turn's request and result (the sampled tokens
  /// are already appended to the sequence and its K/V parked in its cache). It may append() to that
  /// sequence (e.g. the observation its action produced) and returns the next turn to queue, of that or
  /// any other sequence without a turn queued or running, or nullopt. It must not call generate() or
  /// run_turns(), nor append to, drop_cache() or release() a sequence with a turn queued or running
  /// (those throw spade::Error). An exception it throws leaves run_turns(); sequences that had a turn
  /// queued or running have lost their cache and are then refused by every call but tokens(),
  /// cached_tokens() and release() (same after an exception inside the sampler).
  using TurnEnd = std::function<std::optional<TurnRequest>(const TurnRequest& turn, GenerationResult&& result)>;

  /// Continuous batching across turns: runs the `first` turns and every turn on_turn_end queues,
  /// until none is left. Up to max_batch rows decode together; a turn queued by on_turn_end waits in
  /// the same FIFO queue as the rest and takes the next free slot (prefilling only its pending tokens
  /// on top of its cache), so sequences advance independently: a sequence's next turn can start while
  /// others are still mid-turn. Each turn's draws come from its own stream, so what a turn samples does
  /// not depend on what shares the batch (equal tokens; logprobs equal up to summation order, ~1e-6).
  /// Admission budgets as generate() (SamplingParams::max_prefill_tokens, max_tokens_in_flight, a
  /// turn reserving its whole history + its cap). Throws spade::Error for an unknown id, a cap < 1, a
  /// sequence with no pending tokens or with two turns queued at once, max_batch < 1 or invalid
  /// parameters; rethrows what on_turn_end throws. `stats`, if given, is overwritten with the totals.
  void run_turns(const std::vector<TurnRequest>& first, const SamplingParams& params, int max_batch,
                 const TurnEnd& on_turn_end, SamplerStats* stats = nullptr);

  /// Drops sequence `id`'s cached K/V (its history stays), so its next turn prefills the whole history:
  /// the reference behaviour of re-prefilling every turn, kept for equivalence tests
  /// (EpisodeOptions::persistent_kv_cache = false). Throws spade::Error as append().
  void drop_cache(size_t id);

  /// Frees sequence `id`'s cache and history; the handle becomes invalid. Throws spade::Error for an
  /// unknown/released id or one with a turn queued or running.
  void release(size_t id);

  /// The full token history of `id` (prompt, sampled and appended tokens).
  const std::vector<int64_t>& tokens(size_t id) const;
  /// How many of tokens(id) are in its KV cache (the rest are pending).
  int64_t cached_tokens(size_t id) const;
  /// Real (non-padding) tokens fed through the model since construction, summed over sequences:
  /// with a persistent cache this equals the sum of each sequence's cached_tokens() (each token is
  /// prefilled or decoded exactly once).
  int64_t forwarded_tokens() const;

  struct Sequence;  // internal state of one sequence (defined in sampler.cpp)

 private:
  policy::Transformer& model_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  int64_t forwarded_ = 0;
};

}  // namespace spade::rollout
