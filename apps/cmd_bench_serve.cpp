// `spade bench serve`: `spade serve` under concurrent clients against the same requests run through the
// sampler directly (issue 20). The same chat requests (prompt, seed, sampling, max tokens) go
//   direct: rollout::generate_stream, all of them queued at once, --max-batch rows decoding together;
//   server: the HTTP server in this process (serve/server.h) with --clients threads, each sending the
//           next request of the list (in order, as the direct run's queue admits them) as soon as its
//           previous reply is in, through evaldual's libcurl client (evaldual/model_client.h).
// Request j samples exactly L_j tokens (vLLM's ignore_eos: no end-of-turn stops it, as in vLLM's serving
// benchmark), so the work does not depend on what a small model happens to say: L_j = --max-tokens with
// --fixed-length, else spread over [M/2, 3M/2) (M = --max-tokens; L_j = M/2 + 37j mod M), so that the
// clients do not move in lockstep (all replies ending in the same round, all next requests arriving
// together: the worst case for closed-loop clients, which --fixed-length measures). Both sample the same
// tokens (each request its own random stream): every reply must be the direct run's text, or the bench
// fails. The throughput ratio (server tokens/s over direct tokens/s; target >= 0.9) is what the HTTP layer, the
// engine thread and the gaps between a client's requests cost. Runs alternate (direct, server) --repeats
// times; the medians are reported with every run, and the server's per-request latency p50/p99 over all
// its runs. Prints one JSON object; recorded in bench/RESULTS.md.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/commands.h"
#include "apps/machine_info.h"
#include "common/error.h"
#include "evaldual/model_client.h"
#include "policy/chat_template.h"
#include "policy/checkpoint.h"
#include "policy/tokenizer.h"
#include "rollout/sampler.h"
#include "serve/chat_prompt.h"
#include "serve/openai_api.h"
#include "serve/server.h"

namespace spade::apps {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Nearest-rank percentile (q in (0, 1]) of `v` (non-empty).
double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::max<size_t>(rank, 1) - 1];
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

/// The direct run's source: every request queued at once; keeps each request's tokens.
class AllAtOnce : public rollout::StreamSource {
 public:
  AllAtOnce(const std::vector<std::vector<int64_t>>& prompts, const std::vector<rollout::SamplingParams>& params)
      : tokens(prompts.size()), prompts_(prompts), params_(params) {}
  std::vector<rollout::StreamRequest> take(size_t free) override {
    std::vector<rollout::StreamRequest> out;
    for (; next_ < prompts_.size() && out.size() < free; ++next_)  // request j, seed j, as the clients send it
      out.push_back({next_, prompts_[next_], &params_[next_], rollout::sampling_stream(next_, 0)});
    return out;
  }
  bool on_token(uint64_t, const rollout::GenerationResult&) override { return true; }
  void on_finish(uint64_t id, rollout::GenerationResult&& r) override { tokens[id] = std::move(r.tokens); }
  std::vector<std::vector<int64_t>> tokens;  // per request

 private:
  const std::vector<std::vector<int64_t>>& prompts_;
  const std::vector<rollout::SamplingParams>& params_;
  size_t next_ = 0;
};

}  // namespace

void add_bench_serve_command(CLI::App& app) {
  struct Args {
    std::string checkpoint;
    int clients = 16, requests = 128, max_tokens = 128, max_batch = 16, repeats = 3, threads = 0;
    bool fixed_length = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench_command(app)->add_subcommand(
      "serve", "spade serve with concurrent HTTP clients vs the same requests through the sampler directly");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint directory served (with its tokenizer and chat template)")
      ->required();
  cmd->add_option("--clients", args->clients, "concurrent HTTP clients, each sending the next request once its reply is in");
  cmd->add_option("--requests", args->requests, "chat requests per run (request j has seed j)");
  cmd->add_option("--max-tokens", args->max_tokens, "mean tokens per request (each request samples exactly its own)");
  cmd->add_flag("--fixed-length", args->fixed_length, "every request samples exactly --max-tokens tokens (clients in lockstep)");
  cmd->add_option("--max-batch", args->max_batch, "rows decoding together, in both runs");
  cmd->add_option("--repeats", args->repeats, "runs of each kind, alternating direct and server");
  cmd->add_option("--threads", args->threads, "intra-op threads (0 = all cores)");
  cmd->callback([args] {
    set_action([args] {
      const Args& a = *args;
      if (a.clients < 1 || a.requests < 1 || a.max_tokens < 1 || a.repeats < 1)
        throw spade::Error("bench serve: --clients, --requests, --max-tokens and --repeats must be >= 1");
      const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      at::set_num_threads(threads);

      // The requests: one user message each, sampled with SPADE's defaults (T 0.6, top-p 0.95, top-k 20),
      // --max-tokens tokens each (no stop token).
      policy::Tokenizer tok = policy::Tokenizer::load_dir(a.checkpoint);
      const policy::ChatTemplate chat = policy::ChatTemplate::for_checkpoint(a.checkpoint, tok);
      std::vector<std::string> texts;
      std::vector<std::vector<int64_t>> prompts;
      for (int j = 0; j < a.requests; ++j) {
        texts.push_back("Game " + std::to_string(j) + ": find the smallest x with x * " + std::to_string(3 + j % 7) +
                        " > " + std::to_string(50 + 13 * j) + ".");
        prompts.push_back(serve::chat_prompt_ids(chat, {{"user", texts.back(), {}}}, {}));
      }
      policy::Transformer model = policy::load_checkpoint(a.checkpoint);
      std::vector<rollout::SamplingParams> params(a.requests);
      for (int j = 0; j < a.requests; ++j)
        params[j].max_new_tokens =
            a.fixed_length ? a.max_tokens : std::max(1, a.max_tokens / 2 + static_cast<int>((37LL * j) % a.max_tokens));

      serve::ServerOptions so;
      so.checkpoint = a.checkpoint;
      so.model_name = "bench";
      so.engine.max_batch = a.max_batch;
      so.engine.max_queue = static_cast<size_t>(a.requests);
      so.http.port = 0;
      serve::Server server(so);
      std::thread serving([&server] { server.serve(); });
      struct Stop {  // however the runs end, the server drains and its thread is joined
        serve::Server& server;
        std::thread& thread;
        ~Stop() {
          server.drain();
          thread.join();
        }
      } stop{server, serving};
      evaldual::ModelEndpoint ep;
      ep.name = "bench";
      ep.base_url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1";
      ep.model = "bench";
      ep.api_key_env = "";
      ep.temperature = params[0].temperature;
      ep.max_retries = 0;

      nlohmann::json runs = nlohmann::json::array();
      std::vector<double> direct_tps, server_tps, latencies;
      int64_t tokens_per_run = 0;
      for (int rep = 0; rep < a.repeats; ++rep) {
        AllAtOnce source(prompts, params);
        auto t0 = Clock::now();
        rollout::generate_stream(model, params[0], a.max_batch, source);
        const double ds = seconds_since(t0);
        int64_t direct_tokens = 0;
        for (const auto& t : source.tokens) direct_tokens += t.size();
        direct_tps.push_back(direct_tokens / ds);

        std::vector<double> lat(a.requests);
        std::vector<std::string> replies(a.requests);
        std::atomic<int64_t> tokens{0};
        std::atomic<int> failures{0};
        std::string first_error;
        std::mutex error_mu;
        t0 = Clock::now();
        std::vector<std::thread> clients;
        std::atomic<int> next_request{0};  // each client sends the next request not yet sent (a shared list)
        for (int c = 0; c < a.clients; ++c)
          clients.emplace_back([&] {
            for (int j = next_request++; j < a.requests; j = next_request++) {
              evaldual::ModelEndpoint mine = ep;  // request j: seed j and the sampler's filters
              mine.max_tokens = params[j].max_new_tokens;
              mine.extra_body = {{"seed", j}, {"top_p", params[j].top_p}, {"top_k", params[j].top_k}, {"ignore_eos", true}};
              evaldual::ChatClient per_request(mine);
              const auto r0 = Clock::now();
              try {
                const evaldual::ChatReply r = per_request.complete({{"user", texts[j]}});
                tokens += r.usage.completion_tokens;
                replies[j] = r.content;
              } catch (const std::exception& e) {
                ++failures;
                std::lock_guard<std::mutex> lk(error_mu);
                if (first_error.empty()) first_error = e.what();
              }
              lat[j] = seconds_since(r0);
            }
          });
        for (std::thread& t : clients) t.join();
        const double ss = seconds_since(t0);
        if (failures > 0) throw spade::Error("bench serve: " + std::to_string(failures.load()) + " requests failed: " + first_error);
        // The same requests sample the same tokens: every reply is the direct run's text (no stop token).
        for (int j = 0; j < a.requests; ++j)
          if (replies[j] != serve::decode_lenient(tok, source.tokens[j]))
            throw spade::Error("bench serve: request " + std::to_string(j) + " got another reply from the server than from "
                               "the sampler directly (same prompt, seed and sampling)");
        if (tokens != direct_tokens)
          throw spade::Error("bench serve: the server reported " + std::to_string(tokens.load()) + " tokens, the sampler sampled " +
                             std::to_string(direct_tokens));
        tokens_per_run = direct_tokens;
        server_tps.push_back(tokens / ss);
        latencies.insert(latencies.end(), lat.begin(), lat.end());
        runs.push_back({{"direct_tokens", direct_tokens}, {"direct_s", ds}, {"server_tokens", tokens.load()}, {"server_s", ss}});
        std::fprintf(stderr, "%s\n", runs.back().dump().c_str());
      }
      const double ratio = median(server_tps) / median(direct_tps);
      nlohmann::json report = {
          {"bench", "serve"},
          {"machine", {{"cpus", std::thread::hardware_concurrency()}, {"cpu", cpu_model()}}},
          {"checkpoint", a.checkpoint},
          {"threads", threads},
          {"clients", a.clients},
          {"requests", a.requests},
          {"max_tokens", a.max_tokens},
          {"lengths", a.fixed_length ? "fixed" : "spread over [max_tokens/2, 3 max_tokens/2)"},
          {"max_batch", a.max_batch},
          {"sampling", "temperature 0.6, top-p 0.95, top-k 20, seed = request index, ignore_eos"},
          {"tokens_per_run", tokens_per_run},
          {"direct_tokens_per_s", median(direct_tps)},
          {"server_tokens_per_s", median(server_tps)},
          {"ratio", ratio},
          {"latency_p50_s", percentile(latencies, 0.5)},
          {"latency_p99_s", percentile(latencies, 0.99)},
          {"runs", runs}};
      std::printf("%s\n", report.dump(2).c_str());
      return 0;
    });
  });
}

}  // namespace spade::apps
