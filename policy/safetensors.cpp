#include "policy/safetensors.h"

#include <ATen/Functions.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/error.h"
#include "policy/torch_compat.h"

namespace spade::policy {
namespace {

static_assert(sizeof(void*) == 8, "64-bit only");

bool host_is_little_endian() {
  const uint16_t one = 1;
  return *reinterpret_cast<const uint8_t*>(&one) == 1;
}

// Largest header accepted (the reference implementation uses 100 MB).
constexpr uint64_t kMaxHeader = 100ull << 20;

}  // namespace

c10::ScalarType safetensors_dtype(const std::string& n) {
  if (n == "F32") return c10::ScalarType::Float;
  if (n == "BF16") return c10::ScalarType::BFloat16;
  if (n == "F16") return c10::ScalarType::Half;
  if (n == "F64") return c10::ScalarType::Double;
  if (n == "I64") return c10::ScalarType::Long;
  if (n == "I32") return c10::ScalarType::Int;
  if (n == "I16") return c10::ScalarType::Short;
  if (n == "I8") return c10::ScalarType::Char;
  if (n == "U8") return c10::ScalarType::Byte;
  if (n == "BOOL") return c10::ScalarType::Bool;
  throw spade::Error("unsupported safetensors dtype '" + n + "' (supported: F32 BF16 F16 F64 I64 I32 I16 I8 U8 BOOL)");
}

std::string safetensors_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "F32";
    case c10::ScalarType::BFloat16: return "BF16";
    case c10::ScalarType::Half: return "F16";
    case c10::ScalarType::Double: return "F64";
    case c10::ScalarType::Long: return "I64";
    case c10::ScalarType::Int: return "I32";
    case c10::ScalarType::Short: return "I16";
    case c10::ScalarType::Char: return "I8";
    case c10::ScalarType::Byte: return "U8";
    case c10::ScalarType::Bool: return "BOOL";
    default: throw spade::Error(std::string("dtype ") + c10::toString(t) + " cannot be written to safetensors");
  }
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  if (!host_is_little_endian()) throw spade::Error(path + ": safetensors I/O needs a little-endian host");
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->self_ = f;
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw spade::Error(path + ": cannot open safetensors file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw spade::Error(path + ": cannot stat: " + std::strerror(errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw spade::Error(path + ": truncated safetensors file (" + std::to_string(size) +
                       " bytes; the 8-byte header length is missing)");
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw spade::Error(path + ": mmap failed: " + std::strerror(errno));
  f->map_ = m;
  f->map_size_ = size;
  const auto* bytes = static_cast<const uint8_t*>(m);

  uint64_t n = 0;
  std::memcpy(&n, bytes, 8);
  if (n > kMaxHeader) throw spade::Error(path + ": header length " + std::to_string(n) + " is implausible (> 100 MB); not a safetensors file?");
  if (8 + n > size)
    throw spade::Error(path + ": truncated safetensors file: header claims " + std::to_string(n) +
                       " bytes but the file has only " + std::to_string(size - 8) + " after the length");
  f->data_start_ = 8 + n;
  const uint64_t data_size = size - f->data_start_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(bytes + 8), reinterpret_cast<const char*>(bytes + 8 + n));
  } catch (const std::exception& e) {
    throw spade::Error(path + ": safetensors header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw spade::Error(path + ": safetensors header must be a JSON object");

  std::vector<std::pair<uint64_t, std::string>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (it->is_object())
        for (auto m2 = it->begin(); m2 != it->end(); ++m2)
          f->metadata_[m2.key()] = m2->is_string() ? m2->get<std::string>() : m2->dump();
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    const auto& e = *it;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      throw spade::Error(where + ": header entry needs dtype, shape and data_offsets");
    SafetensorsEntry entry;
    try {
      entry.dtype = e.at("dtype").get<std::string>();
      entry.shape = e.at("shape").get<std::vector<int64_t>>();
      auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2) throw spade::Error("data_offsets must have 2 elements");
      entry.begin = off[0];
      entry.end = off[1];
    } catch (const spade::Error& err) {
      throw spade::Error(where + ": " + err.what());
    } catch (const std::exception& err) {
      throw spade::Error(where + ": malformed header entry: " + err.what());
    }
    c10::ScalarType st2;
    try {
      st2 = safetensors_dtype(entry.dtype);
    } catch (const spade::Error& err) {
      throw spade::Error(where + ": " + err.what());
    }
    uint64_t numel = 1;
    for (int64_t s : entry.shape) {
      if (s < 0) throw spade::Error(where + ": negative dimension in shape");
      numel *= static_cast<uint64_t>(s);
    }
    const uint64_t nbytes = numel * static_cast<uint64_t>(compat::element_size(st2));
    if (entry.end < entry.begin)
      throw spade::Error(where + ": data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + "] are inverted");
    if (entry.end > data_size)
      throw spade::Error(where + ": data_offsets end " + std::to_string(entry.end) + " is beyond the data region (" +
                         std::to_string(data_size) + " bytes): truncated file or bad offsets");
    if (entry.end - entry.begin != nbytes)
      throw spade::Error(where + ": data_offsets span " + std::to_string(entry.end - entry.begin) + " bytes but " +
                         entry.dtype + " x shape needs " + std::to_string(nbytes));
    if (nbytes > 0) ranges.emplace_back(entry.begin, name);
    f->entries_[name] = entry;
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const auto& prev = f->entries_.at(ranges[i - 1].second);
    if (ranges[i].first < prev.end)
      throw spade::Error(path + ": tensors '" + ranges[i - 1].second + "' and '" + ranges[i].second + "' overlap");
  }
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_size_);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw spade::Error(path_ + ": no tensor named '" + name + "'");
  return it->second;
}

at::Tensor SafetensorsFile::get(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  const c10::ScalarType type = safetensors_dtype(e.dtype);
  auto opts = at::TensorOptions().dtype(type).device(at::kCPU);
  if (e.end == e.begin) return at::empty(e.shape, opts);
  uint8_t* p = static_cast<uint8_t*>(map_) + data_start_ + e.begin;
  const auto align = static_cast<uintptr_t>(compat::element_size(type));
  if (reinterpret_cast<uintptr_t>(p) % align != 0) {
    auto out = at::empty(e.shape, opts);
    std::memcpy(out.data_ptr(), p, e.end - e.begin);
    return out;
  }
  std::shared_ptr<const SafetensorsFile> keep = self_.lock();
  return at::from_blob(p, e.shape, [keep](void*) mutable { keep.reset(); }, opts);
}

std::map<std::string, at::Tensor> read_safetensors(const std::string& path) {
  auto f = SafetensorsFile::open(path);
  std::map<std::string, at::Tensor> out;
  for (const auto& n : f->names()) out[n] = f->get(n);
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  if (!host_is_little_endian()) throw spade::Error(path + ": safetensors I/O needs a little-endian host");
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  uint64_t offset = 0;
  for (const auto& kv : tensors) {  // std::map: sorted by name
    if (kv.first == "__metadata__") throw spade::Error(path + ": '__metadata__' is not a valid tensor name");
    if (!kv.second.defined()) throw spade::Error(path + ": tensor '" + kv.first + "' is undefined");
    std::string dtype;
    try {
      dtype = safetensors_dtype_name(kv.second.scalar_type());
    } catch (const spade::Error& e) {
      throw spade::Error(path + ": tensor '" + kv.first + "': " + e.what());
    }
    at::Tensor t = kv.second.detach().to(at::kCPU).contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[kv.first] = {{"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    data.push_back(t);
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data region starts 8-byte aligned
  const uint64_t n = h.size();

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw spade::Error(tmp + ": cannot open for writing");
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& t : data)
      out.write(static_cast<const char*>(compat::const_data(t)), static_cast<std::streamsize>(t.numel() * t.element_size()));
    out.flush();
    if (!out) throw spade::Error(tmp + ": write failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw spade::Error(path + ": rename from " + tmp + " failed: " + std::strerror(errno));
}

}  // namespace spade::policy
