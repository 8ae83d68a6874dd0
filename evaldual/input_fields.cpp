#include "evaldual/input_fields.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "common/atomic_file.h"
#include "common/error.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

std::string excerpt(const std::string& s, size_t max = 60) {
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

// "LINE:COLUMN" (1-based) of the 0-based offset `pos` in `text`.
std::string line_col(const std::string& text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t line = 1, col_start = 0;
  for (size_t i = 0; i < pos; ++i)
    if (text[i] == '\n') {
      ++line;
      col_start = i + 1;
    }
  return std::to_string(line) + ":" + std::to_string(pos - col_start + 1);
}

// The parser's own description of what it expected, without the library's "[json.exception...]
// parse error at line L, column C: " prefix (the location is ours).
std::string parse_reason(const std::string& what) {
  std::string s = what;
  size_t col = s.find(" column ");
  if (col != std::string::npos) {
    size_t colon = s.find(": ", col);
    if (colon != std::string::npos) return s.substr(colon + 2);
  }
  size_t br = s.find("] ");
  if (s.rfind("[json.exception", 0) == 0 && br != std::string::npos) s = s.substr(br + 2);
  return s;
}

std::string got(const json& v) { return "got " + describe_json(v); }
std::string got(const YAML::Node& n) { return "got " + describe_yaml(n); }

}  // namespace

json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    throw Error(source + ":" + line_col(text, pos) + ": not valid JSON: " + parse_reason(e.what()));
  }
}

json read_json_document(const std::string& path) { return parse_json_text(read_file(path), path); }

std::string describe_json(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return std::string("a boolean ") + (v.get<bool>() ? "true" : "false");
    case json::value_t::string: return "a string " + excerpt(v.dump());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number " + v.dump();
    case json::value_t::array: return "an array of " + std::to_string(v.size());
    case json::value_t::object: {
      std::string keys;
      size_t n = 0;
      for (auto it = v.begin(); it != v.end() && n < 6; ++it, ++n) keys += (keys.empty() ? "" : ", ") + it.key();
      if (v.size() > 6) keys += ", ...";
      return v.empty() ? "an empty object" : "an object with keys " + keys;
    }
    default: return "a binary value";
  }
}

void expect_object(const json& v, const std::string& where) {
  if (!v.is_object()) throw Error(where + ": expected an object, " + got(v));
}

const json& json_field(const json& obj, const std::string& key, const std::string& where) {
  expect_object(obj, where);
  auto it = obj.find(key);
  if (it == obj.end()) throw Error(where + ": missing key '" + key + "'");
  return *it;
}

std::string json_string(const json& v, const std::string& where) {
  if (!v.is_string()) throw Error(where + ": expected a string, " + got(v));
  return v.get<std::string>();
}

double json_number(const json& v, const std::string& where) {
  if (!v.is_number()) throw Error(where + ": expected a number, " + got(v));
  return v.get<double>();
}

int json_int(const json& v, const std::string& where) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(INT_MAX)
                               : (v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX))
      return static_cast<int>(v.get<int64_t>());
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && d >= INT_MIN && d <= INT_MAX) return static_cast<int>(d);
  }
  throw Error(where + ": expected an integer, " + got(v));
}

uint64_t json_u64(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw Error(where + ": expected a non-negative integer, " + got(v));
}

bool json_bool(const json& v, const std::string& where) {
  if (!v.is_boolean()) throw Error(where + ": expected true or false, " + got(v));
  return v.get<bool>();
}

std::vector<std::string> json_string_list(const json& v, const std::string& where) {
  if (!v.is_array()) throw Error(where + ": expected an array of strings, " + got(v));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(json_string(v[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

JsonFields::JsonFields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
  expect_object(obj_, where_);
}

std::string JsonFields::path(const std::string& key) const {
  return where_ + (where_.find(": ") == std::string::npos ? ": " : ".") + key;
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::string loc = e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    throw Error(source + loc + ": invalid YAML: " + e.msg);
  }
}

std::string describe_yaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar '" + excerpt(n.Scalar()) + "'";
    default: return "nothing (null)";
  }
}

std::string yaml_string(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) throw Error(where + ": expected a string, " + got(n));
  return n.Scalar();
}

double yaml_number(const YAML::Node& n, const std::string& where) {
  if (n.IsScalar() && !n.Scalar().empty()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (end && *end == '\0' && errno == 0 && std::isfinite(d)) return d;
  }
  throw Error(where + ": expected a number, " + got(n));
}

int yaml_int(const YAML::Node& n, const std::string& where) {
  if (n.IsScalar() && !n.Scalar().empty()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end && *end == '\0' && errno == 0 && v >= INT_MIN && v <= INT_MAX) return static_cast<int>(v);
  }
  throw Error(where + ": expected an integer, " + got(n));
}

std::vector<std::string> yaml_string_list(const YAML::Node& n, const std::string& where) {
  if (!n.IsSequence()) throw Error(where + ": expected a list of strings, " + got(n));
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) out.push_back(yaml_string(n[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace spade::evaldual
