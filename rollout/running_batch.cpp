#include "rollout/running_batch.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace spade::rollout::detail {

namespace {
const torch::TensorOptions i64 = torch::TensorOptions().dtype(torch::kLong);
}  // namespace

RequestQueue::~RequestQueue() {
  if (std::uncaught_exceptions() == exceptions_) return;
  for (Sequence* s : entered_)
    if (s->in_turn) {
      s->in_turn = false;
      s->broken = true;
      s->cache.clear();
      s->cached = 0;
    }
}

void RequestQueue::push(const Request& q) {
  if (q.cap < 1) throw spade::Error("generate: a turn needs max_new_tokens >= 1, not " + std::to_string(q.cap));
  if (q.seq->in_turn)
    throw spade::Error("generate: sequence " + std::to_string(q.tag) + " already has a turn queued or running");
  if (static_cast<int64_t>(q.seq->tokens.size()) <= q.seq->cached)
    throw spade::Error("generate: sequence " + std::to_string(q.tag) + " has no new tokens to condition on");
  q.seq->in_turn = true;
  entered_.insert(q.seq);
  waiting_.push_back(q);
}

std::vector<Request> RequestQueue::admit(size_t running, int64_t reserved, int max_batch,
                                         const SamplingParams& params) {
  const int64_t budget = params.max_tokens_in_flight;
  std::vector<Request> group;
  int64_t H = 0, T = 0;  // the group's longest cached history and longest pending run
  while (!waiting_.empty() && running + group.size() < static_cast<size_t>(max_batch)) {
    const Request& q = waiting_.front();
    const Sequence& s = *q.seq;
    const int64_t h = std::max(H, s.cached);
    const int64_t t = std::max<int64_t>(T, s.tokens.size() - s.cached);
    if (!group.empty() && static_cast<int64_t>(group.size() + 1) * (h + t) > params.max_prefill_tokens) break;
    const int64_t need = static_cast<int64_t>(s.tokens.size()) + q.cap;
    if (budget > 0 && reserved + need > budget && !(running == 0 && group.empty())) break;
    reserved += need;
    H = h;
    T = t;
    group.push_back(q);
    waiting_.pop_front();
  }
  return group;
}

RunningBatch::RunningBatch(policy::Transformer& model, const SamplingParams& params, bool keep, int64_t* forwarded,
                           SamplerStats& stats)
    : model_(model),
      params_(params),
      keep_(keep),
      forwarded_(forwarded),
      st_(stats),
      device_(model->parameters().front().device()),
      budget_(params.max_tokens_in_flight) {
  if (params.backend == SamplingParams::Backend::kHost && !device_.is_cpu())
    throw spade::Error("generate: SamplingParams::Backend::kHost needs CPU logits; the model is on " + device_.str());
  host_draw_ = params.backend == SamplingParams::Backend::kHost ||
               (params.backend == SamplingParams::Backend::kAuto && device_.is_cpu());
  using GraphMode = SamplingParams::DecodeGraphMode;
  if (params.decode_graph == GraphMode::kOn ||
      (params.decode_graph == GraphMode::kAuto && policy::DecodeGraph::capturable(*model)))
    graph_ = std::make_unique<policy::DecodeGraph>(model);
}

size_t RunningBatch::running() const {
  size_t n = 0;
  for (const Row& row : rows_) n += row.done ? 0 : 1;
  return n;
}

int64_t RunningBatch::reserved() const {
  int64_t total = 0;
  for (const Row& row : rows_) total += row.done ? 0 : row.reserve;
  return total;
}

// ---- Execute: prefill --------------------------------------------------------------------------------

void RunningBatch::prefill(const std::vector<Request>& group) {
  Prefilled fresh = forward_group(group);
  const int64_t n = group.size(), P = fresh.columns;
  join(fresh);
  padded_ = !key_mask_.all().item<bool>();
  ++st_.prefills;
  st_.peak_prefill_tokens = std::max(st_.peak_prefill_tokens, n * P);
  record_forward();
}

/// The group's ids [n, T], positions and key mask [n, H + T], its stacked K/V, its rows, and the forward
/// over its pending tokens. The sequences' caches now live in the group's (seq->cache cleared).
RunningBatch::Prefilled RunningBatch::forward_group(const std::vector<Request>& group) {
  const int64_t n = group.size();
  int64_t H = 0, T = 0;  // the longest cached history and the longest pending run
  for (const Request& q : group) {
    H = std::max(H, q.seq->cached);
    T = std::max<int64_t>(T, q.seq->tokens.size() - q.seq->cached);
  }
  auto ids = torch::zeros({n, T}, i64);
  auto pos = torch::zeros({n, T}, i64);
  auto mask = torch::zeros({n, H + T}, torch::kBool);
  std::vector<const policy::KVCache*> parts;
  for (int64_t r = 0; r < n; ++r) {
    Sequence& s = *group[r].seq;
    const int64_t h = s.cached, L = static_cast<int64_t>(s.tokens.size()) - h, off = T - L;
    ids[r].narrow(0, off, L).copy_(torch::tensor(std::vector<int64_t>(s.tokens.begin() + h, s.tokens.end()), i64));
    pos[r].narrow(0, off, L).copy_(torch::arange(h, h + L, i64));
    mask[r].narrow(0, H - h, h).fill_(true);
    mask[r].narrow(0, H + off, L).fill_(true);
    parts.push_back(&s.cache);
    *forwarded_ += L;
  }
  Prefilled fresh{policy::KVCache::stack(parts, H), {}, {}, {}, H + T};
  for (const Request& q : group) {  // the group cache now holds these rows
    q.seq->cache.clear();
    q.seq->cached = q.seq->tokens.size();
    const int64_t len = static_cast<int64_t>(q.seq->tokens.size());
    fresh.rows.push_back(Row{q, len + q.cap, len, Rng{q.stream}, {}});
  }
  fresh.mask = mask.to(device_);
  auto hidden = model_->forward(ids.to(device_), pos.to(device_), &fresh.cache, fresh.mask);
  fresh.logits = model_->next_token_logits(hidden.select(1, T - 1));  // [n, V]
  return fresh;
}

/// Puts the prefilled group into the batch: into finished rows' slots where it fits the columns, the
/// rest appended; then drops the finished rows no new row took, or trims the front padding.
void RunningBatch::join(Prefilled& group) {
  if (rows_.empty()) {
    cache_ = std::move(group.cache);
    key_mask_ = group.mask;
    next_logits_ = group.logits;
    rows_ = std::move(group.rows);
    return;
  }
  std::vector<int64_t> free_slots;  // finished rows still in the batch
  for (size_t r = 0; r < rows_.size(); ++r)
    if (rows_[r].done) free_slots.push_back(r);
  const int64_t n = group.rows.size();
  std::vector<int64_t> rest;  // group rows that join at the end of the batch
  size_t reused = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (group.columns > cache_.length() || reused == free_slots.size()) rest.push_back(j);
    else write_into_slot(free_slots[reused++], group, j);
  }
  if (!rest.empty()) append(group, rest);
  // Finished rows no new row took: dropped now (with a decode graph kept as in update(), unless new
  // rows were appended: the storage is new anyway, and the batch must not exceed max_batch).
  if (reused < free_slots.size() && (!keep_free_slots() || !rest.empty())) {
    std::vector<int64_t> live;
    for (size_t r = 0; r < rows_.size(); ++r)
      if (!rows_[r].done) live.push_back(r);
    compact(live, &next_logits_);
  } else if (reused > 0) {
    // Rows written in place sit behind padding; when the longest row has left, every row has
    // padding in front that no compaction trims while the queue keeps the slots busy. Trim it
    // once it is a quarter of the columns (or 64), so the cache stays within ~4/3 of the longest
    // row and the copy (and a graph's re-capture) is amortised.
    trim_front(std::max<int64_t>(64, cache_.length() / 4));
  }
}

/// Writes row j of the group into the finished row `slot`, right-aligned (group.columns <= the batch's).
void RunningBatch::write_into_slot(int64_t slot, Prefilled& group, int64_t j) {
  const int64_t S = cache_.length(), P = group.columns;
  cache_.write_row(slot, group.cache, j, S - P);
  key_mask_[slot].zero_();
  key_mask_[slot].narrow(0, S - P, P).copy_(group.mask[j]);
  next_logits_[slot].copy_(group.logits[j]);
  rows_[slot] = std::move(group.rows[j]);
  ++st_.reused_slots;
}

/// Appends the group's rows `rest` (ascending) after the batch's, left-padding the shorter of the two.
void RunningBatch::append(Prefilled& group, const std::vector<int64_t>& rest) {
  const int64_t n = group.rows.size(), m = rest.size(), S = cache_.length(), P = group.columns;
  torch::Tensor mask = group.mask, logits = group.logits;
  if (m < n) {
    auto sel = torch::tensor(rest, i64).to(device_);
    group.cache.select_rows(sel);
    mask = mask.index_select(0, sel);
    logits = logits.index_select(0, sel);
  }
  if (S > P) {
    group.cache.left_pad(S - P);
    mask = torch::cat({torch::zeros({m, S - P}, mask.options()), mask}, 1);
  } else if (P > S) {
    cache_.left_pad(P - S);
    key_mask_ = torch::cat({torch::zeros({key_mask_.size(0), P - S}, key_mask_.options()), key_mask_}, 1);
  }
  cache_.append_rows(group.cache);
  key_mask_ = torch::cat({key_mask_, mask}, 0);
  next_logits_ = torch::cat({next_logits_, logits}, 0);
  for (int64_t j : rest) rows_.push_back(std::move(group.rows[j]));
}

// ---- Execute: choose, decode -------------------------------------------------------------------------

void RunningBatch::choose() {
  ++st_.rounds;
  draw_tokens(next_logits_, host_draw_, rows_);
}

void RunningBatch::decode() {
  const int64_t B = rows_.size();
  std::vector<int64_t> tokens(B), positions(B);
  for (int64_t r = 0; r < B; ++r) {
    tokens[r] = rows_[r].draw.token;
    positions[r] = rows_[r].next_position++;
  }
  key_mask_ = torch::cat({key_mask_, torch::ones({B, 1}, key_mask_.options())}, 1);
  auto step_ids = torch::tensor(tokens, i64).to(device_).view({B, 1});
  auto step_pos = torch::tensor(positions, i64).to(device_).view({B, 1});
  // Without padding a one-token step needs no mask (it may attend to every cached slot).
  const torch::Tensor step_mask = padded_ ? key_mask_ : torch::Tensor();
  if (graph_) {
    next_logits_ = graph_->step(step_ids, step_pos, cache_, step_mask);  // overwritten by the next step
  } else {
    auto hidden = model_->forward(step_ids, step_pos, &cache_, step_mask);
    next_logits_ = model_->next_token_logits(hidden.select(1, 0));
  }
  for (const Row& row : rows_) *forwarded_ += row.done ? 0 : 1;  // deferred finished rows are not real tokens
  ++st_.decode_steps;
  record_forward();
}

// ---- Update ------------------------------------------------------------------------------------------

void RunningBatch::update(RequestQueue& queue, const FinishFn& finish, const TokenFn& on_token,
                          const std::function<void()>& refill) {
  std::vector<int64_t> going_on;  // rows that go on generating
  for (int64_t r = 0; r < static_cast<int64_t>(rows_.size()); ++r) {
    Row& row = rows_[r];
    if (row.done) continue;
    if (!record(row)) {
      if (!on_token || on_token(row.req, row.result)) {
        going_on.push_back(r);
        continue;
      }
      row.result.finish_reason = FinishReason::kAbort;
    }
    if (keep_) park(r);
    row.done = true;
    row.req.seq->in_turn = false;
    queue.leave(row.req.seq);
    std::optional<Request> next = finish(row.req, std::move(row.result));
    if (next) queue.push(*next);
  }
  if (refill) refill();
  drop_finished(going_on, queue);
}

/// Appends the row's draw to its result (and to its sequence when keep_); returns whether the row
/// finished (result.finish_reason set): it sampled a stop token, spelled a stop string
/// (result.stop_string set) or reached its cap.
bool RunningBatch::record(Row& row) {
  const SamplingParams& p = *row.req.params;
  GenerationResult& res = row.result;
  res.tokens.push_back(row.draw.token);
  res.logprobs.push_back(row.draw.logprob);
  if (p.top_logprobs > 0) res.top_logprobs.push_back(std::move(row.draw.top));
  if (keep_) row.req.seq->tokens.push_back(row.draw.token);
  bool stopped = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), row.draw.token) != p.stop_token_ids.end();
  size_t window = 0;  // tokens decoded to look for a stop string (their longest + 8); 0 = none
  for (const std::string& s : p.stop_strings) window = std::max(window, s.size() + 8);
  if (!stopped && window > 0) {
    const size_t w = std::min(window, res.tokens.size());
    const std::string text = p.detokenize(std::vector<int64_t>(res.tokens.end() - w, res.tokens.end()));
    for (const std::string& s : p.stop_strings)
      if (text.find(s) != std::string::npos) {
        stopped = true;
        res.stop_string = s;
        break;
      }
  }
  if (!stopped && static_cast<int>(res.tokens.size()) < row.req.cap) return false;
  res.finish_reason = stopped ? FinishReason::kStop : FinishReason::kLength;
  return true;
}

/// Parks row r's real K/V columns in its sequence (all its tokens but the last, not yet fed).
void RunningBatch::park(int64_t r) {
  Sequence& s = *rows_[r].req.seq;
  auto cols = key_mask_[r].nonzero().view({-1});
  s.cache = cache_.gather_row(r, cols);
  s.cached = cols.size(0);
  if (s.cached != static_cast<int64_t>(s.tokens.size()) - 1)
    throw spade::Error("generate: internal error: cached " + std::to_string(s.cached) + " of " +
                       std::to_string(s.tokens.size()) + " tokens");
}

/// Drops the finished rows (every row not in `going_on`) unless they are worth keeping for a step.
/// Compaction copies every remaining row and replaces the cache's storage (which a decode graph must then
/// capture anew, ~ a few eager steps' time). So when the queue has a sequence waiting, finished rows stay
/// for one step (decoded and ignored: rows do not interact) and the next prefill writes the new rows into
/// their slots in place. With a graph, or with requests arriving (expect_arrivals()), they also stay until
/// a quarter of the batch has finished. Without either, with a budget of tokens in flight (whose accounting assumes a finished row holds no KV), or
/// when no row is left, they go at once.
void RunningBatch::drop_finished(const std::vector<int64_t>& going_on, const RequestQueue& queue) {
  const int64_t B = rows_.size(), finished = B - static_cast<int64_t>(going_on.size());
  const bool refill = !queue.empty() && budget_ == 0;
  if (finished > 0 && (going_on.empty() || (!refill && (!keep_free_slots() || 4 * finished >= B || budget_ > 0))))
    compact(going_on, nullptr);
}

// ---- Batch bookkeeping -------------------------------------------------------------------------------

/// Stats after a forward: each row's KV then holds next_position real tokens (positions 0 .. next_position - 1).
void RunningBatch::record_forward() {
  int64_t in_flight = 0;
  for (const Row& row : rows_) in_flight += row.next_position;
  st_.peak_tokens_in_flight = std::max(st_.peak_tokens_in_flight, in_flight);
  st_.peak_rows = std::max(st_.peak_rows, static_cast<int>(rows_.size()));
  st_.peak_columns = std::max(st_.peak_columns, cache_.length());
}

/// Drops the padding columns every row has in front if there are at least `min_columns` of them.
void RunningBatch::trim_front(int64_t min_columns) {
  auto any = key_mask_.any(0).to(torch::kCPU).contiguous();
  const bool* a = any.data_ptr<bool>();
  int64_t common = 0;
  while (common < any.size(0) && !a[common]) ++common;
  if (common >= min_columns) {
    cache_.drop_front(common);
    key_mask_ = key_mask_.narrow(1, common, key_mask_.size(1) - common).contiguous();
  }
  padded_ = !key_mask_.all().item<bool>();
}

/// Drops every row not in `keep_rows` (ascending) from the batch, and from `also` ([B, ...] on the
/// device) when given, then trims the padding columns every remaining row has in front.
void RunningBatch::compact(const std::vector<int64_t>& keep_rows, torch::Tensor* also) {
  std::vector<Row> kept;
  for (int64_t r : keep_rows) kept.push_back(std::move(rows_[r]));
  rows_ = std::move(kept);
  if (rows_.empty()) {
    cache_.clear();
    return;
  }
  auto sel = torch::tensor(keep_rows, i64).to(device_);
  cache_.select_rows(sel);
  key_mask_ = key_mask_.index_select(0, sel);
  if (also) *also = also->index_select(0, sel);
  trim_front(1);
}

}  // namespace spade::rollout::detail
