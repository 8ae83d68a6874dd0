// Typed reading of user-supplied JSON and YAML for the duel's inputs (match lists, rankings,
// tournament state, replay scripts, repository specs, endpoints files), so that every input error
// names the file, the field and what was expected, and no raw nlohmann/yaml-cpp exception text
// reaches the user.
//
// `where` is the field's full name, e.g. "runs/t/rankings.json: rankings[3].bradley_terry.score";
// errors read "<where>: expected <what>, got <kind and a short excerpt of the value>".
//
// Thread-safety: pure functions; thread-safe.
#pragma once
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace spade::evaldual {

// ---- JSON -------------------------------------------------------------------------------------

/// Parses `text` read from `source`. Throws spade::Error "SOURCE:LINE:COLUMN: not valid JSON: <what
/// the parser expected>" (the location computed from the parser's byte offset).
nlohmann::json parse_json_text(const std::string& text, const std::string& source);
/// Reads and parses the file at `path`. Throws spade::Error naming the path when it cannot be read,
/// and as parse_json_text() when it is not valid JSON.
nlohmann::json read_json_document(const std::string& path);

/// "a string \"abc\"", "a number 3", "an array of 2", "an object with keys a, b", "null", ... (for
/// the "got ..." part of an error).
std::string describe_json(const nlohmann::json& v);

/// Throws spade::Error "<where>: expected an object, got ..." unless `v` is an object.
void expect_object(const nlohmann::json& v, const std::string& where);
/// The value of `key` in object `obj` (at `where`). Throws "<where>: missing key 'KEY'".
const nlohmann::json& json_field(const nlohmann::json& obj, const std::string& key, const std::string& where);

/// `v` (at `where`) as each type. Numbers: any JSON number (json_int: an integer in int's range,
/// also a float with an integral value such as 3.0); json_u64: a non-negative integer. Throws
/// spade::Error "<where>: expected <type>, got ..." otherwise.
std::string json_string(const nlohmann::json& v, const std::string& where);
double json_number(const nlohmann::json& v, const std::string& where);
int json_int(const nlohmann::json& v, const std::string& where);
uint64_t json_u64(const nlohmann::json& v, const std::string& where);
bool json_bool(const nlohmann::json& v, const std::string& where);
std::vector<std::string> json_string_list(const nlohmann::json& v, const std::string& where);

/// One object of a document, read field by field: each error names the field's path ("FILE: key" at
/// the top, "where.key" below). Holds a reference: `obj` must outlive it.
class JsonFields {
 public:
  /// Throws spade::Error "<where>: expected an object, got ..." unless `obj` is an object.
  JsonFields(const nlohmann::json& obj, std::string where);
  /// The path of field `key`.
  std::string path(const std::string& key) const;
  bool has(const std::string& key) const { return obj_.contains(key); }
  /// The value of `key`; throws "<where>: missing key 'KEY'".
  const nlohmann::json& at(const std::string& key) const { return json_field(obj_, key, where_); }
  /// The value of `key` as each type (the json_* readers above, named by path(key)).
  std::string string(const std::string& key) const { return json_string(at(key), path(key)); }
  double number(const std::string& key) const { return json_number(at(key), path(key)); }
  int integer(const std::string& key) const { return json_int(at(key), path(key)); }
  uint64_t u64(const std::string& key) const { return json_u64(at(key), path(key)); }
  bool boolean(const std::string& key) const { return json_bool(at(key), path(key)); }
  std::vector<std::string> strings(const std::string& key) const { return json_string_list(at(key), path(key)); }

 private:
  const nlohmann::json& obj_;
  std::string where_;
};

// ---- YAML -------------------------------------------------------------------------------------

/// Parses YAML `text` read from `source`. Throws spade::Error "SOURCE:LINE:COLUMN: invalid YAML:
/// <message>" (1-based line and column).
YAML::Node parse_yaml_text(const std::string& text, const std::string& source);

/// A node's kind for errors: "a mapping", "a list", "a scalar 'abc'", "null".
std::string describe_yaml(const YAML::Node& n);

/// `n` (at `where`) as each type: a scalar string; a number (decimal, as strtod reads it, the whole
/// scalar); an integer in int's range; a list of scalar strings. Throws spade::Error "<where>:
/// expected <type>, got ..." otherwise.
std::string yaml_string(const YAML::Node& n, const std::string& where);
double yaml_number(const YAML::Node& n, const std::string& where);
int yaml_int(const YAML::Node& n, const std::string& where);
std::vector<std::string> yaml_string_list(const YAML::Node& n, const std::string& where);

}  // namespace spade::evaldual
