#include "rollout/sampler.h"

#include <torch/torch.h>

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "common/error.h"

namespace spade::rollout {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// xoshiro-free, portable stream: splitmix64 counter mode (same numbers on every platform/libstdc++).
struct Rng {
  uint64_t state;
  double uniform() {  // [0, 1) with 53 random bits
    state += 0x9E3779B97F4A7C15ull;
    return static_cast<double>(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
  }
};

struct Row {
  size_t prompt_index;
  int64_t next_position;  // RoPE position of the next token to feed
  Rng rng;
  GenerationResult result;
};

}  // namespace

std::vector<GenerationResult> generate(policy::Transformer& model, const std::vector<std::vector<int64_t>>& prompts,
                                       const SamplingParams& params, uint64_t seed, int max_batch) {
  if (max_batch < 1) throw spade::Error("generate: max_batch must be >= 1");
  if (params.temperature < 0) throw spade::Error("generate: temperature must be >= 0");
  if (!(params.top_p > 0 && params.top_p <= 1)) throw spade::Error("generate: top_p must be in (0, 1]");
  if (!(params.min_p >= 0 && params.min_p <= 1)) throw spade::Error("generate: min_p must be in [0, 1]");
  for (size_t i = 0; i < prompts.size(); ++i)
    if (prompts[i].empty()) throw spade::Error("generate: prompt " + std::to_string(i) + " is empty");

  std::vector<GenerationResult> results(prompts.size());
  if (params.max_new_tokens <= 0) {
    for (auto& r : results) r.finish_reason = "length";
    return results;
  }
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  const torch::Device device = model->parameters().front().device();
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  const std::unordered_set<int64_t> stop(params.stop_token_ids.begin(), params.stop_token_ids.end());
  const bool greedy = params.temperature == 0;
  const double logprob_temperature = greedy ? 1.0 : params.temperature;
  const int64_t vocab = model->config().vocab_size;

  std::deque<size_t> queue;
  for (size_t i = 0; i < prompts.size(); ++i) queue.push_back(i);
  std::vector<Row> rows;             // active rows, in batch order
  policy::KVCache cache;
  torch::Tensor key_mask;            // [B, S] bool: true = real token
  torch::Tensor next_logits;         // [B, V] float32: logits for each row's next token

  while (!queue.empty() || !rows.empty()) {
    // 1. Admit queued prompts into free slots: prefill them as a left-padded batch, then align the
    //    two caches by left-padding the shorter and stack the rows.
    if (!queue.empty() && static_cast<int>(rows.size()) < max_batch) {
      const size_t n = std::min(queue.size(), static_cast<size_t>(max_batch) - rows.size());
      std::vector<size_t> idx(queue.begin(), queue.begin() + n);
      queue.erase(queue.begin(), queue.begin() + n);
      int64_t P = 0;
      for (size_t i : idx) P = std::max<int64_t>(P, prompts[i].size());
      auto ids = torch::zeros({(int64_t)n, P}, i64);
      auto pos = torch::zeros({(int64_t)n, P}, i64);
      auto mask = torch::zeros({(int64_t)n, P}, torch::kBool);
      for (size_t r = 0; r < n; ++r) {
        const auto& p = prompts[idx[r]];
        const int64_t L = p.size(), off = P - L;
        ids[r].narrow(0, off, L).copy_(torch::tensor(p, i64));
        pos[r].narrow(0, off, L).copy_(torch::arange(L, i64));
        mask[r].narrow(0, off, L).fill_(true);
      }
      policy::KVCache fresh;
      mask = mask.to(device);
      auto hidden = model->forward(ids.to(device), pos.to(device), &fresh, mask);
      auto logits = model->lm_head(hidden.select(1, P - 1));  // [n, V]
      if (!rows.empty()) {
        const int64_t S = cache.length();
        if (S > P) {
          fresh.left_pad(S - P);
          mask = torch::cat({torch::zeros({(int64_t)n, S - P}, mask.options()), mask}, 1);
        } else if (P > S) {
          cache.left_pad(P - S);
          key_mask = torch::cat({torch::zeros({key_mask.size(0), P - S}, key_mask.options()), key_mask}, 1);
        }
        cache.append_rows(fresh);
        key_mask = torch::cat({key_mask, mask}, 0);
        next_logits = torch::cat({next_logits, logits}, 0);
      } else {
        cache = std::move(fresh);
        key_mask = mask;
        next_logits = logits;
      }
      for (size_t i : idx)
        rows.push_back(Row{i, (int64_t)prompts[i].size(), Rng{splitmix64(seed ^ splitmix64(i + 1))}, {}});
    }

    // 2. Choose the next token of every row.
    const int64_t B = rows.size();
    std::vector<int64_t> chosen(B);
    if (greedy) {
      auto am = next_logits.argmax(-1).to(torch::kCPU);
      for (int64_t r = 0; r < B; ++r) chosen[r] = am[r].item<int64_t>();
    } else {
      // Candidates sorted by probability (descending): top-k, or the whole vocabulary.
      auto z = next_logits / params.temperature;
      torch::Tensor vals, cand;
      if (params.top_k > 0 && params.top_k < vocab) std::tie(vals, cand) = z.topk(params.top_k, -1, true, true);
      else std::tie(vals, cand) = z.sort(-1, /*descending=*/true);
      auto probs = torch::softmax(vals, -1);  // renormalised over the top-k survivors (HF order)
      // Top-p on the device: a token survives if the mass strictly before it is < top_p; only the
      // widest surviving prefix is copied to the host.
      auto before = probs.cumsum(-1) - probs;
      auto keep = before < params.top_p;
      if (params.min_p > 0) keep = keep.logical_and(probs >= probs.narrow(1, 0, 1) * params.min_p);
      const int64_t width = std::max<int64_t>(1, keep.sum(1).max().item<int64_t>());
      probs = (probs * keep).narrow(1, 0, width).to(torch::kCPU, torch::kDouble).contiguous();
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
    auto chosen_t = torch::tensor(chosen, i64).to(device);
    auto logprobs = policy::token_logprobs(next_logits, chosen_t, logprob_temperature).to(torch::kCPU);

    // 3. Record; finish rows that sampled a stop token or reached the length limit.
    std::vector<int64_t> keep_rows;
    for (int64_t r = 0; r < B; ++r) {
      GenerationResult& res = rows[r].result;
      res.tokens.push_back(chosen[r]);
      res.logprobs.push_back(logprobs[r].item<float>());
      if (stop.count(chosen[r])) res.finish_reason = "stop";
      else if ((int)res.tokens.size() >= params.max_new_tokens) res.finish_reason = "length";
      else keep_rows.push_back(r);
    }
    if ((int64_t)keep_rows.size() < B) {
      std::vector<Row> kept;
      for (int64_t r = 0; r < B; ++r) {
        if (rows[r].result.finish_reason.empty()) kept.push_back(std::move(rows[r]));
        else results[rows[r].prompt_index] = std::move(rows[r].result);
      }
      rows = std::move(kept);
      if (rows.empty()) {
        cache.clear();
        continue;
      }
      auto sel = torch::tensor(keep_rows, i64).to(device);
      cache.select_rows(sel);
      key_mask = key_mask.index_select(0, sel);
      chosen_t = chosen_t.index_select(0, sel);
      // Trim padding columns that every remaining row has in front.
      auto any = key_mask.any(0).to(torch::kCPU).contiguous();
      const bool* a = any.data_ptr<bool>();
      int64_t common = 0;
      while (common < any.size(0) && !a[common]) ++common;
      if (common > 0) {
        cache.drop_front(common);
        key_mask = key_mask.narrow(1, common, key_mask.size(1) - common).contiguous();
      }
    }

    // 4. Decode one step for the remaining rows.
    const int64_t Bk = rows.size();
    std::vector<int64_t> positions(Bk);
    for (int64_t r = 0; r < Bk; ++r) positions[r] = rows[r].next_position++;
    key_mask = torch::cat({key_mask, torch::ones({Bk, 1}, key_mask.options())}, 1);
    auto hidden = model->forward(chosen_t.view({Bk, 1}), torch::tensor(positions, i64).to(device).view({Bk, 1}),
                                 &cache, key_mask);
    next_logits = model->lm_head(hidden.select(1, 0));
  }
  if (was_training) model->train();
  return results;
}

}  // namespace spade::rollout
