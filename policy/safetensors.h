// safetensors reading and writing (format: https://github.com/huggingface/safetensors, trainer-anchors §6):
//   u64 little-endian header length N | N bytes of JSON {name: {dtype, shape, data_offsets: [b, e]},
//   "__metadata__": {str: str}?} padded with spaces | data region (offsets relative to its start).
// Reading memory-maps the file and validates it as the reference implementation does, every rule a
// named error (policy/safetensors_header.h lists them). Writing produces files that pass every rule.
// Thread safety: a SafetensorsFile is immutable after open(); concurrent get() calls are safe.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/safetensors_header.h"

namespace spade::policy {

/// A memory-mapped, validated safetensors file.
class SafetensorsFile {
 public:
  /// Maps and validates `path` (parse_safetensors_layout: header length, JSON object padded with
  /// spaces only, no duplicate keys, __metadata__ a string map, integer shapes and offsets, sizes
  /// without overflow, offsets tiling the data region). Throws spade::Error naming the file, the
  /// tensor or key and the rule broken, or when the file is missing or cannot be mapped.
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  /// Tensor names in header order sorted by name.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  const SafetensorsEntry& entry(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// CPU tensor for `name` with the file's dtype and shape. Zero-copy: a read-only-by-convention view
  /// of the mapping (copy-on-write private mapping, so writes never reach the file), which keeps the
  /// mapping alive; a misaligned range is copied instead. Throws spade::Error for an unknown name.
  at::Tensor get(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  uint64_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
  std::weak_ptr<SafetensorsFile> self_;
};

/// Reads every tensor of a file (views as in SafetensorsFile::get). Errors as SafetensorsFile::open.
std::map<std::string, at::Tensor> read_safetensors(const std::string& path);

/// One tensor of a file being written: name, stored dtype and shape, known before any of the data.
struct SafetensorsTensorSpec {
  std::string name;
  c10::ScalarType dtype;
  std::vector<int64_t> shape;
};

/// Writes a safetensors file tensor by tensor, for weights that arrive one at a time (ZeRO-3 gathers
/// them unit by unit; trainer/parameter_shards.h) or that should not all be converted at once. The
/// layout is fixed at construction from the specs: names sorted, data in that order from offset 0
/// without gaps, header padded with spaces to a multiple of 8 bytes, "__metadata__" = metadata, so the
/// file passes every rule of parse_safetensors_layout and equals write_safetensors' byte for byte.
/// Tensors may then be written in any order, each once, at its offset; write() converts one tensor to
/// CPU and the spec's dtype and holds nothing after it returns. The data go to `path`.tmp, renamed to
/// `path` by commit(); a writer destroyed uncommitted removes `path`.tmp, so readers never see a
/// partial file. Not thread-safe.
class SafetensorsWriter {
 public:
  /// Creates `path`.tmp with its header. Throws spade::Error on I/O failure, an unsupported dtype
  /// (naming the tensor), a duplicate name, the name "__metadata__", or a header over the readers'
  /// 100,000,000-byte limit.
  SafetensorsWriter(std::string path, std::vector<SafetensorsTensorSpec> tensors,
                    const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  /// Writes `value` (any device and dtype: copied to CPU, cast to the spec's dtype) as `name`. Throws
  /// spade::Error naming the file and tensor for an unknown name, a second write, a shape other than
  /// the spec's, an undefined tensor, or an I/O failure (disk full).
  void write(const std::string& name, const at::Tensor& value);
  /// Publishes the file (rename). Throws spade::Error naming the first tensor never written.
  void commit();
  /// Bytes of tensor data (the data region's size).
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  struct Slot {
    SafetensorsTensorSpec spec;
    uint64_t offset = 0, bytes = 0;
    bool written = false;
  };
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t data_start_ = 0, data_bytes_ = 0;
  std::vector<Slot> slots_;  // by name
  std::map<std::string, size_t> index_;
  bool committed_ = false;
  void write_at(const void* data, uint64_t bytes, uint64_t offset, const std::string& what);
};

/// Writes `tensors` (any device; made contiguous and copied to CPU) to `path` in their own dtypes: a
/// SafetensorsWriter given every tensor. Throws spade::Error as SafetensorsWriter does, and for an
/// undefined tensor.
void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

/// "F32" etc. <-> at::ScalarType. Throw spade::Error for unsupported names/types.
c10::ScalarType safetensors_dtype(const std::string& name);
std::string safetensors_dtype_name(c10::ScalarType type);

}  // namespace spade::policy
