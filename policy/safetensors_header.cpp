#include "policy/safetensors_header.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include "common/error.h"

namespace spade::policy {
namespace {

using nlohmann::json;

// The reference implementation's MAX_HEADER_SIZE (safetensors crate, tensor.rs): 100,000,000 bytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000ULL;

[[noreturn]] void fail(const std::string& path, const std::string& subject, const std::string& what,
                       const char* rule) {
  throw spade::Error(path + ": " + subject + ": " + what + " [" + rule + "]");
}

std::string tensor_subject(const std::string& name) { return "tensor '" + name + "'"; }

// "a string \"x\"", "a float 2.5", "an array [1,2]" ... (cut to a readable length).
std::string describe(const json& v) {
  if (v.is_null()) return "null";
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  std::string kind = v.is_number_float() ? "float" : v.is_number_integer() ? "integer" : v.type_name();
  const bool vowel = kind[0] == 'a' || kind[0] == 'i' || kind[0] == 'o';
  return std::string(vowel ? "an " : "a ") + kind + " " + text;
}

// Index one past the '}' closing the object that starts at text[0] == '{', or 0 when it never closes.
// Strings (with their escapes) are skipped, so braces inside names do not count; whether the text in
// between is valid JSON is left to the parser.
size_t object_end(const char* text, size_t n) {
  int64_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
  }
  return 0;
}

// Parses the header object, noting the first key that appears twice in one object (nlohmann keeps the
// last value silently; other parsers keep the first).
json parse_object(const char* text, size_t n, const std::string& path) {
  struct Frame {
    std::set<std::string> keys;
    std::string owner;  // the key whose value this object or array is ("" for the header itself)
    std::string last_key;
  };
  std::vector<Frame> frames;
  std::string dup_key, dup_owner;
  bool dup = false;
  auto cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames.push_back({{}, frames.empty() ? "" : frames.back().last_key, ""});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        if (!frames.empty()) {
          if (!frames.back().keys.insert(key).second && !dup) {
            dup = true;
            dup_key = key;
            dup_owner = frames.back().owner;
          }
          frames.back().last_key = key;
        }
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, text + n, cb);
  } catch (const json::exception& e) {
    fail(path, "header", std::string("not valid JSON: ") + e.what() +
                             "; the header must be one UTF-8 JSON object", "header_json");
  }
  if (dup) {
    if (dup_owner.empty())
      fail(path, "key '" + dup_key + "'", "appears twice in the header; each tensor name (and __metadata__) "
                                          "may appear once", "duplicate_key");
    fail(path, (dup_owner == "__metadata__" ? "key '__metadata__'" : tensor_subject(dup_owner)),
         "key '" + dup_key + "' appears twice; each key may appear once in an object", "duplicate_key");
  }
  return header;
}

// A non-negative JSON integer (not a float, not a string) at `what` of tensor `name`.
uint64_t non_negative_integer(const json& v, const std::string& path, const std::string& name,
                              const std::string& what, const char* rule) {
  if (!v.is_number_integer())
    fail(path, tensor_subject(name), what + " is " + describe(v) + "; expected a non-negative JSON integer", rule);
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
    fail(path, tensor_subject(name), what + " is negative (" + v.dump() + "); expected a non-negative integer", rule);
  return v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
}

SafetensorsEntry read_entry(const std::string& name, const json& e, const std::string& path) {
  const std::string who = tensor_subject(name);
  if (!e.is_object())
    fail(path, who, "the entry is " + describe(e) + "; expected an object {dtype, shape, data_offsets}",
         "tensor_entry");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key))
      fail(path, who, std::string("the entry has no \"") + key + "\"; every tensor needs dtype, shape and data_offsets",
           "tensor_entry");
  SafetensorsEntry entry;
  const json& dtype = e.at("dtype");
  if (!dtype.is_string()) fail(path, who, "dtype is " + describe(dtype) + "; expected a string such as \"F32\"", "dtype");
  entry.dtype = dtype.get<std::string>();
  if (safetensors_dtype_bytes(entry.dtype) == 0)
    fail(path, who, "unsupported safetensors dtype '" + entry.dtype + "' (supported: F32 BF16 F16 F64 I64 I32 I16 I8 U8 BOOL)",
         "dtype");

  const json& shape = e.at("shape");
  if (!shape.is_array()) fail(path, who, "shape is " + describe(shape) + "; expected an array of integers", "shape");
  for (size_t i = 0; i < shape.size(); ++i) {
    const uint64_t d = non_negative_integer(shape[i], path, name, "shape[" + std::to_string(i) + "]", "shape");
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(path, who, "shape[" + std::to_string(i) + "] = " + std::to_string(d) + " does not fit in int64", "shape");
    entry.shape.push_back(static_cast<int64_t>(d));
  }

  const json& off = e.at("data_offsets");
  if (!off.is_array() || off.size() != 2)
    fail(path, who, "data_offsets is " + describe(off) + "; expected [begin, end]", "data_offsets");
  entry.begin = non_negative_integer(off[0], path, name, "data_offsets[0]", "data_offsets");
  entry.end = non_negative_integer(off[1], path, name, "data_offsets[1]", "data_offsets");
  if (entry.end < entry.begin)
    fail(path, who, "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                        "] are inverted; begin <= end", "data_offsets");

  uint64_t numel = 1;
  for (int64_t d : entry.shape)
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
      fail(path, who, "the element count of shape " + shape.dump() + " overflows 64 bits", "size_overflow");
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, safetensors_dtype_bytes(entry.dtype), &nbytes))
    fail(path, who, std::to_string(numel) + " elements x " + std::to_string(safetensors_dtype_bytes(entry.dtype)) +
                        " bytes (" + entry.dtype + ") overflows 64 bits", "size_overflow");
  if (entry.end - entry.begin != nbytes)
    fail(path, who, "data_offsets span " + std::to_string(entry.end - entry.begin) + " bytes but " + entry.dtype +
                        " x shape " + shape.dump() + " needs " + std::to_string(nbytes), "size_mismatch");
  return entry;
}

std::map<std::string, std::string> read_metadata(const json& m, const std::string& path) {
  const std::string who = "key '__metadata__'";
  const std::string rule = "; __metadata__ is the reserved map of string keys to string values, never a tensor";
  if (!m.is_object()) fail(path, who, "its value is " + describe(m) + rule, "metadata");
  std::map<std::string, std::string> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it->is_string()) fail(path, who, "the value of '" + it.key() + "' is " + describe(*it) + rule, "metadata");
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

}  // namespace

uint64_t safetensors_dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64") return 8;
  if (d == "F32" || d == "I32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

SafetensorsLayout parse_safetensors_layout(const uint8_t* bytes, uint64_t size, const std::string& path) {
  if (size < 8)
    fail(path, "header", "truncated safetensors file (" + std::to_string(size) +
                             " bytes; the 8-byte little-endian header length is missing)", "header_length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian whatever the host
  if (n > kMaxHeaderBytes)
    fail(path, "header", "header length " + std::to_string(n) + " exceeds 100,000,000 bytes (the reference "
                         "implementation's limit); not a safetensors file?", "header_length");
  if (n > size - 8)
    fail(path, "header", "truncated safetensors file: header claims " + std::to_string(n) + " bytes but the file has only " +
                             std::to_string(size - 8) + " after the length", "header_length");
  const char* text = reinterpret_cast<const char*>(bytes + 8);
  if (n == 0 || text[0] != '{')
    fail(path, "header", n == 0 ? std::string("the header is empty; it must be a JSON object")
                                : "the header begins with byte " + std::to_string(static_cast<unsigned char>(text[0])) +
                                      ", not '{'; it must be a JSON object", "header_start");

  // The object, then only spaces up to the end of the header.
  const size_t end = object_end(text, n);
  const json header = parse_object(text, end == 0 ? n : end, path);
  for (size_t i = end; i < n; ++i)
    if (text[i] != ' ')
      fail(path, "header", std::string(text[i] == '\0' ? "a NUL byte" : "byte " + std::to_string(static_cast<unsigned char>(text[i]))) +
                               " at header offset " + std::to_string(i) + " (file offset " + std::to_string(8 + i) +
                               ") after the JSON object ends at offset " + std::to_string(end) +
                               "; the header may be padded with spaces (0x20) only", "header_padding");

  SafetensorsLayout layout;
  layout.data_start = 8 + n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      layout.metadata = read_metadata(*it, path);
      continue;
    }
    layout.tensors[it.key()] = read_entry(it.key(), *it, path);
  }

  // Tiling: sorted by (begin, end) as the reference sorts, each range starts where the previous ended.
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;
  for (const auto& [name, e] : layout.tensors) ranges.emplace_back(e.begin, e.end, name);
  std::sort(ranges.begin(), ranges.end());
  const char* tiling = "; sorted by offset, the tensors' byte ranges must cover the data region from 0 to its end "
                       "exactly once";
  uint64_t covered = 0;
  std::string prev;
  bool first = true;
  for (const auto& [begin, end_byte, name] : ranges) {
    if (begin != covered) {
      const std::string span = "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end_byte) + "]";
      if (first)
        fail(path, tensor_subject(name), span + " leave a gap of " + std::to_string(begin) +
                                             " bytes at the start of the data region" + tiling, "tiling");
      if (begin > covered)
        fail(path, tensor_subject(name), span + " leave a gap of " + std::to_string(begin - covered) +
                                             " bytes after tensor '" + prev + "' (which ends at " +
                                             std::to_string(covered) + ")" + tiling, "tiling");
      fail(path, tensor_subject(name), span + " overlap tensor '" + prev + "' (which ends at " +
                                           std::to_string(covered) + ")" + tiling, "tiling");
    }
    covered = end_byte;
    prev = name;
    first = false;
  }
  const uint64_t data_size = size - layout.data_start;
  if (covered > data_size)
    fail(path, tensor_subject(prev), "data_offsets end " + std::to_string(covered) + " is beyond the data region (" +
                                         std::to_string(data_size) + " bytes): truncated file or bad offsets", "tiling");
  if (covered < data_size)
    fail(path, "header", std::to_string(data_size - covered) + " trailing bytes after " +
                             (ranges.empty() ? std::string("the header (no tensor covers them)")
                                           : "the last tensor '" + prev + "' (which ends at " + std::to_string(covered) + ")") +
                             " in a data region of " + std::to_string(data_size) + " bytes" + tiling, "tiling");
  return layout;
}

}  // namespace spade::policy
