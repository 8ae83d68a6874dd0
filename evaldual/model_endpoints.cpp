#include "evaldual/model_endpoints.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/input_fields.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

// A YAML node as JSON (see the header for how plain scalars are typed).
json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& x : n) a.push_back(to_json(x));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.IsScalar() ? kv.first.Scalar() : std::string("?")] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  if (s == "~" || s == "null") return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  char* end = nullptr;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && end && *end == '\0') return i;
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end && *end == '\0') return d;
  return s;
}

const std::set<std::string> kKeys = {"base_url",        "model",          "api_key_env",        "temperature",
                                     "max_tokens",      "reasoning_effort", "effort_field",      "extra_body",
                                     "providers",       "connect_timeout_s", "timeout_s",         "max_retries",
                                     "backoff_base_s",  "backoff_cap_s",  "requests_per_minute", "price_input_per_m",
                                     "price_output_per_m"};

std::string known_list() {
  std::string s;
  for (const auto& k : kKeys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// Applies the keys of map `n` (at `where`) onto `e`.
void apply(const YAML::Node& n, const std::string& where, EndpointEntry& e) {
  if (!n.IsMap()) throw Error(where + ": must be a mapping of endpoint keys (" + known_list() + "), got " + describe_yaml(n));
  ModelEndpoint& ep = e.endpoint;
  for (const auto& kv : n) {
    std::string k = yaml_string(kv.first, where + ": a key");
    const YAML::Node& v = kv.second;
    std::string at = where + "." + k;
    if (!kKeys.count(k)) throw Error(where + ": unknown key '" + k + "' (known: " + known_list() + ")");
    if (k == "extra_body" || k == "providers") {
      if (!v.IsMap()) throw Error(at + ": expected a mapping, got " + describe_yaml(v));
      json j = to_json(v);
      if (k == "extra_body") {
        ep.extra_body.merge_patch(j);
      } else {
        for (auto& [name, fields] : j.items()) {
          if (!fields.is_object())
            throw Error(at + "." + name + ": expected a mapping of request-body fields, got " + describe_json(fields));
          e.providers[name] = fields;
        }
      }
      continue;
    }
    if (!v.IsScalar()) throw Error(at + ": expected a scalar, got " + describe_yaml(v));
    if (k == "base_url") ep.base_url = yaml_string(v, at);
    else if (k == "model") ep.model = yaml_string(v, at);
    else if (k == "api_key_env") ep.api_key_env = yaml_string(v, at);
    else if (k == "temperature") ep.temperature = yaml_number(v, at);
    else if (k == "max_tokens") ep.max_tokens = yaml_int(v, at);
    else if (k == "reasoning_effort") ep.reasoning_effort = yaml_string(v, at);
    else if (k == "effort_field") ep.effort_field = yaml_string(v, at);
    else if (k == "connect_timeout_s") ep.connect_timeout_s = yaml_number(v, at);
    else if (k == "timeout_s") ep.timeout_s = yaml_number(v, at);
    else if (k == "max_retries") ep.max_retries = yaml_int(v, at);
    else if (k == "backoff_base_s") ep.backoff_base_s = yaml_number(v, at);
    else if (k == "backoff_cap_s") ep.backoff_cap_s = yaml_number(v, at);
    else if (k == "requests_per_minute") ep.requests_per_minute = yaml_number(v, at);
    else if (k == "price_input_per_m") ep.price_input_per_m = yaml_number(v, at);
    else if (k == "price_output_per_m") ep.price_output_per_m = yaml_number(v, at);
  }
}

std::string names_of(const std::map<std::string, EndpointEntry>& m) {
  std::string s;
  for (const auto& [k, _] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

EndpointFile parse_endpoints(const std::string& text, const std::string& origin) {
  YAML::Node root = parse_yaml_text(text, origin);
  if (!root.IsMap())
    throw Error(origin + ": an endpoints file is a mapping with 'models' (and optional 'defaults'), got " + describe_yaml(root));
  for (const auto& kv : root) {
    std::string k = yaml_string(kv.first, origin + ": a top-level key");
    if (k != "models" && k != "defaults") throw Error(origin + ": unknown key '" + k + "' (known: defaults, models)");
  }
  if (!root["models"] || !root["models"].IsMap() || root["models"].size() == 0)
    throw Error(origin + ": models: expected a non-empty mapping nickname -> endpoint, got " +
                (root["models"] ? describe_yaml(root["models"]) : std::string("nothing")));
  EndpointFile f;
  f.path = origin;
  for (const auto& kv : root["models"]) {
    std::string nick = yaml_string(kv.first, origin + ": models: a nickname");
    if (nick.empty() || nick.find('#') != std::string::npos)
      throw Error(origin + ": model nickname '" + nick + "' must be non-empty and free of '#' (participant ids use '#')");
    EndpointEntry e;
    if (root["defaults"]) apply(root["defaults"], origin + ": defaults", e);
    apply(kv.second, origin + ": models." + nick, e);
    if (e.endpoint.model.empty()) throw Error(origin + ": models." + nick + ": missing required key 'model'");
    if (e.endpoint.base_url.empty())
      throw Error(origin + ": models." + nick + ": missing 'base_url' (set it here or under defaults)");
    e.endpoint.name = nick;
    f.models.emplace(nick, std::move(e));
  }
  return f;
}

EndpointFile load_endpoints(const std::string& path) { return parse_endpoints(read_file(path), path); }

ModelEndpoint resolve_endpoint(const EndpointFile& file, const Participant& p) {
  auto it = file.models.find(p.model);
  if (it == file.models.end())
    throw Error(file.path + ": no model '" + p.model + "' for participant '" + p.id() + "' (known: " +
                names_of(file.models) + ")");
  ModelEndpoint ep = it->second.endpoint;
  ep.name = p.id();
  if (!p.effort.empty()) ep.reasoning_effort = p.effort;
  if (!p.provider.empty()) {
    auto pv = it->second.providers.find(p.provider);
    if (pv == it->second.providers.end()) {
      std::string known;
      for (const auto& [k, _] : it->second.providers) known += (known.empty() ? "" : ", ") + k;
      throw Error(file.path + ": model '" + p.model + "' has no provider '" + p.provider + "' for participant '" + p.id() +
                  "' (its providers: " + (known.empty() ? "none" : known) + ")");
    }
    ep.provider = p.provider;
    ep.extra_body.merge_patch(pv->second);
  }
  return ep;
}

}  // namespace spade::evaldual
