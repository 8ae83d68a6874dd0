#include "envsandbox/envd_child.h"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>
#include <utility>

#include "envsandbox/envd_capture.h"
#include "envsandbox/envd_confine.h"
#include "envsandbox/envd_value.h"
#include "envsandbox/frame.h"
#include "envsandbox/protocol.h"

namespace py = pybind11;
using nlohmann::json;

namespace spade::envsandbox::envd {
namespace {

// How long a preloaded spare waits for a request after its load reply before it warms up (WarmUp).
constexpr int kIdleBeforeWarmUpMs = 5;

int64_t required(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
    throw std::runtime_error(std::string("spawn limits: missing or negative integer field '") + key + "'");
  return it->get<int64_t>();
}

// Serves the child channel for one environment program.
class ChildServer {
 public:
  ChildServer(int sock, const ChildLimits& limits, const Prelude& prelude)
      : sock_(sock), limits_(limits), prelude_(prelude) {
    sink_object_ = install_output_sink(limits.max_output_bytes, &sink_);
    // Room for the value: the reply cap minus output, exception text and framing slack.
    int64_t room = limits.max_reply_bytes - limits.max_output_bytes - protocol::kMaxTracebackBytes -
                   protocol::kMaxMessageBytes - 4096;
    caps_ = ValueCaps{limits.max_str_chars, std::max<int64_t>(room, 4096)};
  }

  // See WarmUp: exercise the load/reset/step/encode paths once on a throwaway environment and forget it
  // (its namespace, its replies, any exception), leaving the instance as it was (a loaded program stays).
  // The throwaway environment prints nothing, so the output sink is left alone: what a loaded program's
  // own threads print meanwhile stays for its next reply.
  void warm_up() {
    py::object loaded = std::exchange(env_, py::none());
    static const char* kWarmEnv =
        "class WarmEnv:\n"
        "    def __init__(self, max_turns=3):\n"
        "        self.turns = 0\n"
        "    def reset(self, seed=None):\n"
        "        self.turns = 0\n"
        "        return 'Guess a number in [0, %d].' % (seed or 9), {'seed': seed}\n"
        "    def step(self, action):\n"
        "        self.turns += 1\n"
        "        return 'obs %s' % action, 1.0, self.turns >= 1, False, {'scores': [1, 2.5, None]}\n";
    try {
      handle(json{{"op", "load"}, {"source", kWarmEnv}, {"max_turns_cap", 3}}.dump());
      if (!env_.is_none()) {
        handle(json{{"op", "reset"}, {"seed", 0}}.dump()).dump();
        handle(json{{"op", "step"}, {"action", "\\boxed{1}"}}.dump()).dump();
      }
    } catch (...) {
    }
    env_ = std::move(loaded);
    PyErr_Clear();
  }

  // `warm_after_first`: warm_up() once the first reply is written, unless the next request follows it.
  [[noreturn]] void serve(bool warm_after_first) {
    for (bool first = true;; first = false) {
      std::string request;
      FrameStatus s = read_frame(sock_, protocol::kMaxRequestBytes, no_deadline(), &request, nullptr, nullptr,
                                 nullptr, &spin_);
      if (s == FrameStatus::kEof) _exit(0);  // the host closed the channel: done
      if (s != FrameStatus::kOk) _exit(71);
      json reply = handle(request);
      std::string out = sink_->take();
      if (!out.empty()) reply["out"] = std::move(out);
      std::string payload = reply.dump(-1, ' ', false, json::error_handler_t::replace);
      if (static_cast<int64_t>(payload.size()) > limits_.max_reply_bytes)
        payload = json{{"error", "protocol"}, {"message", "reply of " + std::to_string(payload.size()) +
                                                              " bytes over the cap"}}.dump();
      if (write_frame(sock_, payload, no_deadline()) != FrameStatus::kOk) _exit(72);
      // A spare handed over while it loaded gets the caller's next request at once: answer it. One
      // that waits idle for kIdleBeforeWarmUpMs warms up (a request arriving meanwhile waits for it).
      if (first && warm_after_first) {
        pollfd next{sock_, POLLIN, 0};
        if (poll(&next, 1, kIdleBeforeWarmUpMs) == 0) warm_up();
      }
    }
  }

 private:
  json handle(const std::string& request) {
    json req = json::parse(request, nullptr, false);
    if (!req.is_object() || !req.contains("op") || !req["op"].is_string())
      return protocol_error("request is not an object with a string 'op'");
    const std::string op = req["op"];
    try {
      if (op == "load") return load(req.at("source").get<std::string>(), req.at("max_turns_cap").get<int64_t>());
      if (op == "repair") {  // a whole program: only the reply budget caps it, not max_str_chars
        py::object fixed = prelude_.helpers.attr("repair_fstring_braces")(req.at("source").get<std::string>());
        return json{{"value", encode_value(fixed.ptr(), ValueCaps{caps_.max_bytes, caps_.max_bytes})}};
      }
      if (env_.is_none()) return protocol_error("'" + op + "' before a successful load");
      if (op == "reset") {
        const json& seed = req.at("seed");
        if (seed.is_null()) return value_reply(env_.attr("reset")());
        return value_reply(env_.attr("reset")(py::arg("seed") = seed.get<int64_t>()));
      }
      if (op == "step") return value_reply(env_.attr("step")(req.at("action").get<std::string>()));
      if (op == "call") return value_reply(env_.attr(req.at("method").get<std::string>().c_str())());
      if (op == "has") return has(req.at("method").get<std::string>());
      if (op == "reseed") {
        prelude_.helpers.attr("reseed_globals")(req.at("seed").get<int64_t>());
        return json{{"value", nullptr}};
      }
      if (op == "tools") return value_reply(prelude_.helpers.attr("tool_schemas")(env_));
      if (op == "tool_report") {
        py::list seeds;
        for (const json& s : req.at("seeds")) seeds.append(s.get<int64_t>());
        return value_reply(prelude_.helpers.attr("tool_use_report")(env_, seeds));
      }
      return protocol_error("unknown op '" + op + "'");
    } catch (py::error_already_set& e) {
      return exception_reply(e, "");
    } catch (json::exception& e) {
      return protocol_error(std::string("bad request: ") + e.what());
    }
  }

  json load(const std::string& source, int64_t cap) {
    if (!env_.is_none()) return protocol_error("a program is already loaded in this instance");
    py::dict ns = prelude_.helpers.attr("new_namespace")(prelude_.names, source);
    py::object code;
    try {
      code = py::module_::import("builtins").attr("compile")(source, "<env>", "exec");
    } catch (py::error_already_set& e) {
      return exception_reply(e, "compile");
    }
    try {
      PyObject* r = PyEval_EvalCode(code.ptr(), ns.ptr(), ns.ptr());
      if (r == nullptr) throw py::error_already_set();
      Py_DECREF(r);
    } catch (py::error_already_set& e) {
      return exception_reply(e, "exec");
    }
    py::object cls;
    try {
      cls = prelude_.helpers.attr("find_env_class")(ns);
    } catch (py::error_already_set& e) {
      return exception_reply(e, "find");
    }
    if (cls.is_none())
      return json{{"error", "exception"}, {"stage", "find"}, {"type", "LookupError"},
                  {"message", "the program defines no class whose name ends in 'Env'"}};
    try {
      py::tuple made = prelude_.helpers.attr("instantiate")(cls, cap);
      env_ = made[0];
      PyObject* name = PyType_GetName(reinterpret_cast<PyTypeObject*>(cls.ptr()));
      json turns = made[1].is_none() ? json(nullptr) : json(made[1].cast<int64_t>());
      json reply{{"value", {{"t", "tuple"}, {"v", json::array({str_text(name, 256), turns})}}}};
      Py_XDECREF(name);
      PyErr_Clear();
      return reply;
    } catch (py::error_already_set& e) {
      return exception_reply(e, "init");
    }
  }

  json has(const std::string& method) {
    PyObject* attr = PyObject_GetAttrString(env_.ptr(), method.c_str());
    if (attr == nullptr) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
      PyErr_Clear();
      return json{{"value", false}};
    }
    bool callable = PyCallable_Check(attr);
    Py_DECREF(attr);
    return json{{"value", callable}};
  }

  json value_reply(const py::object& value) { return json{{"value", encode_value(value.ptr(), caps_)}}; }

  static json protocol_error(const std::string& message) {
    return json{{"error", "protocol"}, {"message", message}};
  }

  json exception_reply(py::error_already_set& e, const std::string& stage) {
    json reply;
    if (!stage.empty()) reply["stage"] = stage;
    if (e.matches(PyExc_MemoryError)) {  // keep it minimal: memory may be exhausted
      reply["error"] = "memory";
      reply["type"] = "MemoryError";
      reply["message"] = str_text(e.value().ptr(), protocol::kMaxMessageBytes);
      return reply;
    }
    reply["error"] = "exception";
    // An exception fetched in C carries its traceback separately; attach it for formatting.
    if (e.trace()) PyException_SetTraceback(e.value().ptr(), e.trace().ptr());
    try {
      py::tuple d = prelude_.helpers.attr("describe_exception")(e.value());
      reply["type"] = str_text(d[0].ptr(), 256);
      reply["message"] = str_text(d[1].ptr(), protocol::kMaxMessageBytes);
      reply["traceback"] = str_text(d[2].ptr(), protocol::kMaxTracebackBytes);
      if (stage == "compile") {
        PyObject* line = PyObject_GetAttrString(e.value().ptr(), "lineno");
        if (line != nullptr && PyLong_CheckExact(line)) reply["line"] = PyLong_AsLongLong(line);
        Py_XDECREF(line);
        PyErr_Clear();
      }
    } catch (py::error_already_set&) {
      reply["type"] = reinterpret_cast<PyTypeObject*>(e.type().ptr())->tp_name;
      reply["message"] = "<exception could not be described>";
    }
    return reply;
  }

  int sock_;
  ChildLimits limits_;
  const Prelude& prelude_;
  OutputSink* sink_ = nullptr;
  py::object sink_object_;
  ValueCaps caps_{};
  SpinBudget spin_{static_cast<int>(limits_.spin_us)};  // waits for the host's next request
  py::object env_ = py::none();
};

}  // namespace

ChildLimits ChildLimits::from_json(const json& j) {
  ChildLimits l{};
  l.memory_bytes = required(j, "memory_bytes");
  l.cpu_s = required(j, "cpu_s");
  l.max_files = required(j, "max_files");
  l.file_size_bytes = required(j, "file_size_bytes");
  l.max_output_bytes = required(j, "max_output_bytes");
  l.max_reply_bytes = required(j, "max_reply_bytes");
  l.max_str_chars = required(j, "max_str_chars");
  auto sec = j.find("seccomp");
  if (sec != j.end() && !sec->is_boolean()) throw std::runtime_error("spawn limits: 'seccomp' must be a bool");
  l.seccomp = sec == j.end() || sec->get<bool>();
  auto spin = j.find("spin_us");
  if (spin != j.end() && (!spin->is_number_integer() || spin->get<int64_t>() < 0 || spin->get<int64_t>() > 1000000))
    throw std::runtime_error("spawn limits: 'spin_us' must be an integer in [0, 1000000]");
  l.spin_us = spin == j.end() ? 0 : spin->get<int64_t>();
  auto tmpfs = j.find("tmpfs_bytes");
  if (tmpfs != j.end() && (!tmpfs->is_number_integer() || tmpfs->get<int64_t>() < (int64_t{1} << 20)))
    throw std::runtime_error("spawn limits: 'tmpfs_bytes' must be an integer >= 1 MiB");
  if (tmpfs != j.end()) l.tmpfs_bytes = tmpfs->get<int64_t>();
  return l;
}

std::array<rlimit, RLIM_NLIMITS> child_rlimits(const std::array<rlimit, RLIM_NLIMITS>& parent,
                                               const ChildLimits& limits, int64_t vm_bytes) {
  std::array<rlimit, RLIM_NLIMITS> out = parent;
  auto set = [&](int resource, int64_t soft, int64_t hard) {
    rlim_t s = static_cast<rlim_t>(soft), h = static_cast<rlim_t>(hard);
    const rlim_t max = parent[resource].rlim_max;
    if (max != RLIM_INFINITY) {
      if (h > max) h = max;
      if (s > h) s = h;
    }
    out[resource] = rlimit{s, h};
  };
  set(RLIMIT_AS, vm_bytes + limits.memory_bytes, vm_bytes + limits.memory_bytes);
  set(RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1);
  set(RLIMIT_CORE, 0, 0);
  set(RLIMIT_NOFILE, limits.max_files, limits.max_files);
  set(RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes);
  return out;
}

void run_child(int sock, const ChildSetup& setup, const ChildLimits& limits, const Prelude& prelude,
               SeccompFilter* filter, WarmUp warm) {
  int channel = confine_child(sock, setup, limits, limits.seccomp ? filter : nullptr);
  if (write_frame(channel, R"({"op":"hello"})", no_deadline()) != FrameStatus::kOk) _exit(72);
  try {
    ChildServer server(channel, limits, prelude);
    if (warm == WarmUp::kBeforeFirst) server.warm_up();
    server.serve(warm == WarmUp::kAfterFirst);
  } catch (...) {
    _exit(73);
  }
}

}  // namespace spade::envsandbox::envd
