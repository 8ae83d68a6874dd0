#include "envsandbox/py_value.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/strings.h"
#include "envsandbox/protocol.h"

using nlohmann::json;

namespace spade::envsandbox {
namespace {

bool all_digits(const std::string& s) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// Cuts UTF-8 `s` to at most `max_chars` code points; true if anything was cut.
bool cut_to_chars(std::string* s, int64_t max_chars) {
  int64_t chars = 0;
  for (size_t i = 0; i < s->size(); ++i) {
    if ((static_cast<unsigned char>((*s)[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (chars == max_chars) {
      s->resize(i);
      return true;
    }
    ++chars;
  }
  return false;
}

std::optional<PyValue> bad(std::string* error, const std::string& what) {
  if (error) *error = what;
  return std::nullopt;
}

void append_quoted(std::string* out, const std::string& s) {
  out->push_back('\'');
  for (char c : s) {
    if (c == '\'' || c == '\\') out->push_back('\\');
    if (c == '\n') { *out += "\\n"; continue; }
    out->push_back(c);
  }
  out->push_back('\'');
}

}  // namespace

PyValue PyValue::str(std::string text) {
  PyValue v;
  v.kind_ = Kind::kStr;
  v.str_ = std::move(text);
  return v;
}

WireCaps WireCaps::with_max_str_chars(int64_t max_str_chars) {
  return WireCaps{max_str_chars, protocol::kMaxValueElements, protocol::kMaxValueDepth};
}

struct PyValue::Decoding {
  WireCaps caps;
  int64_t elements = 0;  // nodes decoded so far
};

std::optional<PyValue> PyValue::from_wire(const json& wire, const WireCaps& caps, std::string* error) {
  Decoding d{caps};
  return decode(wire, 0, &d, error);
}

std::optional<PyValue> PyValue::decode(const json& w, int depth, Decoding* d, std::string* error) {
  if (depth > d->caps.max_depth) return bad(error, "value nested deeper than the cap");
  ++d->elements;
  PyValue v;
  if (w.is_null()) return v;
  if (w.is_boolean()) {
    v.kind_ = Kind::kBool;
    v.bool_ = w.get<bool>();
    return v;
  }
  if (w.is_number_unsigned() && w.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return bad(error, "bare integer outside int64");
  if (w.is_number_integer()) {
    v.kind_ = Kind::kInt;
    v.int_ = w.get<int64_t>();
    return v;
  }
  if (w.is_string()) {
    v.kind_ = Kind::kStr;
    v.str_ = w.get<std::string>();
    v.cut_ = cut_to_chars(&v.str_, d->caps.max_str_chars);
    return v;
  }
  if (!w.is_object()) return bad(error, std::string("unexpected bare JSON ") + w.type_name());
  auto t = w.find("t");
  if (t == w.end() || !t->is_string()) return bad(error, "value object without a string 't'");
  const std::string tag = t->get<std::string>();
  if (auto type = w.find("type"); type != w.end()) {
    if (!type->is_string() || type->get_ref<const std::string&>().size() > 512) return bad(error, "bad 'type' field");
    v.type_ = type->get<std::string>();
  }
  if (auto cut = w.find("cut"); cut != w.end()) {
    if (!cut->is_boolean()) return bad(error, "bad 'cut' field");
    v.cut_ = cut->get<bool>();
  }
  auto field = w.find("v");
  bool has_v = field != w.end();
  if (tag == "none") return v;
  if (tag == "bool") {
    if (!has_v || !field->is_boolean()) return bad(error, "bool without a boolean 'v'");
    v.kind_ = Kind::kBool;
    v.bool_ = field->get<bool>();
  } else if (tag == "int") {
    v.kind_ = Kind::kInt;
    auto big = w.find("big");
    if (has_v && field->is_number_integer() && !(field->is_number_unsigned() && field->get<uint64_t>() > INT64_MAX)) {
      v.int_ = field->get<int64_t>();
    } else if (big != w.end() && big->is_string()) {
      v.big_ = big->get<std::string>();
      if (v.big_.size() > protocol::kMaxBigIntDigits) return bad(error, "int with more digits than the cap");
      if (v.big_.empty()) v.big_unprintable_ = true;
      else if (!all_digits(v.big_)) return bad(error, "int with a non-decimal 'big'");
      v.int_ = v.big_.empty() || v.big_[0] != '-' ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    } else {
      return bad(error, "int without an integer 'v' or a string 'big'");
    }
  } else if (tag == "float") {
    v.kind_ = Kind::kFloat;
    auto special = w.find("s");
    if (has_v && field->is_number()) {
      v.float_ = field->get<double>();
    } else if (special != w.end() && special->is_string()) {
      const std::string& s = special->get_ref<const std::string&>();
      if (s == "nan") v.float_ = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf") v.float_ = std::numeric_limits<double>::infinity();
      else if (s == "-inf") v.float_ = -std::numeric_limits<double>::infinity();
      else return bad(error, "float with an unknown special value");
    } else {
      return bad(error, "float without a numeric 'v' or a special 's'");
    }
  } else if (tag == "str") {
    if (!has_v || !field->is_string()) return bad(error, "str without a string 'v'");
    v.kind_ = Kind::kStr;
    v.str_ = field->get<std::string>();
    if (cut_to_chars(&v.str_, d->caps.max_str_chars)) v.cut_ = true;
  } else if (tag == "tuple" || tag == "list") {
    if (!has_v || !field->is_array()) return bad(error, tag + " without an array 'v'");
    v.kind_ = tag == "tuple" ? Kind::kTuple : Kind::kList;
    for (const json& item : *field) {
      if (d->elements >= d->caps.max_elements) {
        v.cut_ = true;
        break;
      }
      auto decoded = decode(item, depth + 1, d, error);
      if (!decoded) return std::nullopt;
      v.items_.push_back(std::move(*decoded));
    }
  } else if (tag == "dict") {
    auto keys = w.find("k");
    if (!has_v || keys == w.end() || !field->is_array() || !keys->is_array() || keys->size() != field->size())
      return bad(error, "dict without parallel arrays 'k' and 'v'");
    v.kind_ = Kind::kDict;
    for (size_t i = 0; i < field->size(); ++i) {
      if (d->elements >= d->caps.max_elements) {  // as the child checks (envd_value.cpp)
        v.cut_ = true;
        break;
      }
      auto key = decode((*keys)[i], depth + 1, d, error);
      if (!key) return std::nullopt;
      auto value = decode((*field)[i], depth + 1, d, error);
      if (!value) return std::nullopt;
      v.keys_.push_back(std::move(*key));
      v.items_.push_back(std::move(*value));
    }
  } else if (tag == "other") {
    if (v.type_.empty()) return bad(error, "'other' without a 'type'");
    v.kind_ = Kind::kOther;
  } else {
    return bad(error, "unknown value tag '" + truncate_utf8(tag, 40) + "'");
  }
  return v;
}

double PyValue::as_double() const {
  if (kind_ == Kind::kFloat) return float_;
  if (kind_ != Kind::kInt) return std::numeric_limits<double>::quiet_NaN();
  if (big_unprintable_) return int_ < 0 ? -HUGE_VAL : HUGE_VAL;
  if (!big_.empty()) return std::strtod(big_.c_str(), nullptr);
  return static_cast<double>(int_);
}

const PyValue* PyValue::find(std::string_view key) const {
  if (kind_ != Kind::kDict) return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i].is_str() && keys_[i].str_ == key) return &items_[i];
  return nullptr;
}

std::string PyValue::type_label() const {
  if (!type_.empty()) return type_;
  switch (kind_) {
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kStr: return "str";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kOther: return "object";
  }
  return "object";
}

std::string PyValue::repr(size_t max_chars) const {
  std::string out;
  switch (kind_) {
    case Kind::kNone: out = "None"; break;
    case Kind::kBool: out = bool_ ? "True" : "False"; break;
    case Kind::kInt: out = big_unprintable_ ? "<int too long to print>" : big_.empty() ? std::to_string(int_) : big_; break;
    case Kind::kFloat:
      if (std::isnan(float_)) out = "nan";
      else if (std::isinf(float_)) out = float_ > 0 ? "inf" : "-inf";
      else out = json(float_).dump();
      break;
    case Kind::kStr: append_quoted(&out, str_); break;
    case Kind::kTuple:
    case Kind::kList:
    case Kind::kDict: {
      bool dict = kind_ == Kind::kDict;
      out = dict ? "{" : kind_ == Kind::kTuple ? "(" : "[";
      for (size_t i = 0; i < items_.size() && out.size() < max_chars; ++i) {
        if (i) out += ", ";
        if (dict) out += keys_[i].repr(max_chars) + ": ";
        out += items_[i].repr(max_chars);
      }
      if (kind_ == Kind::kTuple && items_.size() == 1) out += ",";
      out += dict ? "}" : kind_ == Kind::kTuple ? ")" : "]";
      break;
    }
    case Kind::kOther: out = "<" + type_ + " object>"; break;
  }
  if (out.size() > max_chars) out = truncate_utf8(out, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return out;
}

}  // namespace spade::envsandbox
