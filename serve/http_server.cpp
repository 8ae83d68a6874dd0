#include "serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/error.h"
#include "serve/api_response.h"

namespace spade::serve {

using json = nlohmann::ordered_json;

namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump_json(error_json(e)), "application/json");
}

/// An OpenAI-shaped body for an error httplib answers by itself (no route, body too large, bad HTTP).
ApiError transport_error(const httplib::Request& req, int status, size_t max_bytes) {
  switch (status) {
    case 404: return ApiError(404, "Unknown request URL: " + req.method + " " + req.path, "", "unknown_url");
    case 413:
      return ApiError(413, "the request body is larger than this server's limit of " + std::to_string(max_bytes) +
                               " bytes (spade serve --max-request-bytes)", "", "request_too_large");
    default: return ApiError(status, "the HTTP request could not be handled (status " + std::to_string(status) + ")");
  }
}

/// Compares the presented key with the expected one in time independent of where they differ.
bool same_key(const std::string& given, const std::string& key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

}  // namespace

/// httplib::Server with a usable accept queue: the library listens with a backlog of 5
/// (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian built it), so a burst of more than 5 connections (16
/// clients whose replies end together) overflows it and the clients whose SYN was dropped retry only
/// after TCP's 1 s timeout. listen() again on the bound socket raises the backlog (Linux).
class HttpServer::Listener : public httplib::Server {
 public:
  bool raise_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

HttpServer::HttpServer(OpenAiApi& api, const Engine& engine, HttpOptions options)
    : api_(api), engine_(engine), options_(std::move(options)), svr_(std::make_unique<Listener>()) {
  if (options_.threads < 1) throw spade::Error("serve: threads must be >= 1, not " + std::to_string(options_.threads));
  const int threads = options_.threads;
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr_->set_payload_max_length(options_.max_request_bytes);
  svr_->set_keep_alive_timeout(2);  // an idle connection holds a worker thread (and delays the stop) this long
  svr_->set_tcp_nodelay(true);      // a streamed event goes out at once, not after the previous one's ACK

  // Authentication of /v1/ paths (health checks need no key).
  svr_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && same_key(auth.substr(prefix.size()), options_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, auth.empty() ? "Missing API key: send \"Authorization: Bearer <key>\""
                                               : "Incorrect API key provided",
                             "", "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  svr_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
    send_error(res, transport_error(req, res.status, options_.max_request_bytes));
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, "internal error: " + what));
  });
  if (options_.log_requests)
    svr_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "serve: %s %s %d\n", req.method.c_str(), req.path.c_str(), res.status);
    });

  svr_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const Engine::Stats s = engine_.stats();
    bool draining;
    {
      std::lock_guard<std::mutex> lk(mu_);
      draining = draining_;
    }
    const json body = {{"status", draining ? "draining" : "ok"}, {"model", api_.served().name},
                       {"running", s.running}, {"waiting", s.waiting}, {"finished", s.finished},
                       {"aborted", s.aborted}, {"failed", s.failed}, {"completion_tokens", s.completion_tokens}};
    res.set_content(dump_json(body), "application/json");
  });
  svr_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump_json(api_.models()), "application/json");
  });
  svr_->Get("/v1/models/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      res.set_content(dump_json(api_.model(req.matches[1])), "application/json");
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });

  using Endpoint = OpenAiApi::Answer (OpenAiApi::*)(const std::string&);
  auto completion_route = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      try {
        std::shared_ptr<void> in_flight = enter();
        if (req.body.size() > options_.max_request_bytes)  // a chunked upload: no Content-Length to refuse early
          throw transport_error(req, 413, options_.max_request_bytes);
        OpenAiApi::Answer a = (api_.*endpoint)(req.body);
        if (!a.stream) {
          res.set_content(a.body, "application/json");
          return;
        }
        std::shared_ptr<EventStream> stream(std::move(a.stream));
        res.set_header("Cache-Control", "no-cache");
        // Exactly "text/event-stream": httplib then never compresses the stream (which would buffer it).
        res.set_chunked_content_provider(
            "text/event-stream",
            [stream, in_flight](size_t, httplib::DataSink& sink) {
              const std::string events = stream->next(std::chrono::milliseconds(100));
              if (!events.empty() && !sink.write(events.data(), events.size())) {
                stream->cancel();  // the client went away mid-stream: free its rows
                return false;
              }
              if (stream->ended()) {
                sink.done();
                return true;
              }
              if (events.empty() && !sink.is_writable()) {  // checked while no event is due
                stream->cancel();
                return false;
              }
              return true;
            },
            [stream](bool success) {
              if (!success) stream->cancel();
            });
      } catch (const ApiError& e) {
        send_error(res, e);
      }
    };
  };
  svr_->Post("/v1/chat/completions", completion_route(&OpenAiApi::chat_completions));
  svr_->Post("/v1/completions", completion_route(&OpenAiApi::completions));
}

HttpServer::~HttpServer() = default;

std::shared_ptr<void> HttpServer::enter() {
  std::lock_guard<std::mutex> lk(mu_);
  if (draining_) throw ApiError(503, "the server is shutting down", "", "shutting_down");
  ++in_flight_;
  return std::shared_ptr<void>(nullptr, [this](void*) {
    std::lock_guard<std::mutex> lk2(mu_);
    --in_flight_;
    cv_.notify_all();
  });
}

int HttpServer::bind() {
  const int port = options_.port == 0 ? svr_->bind_to_any_port(options_.host)
                                      : (svr_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0)
    throw spade::Error("serve: cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                       " (in use, not a local address, or a privileged port)");
  if (!svr_->raise_backlog(SOMAXCONN))
    throw spade::Error("serve: listen(" + options_.host + ":" + std::to_string(port) + ", SOMAXCONN) failed");
  bound_ = true;
  return port;
}

void HttpServer::serve() {
  if (!bound_) throw spade::Error("serve: HttpServer::serve() before bind()");
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (draining_) return;
    serving_ = true;
  }
  svr_->listen_after_bind();
  std::lock_guard<std::mutex> lk(mu_);
  serving_ = false;
}

void HttpServer::drain() {
  {
    std::unique_lock<std::mutex> lk(mu_);
    draining_ = true;
    cv_.wait(lk, [&] { return in_flight_ == 0; });
  }
  for (;;) {  // serve() may be between its check and httplib's listen loop: stop it once it runs
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!serving_) return;
    }
    if (svr_->is_running()) {
      svr_->stop();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace spade::serve
