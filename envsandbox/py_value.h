// PyValue: a Python value returned by an environment program, as a typed tree the host can inspect
// safely. Built only from the child's wire encoding (protocol.h), which is untrusted: from_wire()
// checks every node's shape and type and applies the host's own caps (WireCaps) whatever the child
// claims. The child read the value with exact type checks and never ran user code while doing so, so a
// str here really was a str (or a str subclass, see type_name()) -- unless the program wrote a reply
// of its own on the channel, which is why nothing in a value is trusted.
//
// Thread-safety: immutable after construction; safe to share between threads.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spade::envsandbox {

/// The host's caps on a decoded value (protocol.h): strings longer than max_str_chars characters (code
/// points) are cut to it and marked cut(); containers beyond max_elements nodes in the whole tree lose
/// their remaining elements and are marked cut(); nesting deeper than max_depth, or a big int with more
/// than protocol::kMaxBigIntDigits digits, makes the value malformed.
struct WireCaps {
  int64_t max_str_chars;
  int64_t max_elements;
  int max_depth;
  /// max_str_chars as given; the element and depth caps of protocol.h.
  static WireCaps with_max_str_chars(int64_t max_str_chars);
};

class PyValue {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kTuple, kList, kDict, kOther };

  /// None.
  PyValue() = default;
  /// A str (used for values the host itself produces, e.g. a class name).
  static PyValue str(std::string text);

  /// Decodes the wire encoding under `caps`; nullopt with `*error` set (what and where) if any node is
  /// malformed.
  static std::optional<PyValue> from_wire(const nlohmann::json& wire, const WireCaps& caps, std::string* error);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  /// int or float; a bool is not a number here (reference §4 "int/float reward", bool excluded).
  bool is_number() const { return is_int() || is_float(); }
  bool is_str() const { return kind_ == Kind::kStr; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }

  /// The bool (false for other kinds).
  bool as_bool() const { return bool_; }
  /// True for an int within int64; as_int() is then exact (0 for other kinds).
  bool int_fits() const { return kind_ == Kind::kInt && big_.empty() && !big_unprintable_; }
  int64_t as_int() const { return int_; }
  /// int (big ints approximated) or float, NaN/inf preserved; NaN for other kinds.
  double as_double() const;
  /// The str (empty for other kinds). Valid UTF-8; at most WireCaps::max_str_chars characters (the
  /// sandbox's max_obs_chars).
  const std::string& as_str() const { return str_; }
  /// Elements of a tuple/list, or the values of a dict (in insertion order).
  const std::vector<PyValue>& items() const { return items_; }
  /// Keys of a dict, parallel to items().
  const std::vector<PyValue>& keys() const { return keys_; }
  /// Value of a dict entry whose key is the str `key`; nullptr if absent or not a dict.
  const PyValue* find(std::string_view key) const;

  /// Python type name for subclasses of the builtin kinds and for kOther (e.g. "numpy.float64",
  /// "collections.OrderedDict"); empty for exact builtins.
  const std::string& subtype() const { return type_; }
  /// The type as a person would name it: subtype() if set, else "NoneType", "bool", "int", "str", ...
  std::string type_label() const;
  /// True if content was dropped (string characters or container elements) to respect the caps, by the
  /// child or by the host.
  bool cut() const { return cut_; }
  /// A short Python-like rendering for error messages (strings quoted, at most `max_chars` chars).
  std::string repr(size_t max_chars = 80) const;

 private:
  struct Decoding;
  static std::optional<PyValue> decode(const nlohmann::json& wire, int depth, Decoding* d, std::string* error);

  Kind kind_ = Kind::kNone;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string big_;               // decimal digits of an int outside int64
  bool big_unprintable_ = false;  // an int too long to print (over ~3900 digits)
  std::string str_;
  std::string type_;
  bool cut_ = false;
  std::vector<PyValue> items_;
  std::vector<PyValue> keys_;
};

}  // namespace spade::envsandbox
