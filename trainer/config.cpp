#include "trainer/config.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "common/atomic_file.h"
#include "common/edit_distance.h"
#include "common/error.h"
#include "trainer/config_checks.h"
#include "trainer/config_keys.h"

namespace spade::trainer {

namespace {

// Sets one field from a node; `where` ("FILE:LINE" or "--set KEY=VALUE") starts its error messages.
using Setter = std::function<void(const YAML::Node&, const std::string& where)>;

// What a field of type T accepts, as the error for a value of the wrong type words it.
template <class T>
const char* expected_type() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true or false)";
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return "a non-negative integer";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else return "a list of strings, e.g. [a, b]";
}

// What `node` holds, for an error message: 'text' for a scalar, else its kind.
std::string describe_value(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "an empty value";
}

// "FILE:LINE" of a node read from FILE (yaml-cpp's marks are 0-based, -1 when unknown).
std::string at(const std::string& file, const YAML::Mark& mark) {
  return mark.line >= 0 ? file + ":" + std::to_string(mark.line + 1) : file;
}

// Where each key was last set ("FILE:LINE" or "--set KEY=VALUE"); keys left at their default are absent.
using Locations = std::map<std::string, std::string>;

template <class T>
Setter make_setter(T& field, const std::string& key, Locations& locations) {
  return [&field, key, &locations](const YAML::Node& node, const std::string& where) {
    locations[key] = where;
    bool ok = false;
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (node.IsNull()) {
        field.clear();
        return;
      }
      if (node.IsSequence()) {
        ok = true;
        for (const YAML::Node& item : node) ok &= item.IsScalar();
      }
    } else {
      ok = node.IsScalar();
    }
    if (ok) {
      try {
        field = node.as<T>();
        return;
      } catch (const YAML::Exception&) {
      }
    }
    throw Error(where + ": " + key + " expects " + expected_type<T>() + ", got " +
                describe_value(node));
  };
}

std::map<std::string, Setter> setters(Config& c, Locations& locations) {
  std::map<std::string, Setter> out;
  config_keys::visit(c, [&](const std::string& key, auto& field, const config_keys::Rule&) {
    out[key] = make_setter(field, key, locations);
  });
  return out;
}

// Every section ("selfplay", "selfplay.agent", ...) that holds a key of `set`.
std::set<std::string> sections_of(const std::map<std::string, Setter>& set) {
  std::set<std::string> out;
  for (const auto& [key, _] : set)
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      out.insert(key.substr(0, dot));
  return out;
}

// The error for `key`, which is no key of `set`: a section named as a key, or an unknown name with the
// closest valid one (keys, and in a file sections too, since a file can misspell a section's name).
Error unknown_key(const std::string& where, const std::string& key, const std::map<std::string, Setter>& set,
                  bool sections_allowed) {
  const std::set<std::string> sections = sections_of(set);
  if (sections.count(key))
    return Error(where + ": '" + key + "' is a section, not a key: set one of its keys, e.g. " + key + "." +
                 set.lower_bound(key + ".")->first.substr(key.size() + 1) +
                 " (`spade config show` lists every key)");
  std::vector<std::string> names;
  for (const auto& [k, _] : set) names.push_back(k);
  if (sections_allowed) names.insert(names.end(), sections.begin(), sections.end());
  const std::string hint = did_you_mean(key, names);
  return Error(where + ": unknown config key '" + key + "'" +
               (hint.empty() ? " (`spade config show` lists every valid key)" : hint));
}

void apply_node(const YAML::Node& node, const std::string& prefix, std::map<std::string, Setter>& set,
                const std::string& where) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix.empty() ? it->first.as<std::string>()
                                           : prefix + "." + it->first.as<std::string>();
    const YAML::Node& value = it->second;
    auto found = set.find(key);
    if (found != set.end()) {
      found->second(value, at(where, value.Mark()));
      continue;
    }
    const auto first_inside = set.lower_bound(key + ".");
    const bool is_section = first_inside != set.end() && first_inside->first.rfind(key + ".", 0) == 0;
    if (is_section && value.IsMap()) {
      apply_node(value, key, set, where);
      continue;
    }
    if (is_section)
      throw Error(at(where, it->first.Mark()) + ": '" + key + "' is a section: it holds keys (e.g. " +
                  first_inside->first + "), got " + describe_value(value));
    throw unknown_key(at(where, it->first.Mark()), key, set, /*sections_allowed=*/true);
  }
}

void apply_overrides(const std::vector<std::string>& overrides, std::map<std::string, Setter>& set) {
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--set " + o + ": expected KEY=VALUE, e.g. --set selfplay.steps=8");
    const std::string key = o.substr(0, eq);
    auto found = set.find(key);
    if (found == set.end()) throw unknown_key("--set " + o, key, set, /*sections_allowed=*/false);
    YAML::Node value;
    try {
      value = YAML::Load(o.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw Error("--set " + o + ": cannot parse value: " + e.msg);
    }
    found->second(value, "--set " + o);
  }
}

}  // namespace

Config parse_config_layers(const std::vector<ConfigLayer>& layers, const std::vector<std::string>& overrides) {
  if (layers.empty()) throw Error("parse_config_layers: no config given");
  Config config;
  Locations locations;
  auto set = setters(config, locations);
  for (const ConfigLayer& layer : layers) {
    YAML::Node root;
    try {
      root = YAML::Load(layer.yaml_text);
    } catch (const YAML::Exception& e) {
      throw Error(layer.source_name + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
    }
    if (root && !root.IsNull()) {
      if (!root.IsMap()) throw Error(layer.source_name + ": the top level must be a mapping of sections");
      apply_node(root, "", set, layer.source_name);
    }
  }
  apply_overrides(overrides, set);
  check_config(config, layers.front().source_name, locations);
  return config;
}

Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  return parse_config_layers({{yaml_text, source_name}}, overrides);
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_file(path), path, overrides);
}

std::string to_yaml(const Config& config) {
  Config& c = const_cast<Config&>(config);  // config_keys::visit only reads here
  YAML::Node root(YAML::NodeType::Map);
  config_keys::visit(c, [&](const std::string& key, auto& field, const config_keys::Rule&) {
    std::vector<std::string> parts;
    std::stringstream ss(key);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    // yaml-cpp nodes are handles: `a = b` copies the value, reset() rebinds the handle.
    YAML::Node node;
    node.reset(root);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = node[parts[i]];
      node.reset(child);
    }
    node[parts.back()] = field;
  });
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return std::string(out.c_str()) + "\n";
}

void validate(const Config& config, const std::string& source_name) { check_config(config, source_name, {}); }

}  // namespace spade::trainer
