// The follow-up program's world (programs/world_probe.py, issue 24) for the envsandbox tests: what a
// program finds when it starts in a pool (limits, scheduling, writable places, files, processes, IPC
// objects, free memory), as JSON, and the world of a fresh pool to compare it with.
#pragma once
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "envsandbox/sandbox.h"
#include "test_util.h"

namespace spade::envsandbox::testing {

/// A PyValue as JSON (dict keys that are not str are written as their repr).
inline nlohmann::json to_json(const PyValue& v) {
  switch (v.kind()) {
    case PyValue::Kind::kNone: return nullptr;
    case PyValue::Kind::kBool: return v.as_bool();
    case PyValue::Kind::kInt: return v.int_fits() ? nlohmann::json(v.as_int()) : nlohmann::json(v.repr(100));
    case PyValue::Kind::kFloat: return v.as_double();
    case PyValue::Kind::kStr: return v.as_str();
    case PyValue::Kind::kTuple:
    case PyValue::Kind::kList: {
      nlohmann::json a = nlohmann::json::array();
      for (const PyValue& item : v.items()) a.push_back(to_json(item));
      return a;
    }
    case PyValue::Kind::kDict: {
      nlohmann::json o = nlohmann::json::object();
      for (size_t i = 0; i < v.keys().size(); ++i)
        o[v.keys()[i].is_str() ? v.keys()[i].as_str() : v.keys()[i].repr()] = to_json(v.items()[i]);
      return o;
    }
    case PyValue::Kind::kOther: return "<" + v.type_label() + ">";
  }
  return nullptr;
}

/// The world the follow-up program finds in a new instance of `server` (reset(seed=0)'s info), or
/// {"load_failed"/"reset_failed": why}.
inline nlohmann::json world_of(EnvServer& server) {
  auto env = server.spawn();
  CallResult load = env->load(program("world_probe.py"));
  if (!load.ok()) return nlohmann::json{{"load_failed", std::string(call_status_name(load.status)) + ": " + load.detail}};
  CallResult r = env->reset(0, 20.0);
  if (!r.ok()) return nlohmann::json{{"reset_failed", std::string(call_status_name(r.status)) + ": " + r.detail}};
  return to_json(r.value.items()[1]);
}

/// The top-level fields of `a` and `b` that differ, one per line (for failure messages).
inline std::string differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::string out;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || b[it.key()] != it.value())
      out += "\n  " + it.key() + ": " + it.value().dump() + " vs fresh " +
             (b.contains(it.key()) ? b[it.key()].dump() : std::string("<absent>"));
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!a.contains(it.key())) out += "\n  " + it.key() + ": <absent> vs fresh " + it.value().dump();
  return out;
}

/// The fields of `world` named in `keys`.
inline nlohmann::json only(const nlohmann::json& world, const std::set<std::string>& keys) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& k : keys)
    if (world.contains(k)) out[k] = world[k];
  return out;
}

/// The world of a fresh pool with `options`, measured once per distinct options per test binary.
inline const nlohmann::json& fresh_world(const SandboxOptions& options) {
  static std::mutex mu;
  static std::map<std::string, nlohmann::json> cache;
  std::string key = options.namespaces + "/" + std::to_string(options.child_namespaces) + "/" +
                    std::to_string(options.pool_memory_bytes) + "/" +
                    std::to_string(options.spare_children) + "/" + std::to_string(options.preload_spares) + "/" +
                    std::to_string(options.memory_limit_bytes) + "/" + std::to_string(options.tmpfs_bytes);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  EnvServer fresh(options);
  return cache[key] = world_of(fresh);
}

}  // namespace spade::envsandbox::testing
