// The safetensors layout check: the 8-byte length prefix, the JSON header and the tensors' byte ranges
// of a whole file in memory, validated as Hugging Face's reference implementation does (the safetensors
// crate, tensor.rs: read_metadata, Metadata::validate; format description in its README). No torch:
// SafetensorsFile (safetensors.h) maps the file, calls this, then makes tensors.
//
// Rules, each a named error (the rule id in brackets ends the message; the message names the file, the
// tensor or key, what is wrong and what the rule asks):
//   header_length     the file holds the 8-byte little-endian length N and N header bytes after it;
//                     N <= 100,000,000 (the crate's MAX_HEADER_SIZE)
//   header_start      the header begins with '{' (the format: "MUST begin with a { character")
//   header_json       the header is one JSON object (UTF-8)
//   header_padding    after the object only spaces (0x20); a NUL or anything else is an error
//   duplicate_key     no key twice in one object (JSON parsers differ on which one wins)
//   metadata          "__metadata__", when present, is an object of string values; it never names a tensor
//   tensor_entry      every other key is a tensor: an object with "dtype", "shape", "data_offsets"
//   dtype             dtype is one of F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (those LibTorch holds)
//   shape             shape is an array of non-negative JSON integers (not floats, not strings), each
//                     within int64
//   data_offsets      data_offsets is [begin, end], two non-negative JSON integers, begin <= end
//   size_overflow     the element count x dtype size fits in 64 bits
//   size_mismatch     end - begin == element count x dtype size
//   tiling            the byte ranges sorted by (begin, end) tile the data region: the first starts at
//                     0, each starts where the previous ended (no gap, no overlap) and the last ends at
//                     the end of the file (no trailing bytes, nothing missing)
// Thread-safety: pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spade::policy {

/// One tensor's header entry.
struct SafetensorsEntry {
  std::string dtype;            // "F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data region
};

/// A validated layout: where the data region starts (8 + N) and what the header says.
struct SafetensorsLayout {
  uint64_t data_start = 0;
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
};

/// Bytes per element of a safetensors dtype name; 0 for a name this reader does not support.
uint64_t safetensors_dtype_bytes(const std::string& dtype);

/// Validates `size` bytes holding a whole safetensors file (read from `path`, named in errors) against
/// every rule above and returns its layout. Throws spade::Error "PATH: <tensor 'NAME' | key 'KEY' |
/// header>: <what is wrong> ... [rule]" for the first rule broken.
SafetensorsLayout parse_safetensors_layout(const uint8_t* bytes, uint64_t size, const std::string& path);

}  // namespace spade::policy
