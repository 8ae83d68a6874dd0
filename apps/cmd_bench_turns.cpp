// `spade bench turns`: multi-turn sampling with continuous batching across turns
// (GenerationSession::run_turns, what rollout::play_episodes runs) vs the same turns in lockstep (one
// GenerationSession::generate per turn number, every sequence's turn k waiting for the longest turn k;
// how play_episodes ran before). Same random weights, prompts, observations, per-turn caps and random
// streams on both sides, so both sample the same tokens ("same_histories" counts the sequences whose
// histories are identical) and only the schedule differs. A random model's next-token distribution is
// nearly flat, so a near-tie between two tokens can flip a draw when a different batch changes the
// fp32 summation order; both histories are then valid samples (tests/rollout check every schedule
// against a teacher-forced recompute), and the work timed is the same: every turn samples its length. Turn lengths vary as agent turns do (a short action, a long reasoning step): each turn's
// length is drawn uniformly from [--min-new, --max-new] (no stop token, so a turn samples exactly its
// length). Prints one JSON object; results are recorded in bench/RESULTS.md.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/commands.h"
#include "apps/error_text.h"
#include "common/error.h"
#include "common/splitmix64.h"
#include "policy/model_shapes.h"
#include "rollout/sampler.h"

namespace spade::apps {

namespace {

struct Workload {
  std::vector<std::vector<int64_t>> prompts;  // [sequences][prompt]
  std::vector<std::vector<int>> caps;         // [sequences][turns]: each turn's length
  std::vector<int64_t> observation;           // appended after every turn but the last
  int64_t tokens = 0;                         // sum of caps
};

struct Timed {
  double seconds = 0;
  rollout::SamplerStats stats;                 // totals over the call(s)
  std::vector<std::vector<int64_t>> histories;  // final token history per sequence
};

// Waits for queued GPU work, so the timings cover it (a no-op on the CPU).
void sync(policy::Transformer& model) {
  if (model->parameters().front().device().is_cuda()) torch::cuda::synchronize();
}

void add_stats(rollout::SamplerStats& total, const rollout::SamplerStats& s) {
  total.rounds += s.rounds;
  total.decode_steps += s.decode_steps;
  total.prefills += s.prefills;
  total.reused_slots += s.reused_slots;
  total.peak_columns = std::max(total.peak_columns, s.peak_columns);
  total.peak_rows = std::max(total.peak_rows, s.peak_rows);
}

// Turn k of every sequence in one generate() call per k (seed + k, sequence i at index i: stream
// sampling_stream(seed + k, i)), observations appended between calls.
Timed lockstep(policy::Transformer& model, const Workload& w, const rollout::SamplingParams& p, int max_batch,
               uint64_t seed) {
  rollout::GenerationSession s(model);
  std::vector<size_t> ids;
  for (const auto& prompt : w.prompts) ids.push_back(s.add_sequence(prompt));
  Timed out;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < w.caps[0].size(); ++k) {
    std::vector<int> caps;
    for (const auto& c : w.caps) caps.push_back(c[k]);
    rollout::SamplerStats st;
    s.generate(ids, p, seed + k, max_batch, caps, &st);
    add_stats(out.stats, st);
    if (k + 1 < w.caps[0].size())
      for (size_t id : ids) s.append(id, w.observation);
  }
  sync(model);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t id : ids) out.histories.push_back(s.tokens(id));
  return out;
}

// The same turns through run_turns(): a sequence's turn k + 1 is queued as soon as its turn k ends.
Timed continuous(policy::Transformer& model, const Workload& w, const rollout::SamplingParams& p, int max_batch,
                 uint64_t seed) {
  rollout::GenerationSession s(model);
  std::vector<rollout::GenerationSession::TurnRequest> first;
  std::vector<size_t> turn(w.prompts.size(), 0);
  for (size_t i = 0; i < w.prompts.size(); ++i)
    first.push_back({s.add_sequence(w.prompts[i]), w.caps[i][0], rollout::sampling_stream(seed, i)});
  Timed out;
  const auto t0 = std::chrono::steady_clock::now();
  s.run_turns(first, p, max_batch,
              [&](const rollout::GenerationSession::TurnRequest& t, rollout::GenerationResult&&)
                  -> std::optional<rollout::GenerationSession::TurnRequest> {
                const size_t k = ++turn[t.id];
                if (k == w.caps[t.id].size()) return std::nullopt;
                s.append(t.id, w.observation);
                return rollout::GenerationSession::TurnRequest{t.id, w.caps[t.id][k], rollout::sampling_stream(seed + k, t.id)};
              },
              &out.stats);
  sync(model);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < w.prompts.size(); ++i) out.histories.push_back(s.tokens(i));
  return out;
}

nlohmann::json row(const Timed& t, int64_t tokens) {
  return {{"seconds", t.seconds},       {"tokens_per_s", tokens / t.seconds}, {"rounds", t.stats.rounds},
          {"prefills", t.stats.prefills}, {"decode_steps", t.stats.decode_steps}, {"reused_slots", t.stats.reused_slots},
          {"peak_columns", t.stats.peak_columns}};
}

}  // namespace

void add_bench_turns_command(CLI::App& app) {
  struct Args {
    std::string model = "tiny";
    int sequences = 64, turns = 4, prompt = 256, observation = 32, min_new = 16, max_new = 256, max_batch = 64;
    int threads = 0;
    uint64_t seed = 1;
    std::string device = "cpu", dtype = "float32";
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench_command(app)->add_subcommand(
      "turns", "multi-turn sampling: continuous batching across turns vs lockstep turns, tokens/s");
  cmd->add_option("--model", args->model, "shape: tiny, 100m, qwen3-0.6b, qwen3-4b");
  cmd->add_option("--sequences", args->sequences, "sequences (episodes), each playing --turns turns");
  cmd->add_option("--turns", args->turns, "turns per sequence");
  cmd->add_option("--prompt", args->prompt, "prompt tokens per sequence");
  cmd->add_option("--observation", args->observation, "tokens appended between turns");
  cmd->add_option("--min-new", args->min_new, "shortest turn (tokens)");
  cmd->add_option("--max-new", args->max_new, "longest turn (tokens); turn lengths are uniform in [min, max]");
  cmd->add_option("--max-batch", args->max_batch, "rows decoding together (both schedules)");
  cmd->add_option("--threads", args->threads, "intra-op threads (0 = all cores)");
  cmd->add_option("--seed", args->seed, "seed of the turn lengths and of the sampling");
  cmd->add_option("--device", args->device, "torch device (cpu, cuda)");
  cmd->add_option("--dtype", args->dtype, "float32 | bfloat16: the model's weights and activations");
  cmd->callback([args] {
    auto where = std::make_shared<std::string>();  // what is being run, for an allocation failure
    set_action(reporting_allocation_failures("bench turns", where, [args, where] {
      const Args& a = *args;
      if (a.sequences < 1 || a.turns < 1 || a.prompt < 1 || a.observation < 1 || a.min_new < 1 ||
          a.max_new < a.min_new || a.max_batch < 1)
        throw spade::Error("bench turns: need sequences, turns, prompt, observation, min-new, max-batch >= 1 and "
                           "max-new >= min-new");
      if (a.dtype != "float32" && a.dtype != "bfloat16")
        throw spade::Error("bench turns: --dtype must be float32 or bfloat16, got '" + a.dtype + "'");
      const policy::ModelConfig c = policy::named_model_shape(a.model);
      *where = "model " + a.model + " (" + std::to_string(c.num_parameters()) + " parameters, " + a.dtype + "), " +
               std::to_string(a.sequences) + " sequences of " + std::to_string(a.turns) + " turns, max batch " +
               std::to_string(a.max_batch) + ", device " + a.device;
      const torch::Device device(a.device);
      const int threads =
          a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      at::set_num_threads(threads);
      policy::Transformer model(c);
      model->init_weights(1);
      model->to(device, a.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32);
      Workload w;
      uint64_t state = a.seed;
      auto next = [&] { return splitmix64(state++); };
      for (int i = 0; i < a.sequences; ++i) {
        w.prompts.emplace_back();
        for (int t = 0; t < a.prompt; ++t) w.prompts.back().push_back(static_cast<int64_t>(next() % c.vocab_size));
        w.caps.emplace_back();
        for (int k = 0; k < a.turns; ++k) {
          w.caps.back().push_back(a.min_new + static_cast<int>(next() % (a.max_new - a.min_new + 1)));
          w.tokens += w.caps.back().back();
        }
      }
      for (int t = 0; t < a.observation; ++t) w.observation.push_back(static_cast<int64_t>(next() % c.vocab_size));
      rollout::SamplingParams p;  // SPADE defaults: T 0.6, top-p 0.95, top-k 20; no stop token
      p.max_prefill_tokens = std::max<int64_t>(p.max_prefill_tokens, a.prompt + a.max_new + a.observation);
      // Lockstep needs sum over k of max_i caps[i][k] rounds per batch of rows; continuous ~ max_i sum_k.
      {  // first-call costs (allocator, thread pool; on CUDA cuBLAS handles, kernel loading) outside the timings
        rollout::SamplingParams warm = p;
        warm.max_new_tokens = 4;
        rollout::generate(model, {w.prompts[0]}, warm, 0, 1);
        sync(model);
      }
      const Timed lock = lockstep(model, w, p, a.max_batch, a.seed);
      const Timed cont = continuous(model, w, p, a.max_batch, a.seed);
      int same = 0;
      for (size_t i = 0; i < w.prompts.size(); ++i) same += lock.histories[i] == cont.histories[i];
      nlohmann::json report = {{"bench", "turns"},
                               {"model", a.model},
                               {"params", c.num_parameters()},
                               {"sequences", a.sequences},
                               {"turns", a.turns},
                               {"prompt", a.prompt},
                               {"observation", a.observation},
                               {"turn_tokens", {a.min_new, a.max_new}},
                               {"max_batch", a.max_batch},
                               {"threads", threads},
                               {"device", a.device},
                               {"dtype", a.dtype},
                               {"sampled_tokens", w.tokens},
                               {"turn_lengths", w.caps},
                               {"lockstep", row(lock, w.tokens)},
                               {"continuous", row(cont, w.tokens)},
                               {"speedup", lock.seconds / cont.seconds},
                               {"same_histories", same}};
      std::printf("%s\n", report.dump(2).c_str());
      return 0;
    }));
  });
}

}  // namespace spade::apps
