// `spade serve`: an OpenAI-compatible HTTP server over one checkpoint (issue 20; serve/server.h). Prints
// "spade serve: listening on http://HOST:PORT ..." on stdout once it accepts requests; SIGTERM or SIGINT
// drains it (requests in flight are answered, new ones get 503) and it exits 0.
#include <ATen/Parallel.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <thread>

#include "apps/commands.h"
#include "common/error.h"
#include "serve/server.h"

namespace spade::apps {

namespace {

int g_signal_pipe[2] = {-1, -1};

void on_stop_signal(int) {
  const char c = 1;
  const int saved = errno;
  (void)!write(g_signal_pipe[1], &c, 1);  // async-signal-safe; the watcher thread does the rest
  errno = saved;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Args {
    serve::ServerOptions server;
    int threads = 0;
  };
  auto args = std::make_shared<Args>();
  serve::ServerOptions& s = args->server;
  CLI::App* cmd = app.add_subcommand("serve", "an OpenAI-compatible HTTP server on a checkpoint (chat, completions, streaming, tools)");
  cmd->add_option("--checkpoint", s.checkpoint, "checkpoint directory (config.json, safetensors, tokenizer.json or tokenizer.model)")
      ->required();
  cmd->add_option("--host", s.http.host, "address to listen on (loopback by default; 0.0.0.0 exposes it to the network)");
  cmd->add_option("--port", s.http.port, "port to listen on (0: any free port; the one chosen is printed)");
  cmd->add_option("--max-batch", s.engine.max_batch, "rows decoding together (continuous batching)");
  cmd->add_option("--max-queue", s.engine.max_queue, "requests waiting for a row; one more is answered 429");
  cmd->add_option("--max-tokens-in-flight", s.engine.batch.max_tokens_in_flight,
                  "budget of KV tokens in the batch, each row reserving prompt + max_tokens (0 = unlimited)");
  cmd->add_option("--max-request-bytes", s.http.max_request_bytes, "larger request bodies are answered 413");
  cmd->add_option("--api-key", s.http.api_key, "require \"Authorization: Bearer KEY\" on /v1/ (empty: no key)");
  cmd->add_option("--model-name", s.model_name, "the model id clients send and GET /v1/models lists (empty: the --checkpoint path)");
  cmd->add_option("--device", s.device, "torch device of the model (cpu, cuda, cuda:N)");
  cmd->add_option("--dtype", s.dtype, "float32 | bfloat16");
  cmd->add_option("--threads", args->threads, "intra-op threads of the model (0 = all cores)");
  cmd->add_option("--http-threads", s.http.threads,
                  "HTTP worker threads, connections served at once (0: max batch + max queue + 16)");
  cmd->add_flag("--log-requests", s.http.log_requests, "print one line per request on stderr");
  cmd->callback([args] {
    set_action([args] {
      at::set_num_threads(args->threads > 0 ? args->threads
                                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      if (pipe(g_signal_pipe) != 0) throw spade::Error("serve: pipe() failed for the signal watcher");
      serve::Server server(args->server);
      // SIGTERM / SIGINT: drain on a watcher thread (a signal handler may do nothing more than write).
      struct sigaction sa {};
      sa.sa_handler = on_stop_signal;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGTERM, &sa, nullptr);
      sigaction(SIGINT, &sa, nullptr);
      std::thread watcher([&server] {
        char c = 0;
        while (read(g_signal_pipe[0], &c, 1) < 0 && errno == EINTR) {
        }
        if (c != 1) return;  // woken by the main thread: the server stopped by itself
        std::fprintf(stderr, "spade serve: draining (answering the requests in flight, refusing new ones)\n");
        server.drain();
      });
      const serve::ServerOptions& o = args->server;
      std::printf("spade serve: listening on http://%s:%d (model '%s', max batch %d, queue %zu%s)\n",
                  o.http.host.c_str(), server.port(), server.model().name.c_str(), o.engine.max_batch,
                  o.engine.max_queue, o.http.api_key.empty() ? "" : ", API key required");
      std::fflush(stdout);
      server.serve();
      const char wake = 0;
      (void)!write(g_signal_pipe[1], &wake, 1);
      watcher.join();
      const serve::Engine::Stats st = server.engine().stats();
      std::printf("spade serve: stopped (%llu choices finished, %llu aborted, %llu failed, %llu tokens)\n",
                  static_cast<unsigned long long>(st.finished), static_cast<unsigned long long>(st.aborted),
                  static_cast<unsigned long long>(st.failed), static_cast<unsigned long long>(st.completion_tokens));
      return 0;
    });
  });
}

}  // namespace spade::apps
