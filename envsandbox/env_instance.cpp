#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/error.h"
#include "common/strings.h"
#include "envsandbox/frame.h"
#include "envsandbox/sandbox.h"
#include "envsandbox/zygote_process.h"

using nlohmann::json;

namespace spade::envsandbox {

const char* call_status_name(CallStatus status) {
  switch (status) {
    case CallStatus::kOk: return "ok";
    case CallStatus::kException: return "exception";
    case CallStatus::kMemory: return "memory";
    case CallStatus::kTimeout: return "timeout";
    case CallStatus::kExited: return "exited";
    case CallStatus::kSignal: return "signal";
    case CallStatus::kProtocol: return "protocol";
    case CallStatus::kUnavailable: return "unavailable";
  }
  return "?";
}

namespace {

constexpr double kStatusWaitS = 1.0;  // how long an ended channel may precede the process's exit
constexpr int kHostJsonDepth = 2 * 64 + 8;  // wire nesting: two JSON levels per Python level + reply

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 100) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void check_method(const std::string& method) {
  if (!is_identifier(method))
    throw Error("EnvInstance: method name '" + truncate_utf8(method, 60) + "' is not a Python identifier");
}

// Parses an untrusted reply, refusing nesting deeper than the wire format allows.
bool parse_reply(const std::string& payload, json* out) {
  try {
    *out = json::parse(payload, [](int depth, json::parse_event_t, json&) {
      if (depth > kHostJsonDepth) throw std::runtime_error("too deep");
      return true;
    });
    return out->is_object();
  } catch (const std::exception&) {
    return false;
  }
}

// A string field of an untrusted reply ("" when absent or not a string), capped.
std::string text_field(const json& reply, const char* key, size_t max_bytes) {
  auto it = reply.find(key);
  return it != reply.end() && it->is_string() ? truncate_utf8(it->get_ref<const std::string&>(), max_bytes) : "";
}

std::string signal_text(int sig) {
  std::string name = sigabbrev_np(sig) ? std::string("SIG") + sigabbrev_np(sig) : "signal " + std::to_string(sig);
  if (sig == SIGXCPU) return name + " (CPU time limit exceeded)";
  if (sig == SIGSEGV) return name + " (segmentation fault)";
  if (sig == SIGKILL) return name + " (killed, e.g. by the CPU hard limit or the OOM killer)";
  return name;
}

}  // namespace

EnvInstance::EnvInstance(std::shared_ptr<detail::ZygoteProcess> zygote, pid_t pid, int fd,
                         const SandboxOptions& options)
    : zygote_(std::move(zygote)), pid_(pid), fd_(fd), options_(options), spin_(options.spin_us) {
  if (zygote_) oom_kills_at_start_ = zygote_->oom_kills();
}

std::unique_ptr<EnvInstance> EnvInstance::unavailable(const SandboxOptions& options, const std::string& detail) {
  std::unique_ptr<EnvInstance> instance(new EnvInstance(nullptr, -1, -1, options));
  instance->dead_status_ = CallStatus::kUnavailable;
  instance->dead_detail_ = detail;
  instance->hello_read_ = true;
  return instance;
}

bool EnvInstance::read_hello(Clock::time_point deadline) const {
  if (hello_read_) return true;
  hello_read_ = true;  // one attempt: on failure the channel is broken and the next call reports why
  std::string payload;
  pid_t sender = -1;
  if (read_frame(fd_, 256, deadline, &payload, nullptr, nullptr, &sender) != FrameStatus::kOk) return false;
  if (payload != R"({"op":"hello"})") return false;
  host_pid_ = sender;
  return true;
}

pid_t EnvInstance::pid() const {
  if (!hello_read_ && alive()) read_hello(deadline_after(options_.call_timeout_s));
  return host_pid_;
}

EnvInstance::~EnvInstance() {
  if (fd_ >= 0) close(fd_);
  if (zygote_) zygote_->release(pid_);
}

void EnvInstance::kill() {
  if (!alive() || !zygote_) return;
  zygote_->kill(pid_);
  dead_status_ = CallStatus::kExited;
  dead_detail_ = "killed by the host (EnvInstance::kill)";
}

json EnvInstance::load_request(const std::string& source, int max_turns_cap) {
  return json{{"op", "load"}, {"source", source}, {"max_turns_cap", max_turns_cap}};
}

CallResult EnvInstance::load(const std::string& source, int max_turns_cap, std::optional<double> timeout_s) {
  return check_load(request(load_request(source, max_turns_cap), "load()", timeout_s.value_or(options_.load_timeout_s)));
}

CallResult EnvInstance::receive_preloaded_load() {
  auto start = Clock::now();
  return check_load(receive(FrameStatus::kOk, "", "load()", options_.load_timeout_s, start,
                            deadline_after(options_.load_timeout_s)));
}

CallResult EnvInstance::check_load(CallResult r) {
  if (!r.ok()) return r;
  const std::vector<PyValue>& items = r.value.items();
  if (!r.value.is_tuple() || items.size() != 2 || !items[0].is_str() || !(items[1].is_none() || items[1].int_fits())) {
    CallResult bad = fail(CallStatus::kProtocol, "load(): malformed reply (expected class name and max_turns); the process was killed", true);
    bad.seconds = r.seconds;
    return bad;
  }
  if (items[1].int_fits()) max_turns_ = items[1].as_int();
  PyValue name = items[0];
  r.value = std::move(name);
  return r;
}

CallResult EnvInstance::reset(std::optional<int64_t> seed, std::optional<double> timeout_s) {
  json req{{"op", "reset"}, {"seed", seed ? json(*seed) : json(nullptr)}};
  return request(req, seed ? "reset(seed=" + std::to_string(*seed) + ")" : "reset()",
                 timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::step(const std::string& action, std::optional<double> timeout_s) {
  return request(json{{"op", "step"}, {"action", action}}, "step(" + PyValue::str(action).repr(60) + ")",
                 timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::call(const std::string& method, std::optional<double> timeout_s) {
  check_method(method);
  return request(json{{"op", "call"}, {"method", method}}, method + "()", timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::has(const std::string& method, std::optional<double> timeout_s) {
  check_method(method);
  return request(json{{"op", "has"}, {"method", method}}, "has(" + method + ")",
                 timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::repair(const std::string& source, std::optional<double> timeout_s) {
  return request(json{{"op", "repair"}, {"source", source}}, "repair()", timeout_s.value_or(options_.load_timeout_s));
}

CallResult EnvInstance::reseed_globals(int64_t seed, std::optional<double> timeout_s) {
  return request(json{{"op", "reseed"}, {"seed", seed}}, "reseed_globals(" + std::to_string(seed) + ")",
                 timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::tool_use_report(const std::vector<int64_t>& seeds, std::optional<double> timeout_s) {
  return request(json{{"op", "tool_report"}, {"seeds", seeds}}, "tool_use_report()",
                 timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::tool_schemas(std::optional<double> timeout_s) {
  return request(json{{"op", "tools"}}, "tool_schemas()", timeout_s.value_or(options_.call_timeout_s));
}

CallResult EnvInstance::fail(CallStatus status, const std::string& detail, bool kill_process) {
  if (kill_process && zygote_) zygote_->kill(pid_);
  if (kill_process || status == CallStatus::kExited || status == CallStatus::kSignal) {
    dead_status_ = status;
    dead_detail_ = detail;
  }
  CallResult r;
  r.status = status;
  r.detail = detail;
  return r;
}

// The channel ended or broke: ask the zygote how the process ended and classify it.
CallResult EnvInstance::lost(const std::string& what) {
  auto until = deadline_after(kStatusWaitS);
  json st;
  do {
    st = zygote_->status(pid_);
    if (st.value("state", "") != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (Clock::now() < until);
  const std::string state = st.value("state", "unknown");
  if (state == "exited")
    return fail(CallStatus::kExited, what + ": the environment process exited with status " +
                              std::to_string(st.value("code", -1)) + " (e.g. os._exit)", false);
  if (state == "signaled") {
    int sig = st.value("signal", 0);
    int64_t ooms = zygote_->oom_kills();
    // The CPU hard limit kills with SIGKILL (an environment is pid 1 of its own namespace, where the
    // soft limit's SIGXCPU is ignored like any default-action signal): tell it by the CPU time used.
    if (sig == SIGKILL && st.value("cpu_s", 0.0) >= static_cast<double>(options_.cpu_limit_s))
      return fail(CallStatus::kSignal, what + ": the environment process was killed at its CPU time limit (" +
                                std::to_string(options_.cpu_limit_s) + " s, SIGKILL: CPU time limit exceeded)", false);
    if (sig == SIGKILL && oom_kills_at_start_ >= 0 && ooms > oom_kills_at_start_) {
      CallResult r = fail(CallStatus::kMemory, what + ": the environment process was killed by the pool's memory cgroup "
                                           "OOM killer (SandboxOptions::pool_memory_bytes)", false);
      dead_status_ = r.status;  // the process is gone: later calls report the same
      dead_detail_ = r.detail;
      return r;
    }
    return fail(CallStatus::kSignal, what + ": the environment process was killed by " + signal_text(sig), false);
  }
  if (state == "running")
    return fail(CallStatus::kProtocol, what + ": the environment process closed its channel without exiting; killed", true);
  return fail(CallStatus::kExited, what + ": the environment process is gone and its status is unknown "
                               "(the sandbox server stopped or restarted)", false);
}

void EnvInstance::keep_output(const json& reply) {
  auto out = reply.find("out");
  if (out == reply.end() || !out->is_string()) return;
  size_t room = static_cast<size_t>(options_.max_output_bytes) > output_.size()
                    ? static_cast<size_t>(options_.max_output_bytes) - output_.size() : 0;
  output_ += truncate_utf8(out->get_ref<const std::string&>(), room);
}

CallResult EnvInstance::request(const json& req, const std::string& what, double timeout_s) {
  auto start = Clock::now();
  auto finish = [&](CallResult r) {
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  };
  if (!alive()) {
    CallResult r;
    r.status = dead_status_;
    r.detail = what + ": the environment process already ended (" + dead_detail_ + ")";
    return finish(r);
  }

  auto deadline = deadline_after(timeout_s);
  std::string io_error;
  FrameStatus s = write_frame(fd_, req.dump(-1, ' ', false, json::error_handler_t::replace), deadline, -1, &io_error);
  return receive(s, io_error, what, timeout_s, start, deadline);
}

CallResult EnvInstance::receive(FrameStatus s, std::string io_error, const std::string& what, double timeout_s,
                                Clock::time_point start, Clock::time_point deadline) {
  auto finish = [&](CallResult r) {
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r;
  };
  std::string payload;
  if (s == FrameStatus::kOk && !hello_read_) {  // the child's first frame, sent before any program code ran
    hello_read_ = true;
    pid_t sender = -1;
    s = read_frame(fd_, 256, deadline, &payload, nullptr, &io_error, &sender, &spin_);
    if (s == FrameStatus::kOk && payload != R"({"op":"hello"})")
      return finish(fail(CallStatus::kProtocol, what + ": the environment process did not start with a hello frame; killed", true));
    if (s == FrameStatus::kOk) host_pid_ = sender;
  }
  if (s == FrameStatus::kOk)
    s = read_frame(fd_, static_cast<size_t>(options_.max_reply_bytes), deadline, &payload, nullptr, &io_error,
                   nullptr, &spin_);
  switch (s) {
    case FrameStatus::kOk: break;
    case FrameStatus::kTimeout: {
      char secs[32];
      snprintf(secs, sizeof(secs), "%g", timeout_s);
      return finish(fail(CallStatus::kTimeout, what + " did not return within " + secs + " s; the process was killed", true));
    }
    case FrameStatus::kTooLarge:
      return finish(fail(CallStatus::kProtocol, what + ": " + io_error + " (max_reply_bytes); the process was killed", true));
    case FrameStatus::kEof:
    case FrameStatus::kError:
      return finish(lost(what));
  }

  json reply;
  if (!parse_reply(payload, &reply))
    return finish(fail(CallStatus::kProtocol, what + ": the reply is not a valid JSON object; the process was killed", true));
  keep_output(reply);
  auto error = reply.find("error");
  if (error != reply.end()) {
    std::string kind = error->is_string() ? error->get<std::string>() : "";
    CallResult r;
    r.status = kind == "exception" ? CallStatus::kException : kind == "memory" ? CallStatus::kMemory : CallStatus::kProtocol;
    r.exception_type = text_field(reply, "type", 256);
    r.stage = text_field(reply, "stage", 16);
    r.traceback = text_field(reply, "traceback", 16384);
    r.message = text_field(reply, "message", 8192);
    const std::string& message = r.message;
    if (r.status == CallStatus::kProtocol) {
      r.detail = what + ": the sandbox refused the request: " + message;
    } else {
      r.detail = what + " raised " + (r.exception_type.empty() ? "an exception" : r.exception_type);
      if (reply.contains("line") && reply["line"].is_number_integer())
        r.detail += " at line " + std::to_string(reply["line"].get<int64_t>());
      if (!message.empty()) r.detail += ": " + message;
    }
    return finish(r);
  }
  auto value = reply.find("value");
  if (value == reply.end())
    return finish(fail(CallStatus::kProtocol, what + ": the reply has neither 'value' nor 'error'; the process was killed", true));
  std::string wire_error;
  auto decoded = PyValue::from_wire(*value, WireCaps::with_max_str_chars(options_.max_obs_chars), &wire_error);
  if (!decoded)
    return finish(fail(CallStatus::kProtocol, what + ": malformed value in the reply (" + wire_error + "); the process was killed", true));
  CallResult r;
  r.value = std::move(*decoded);
  return finish(r);
}

}  // namespace spade::envsandbox
