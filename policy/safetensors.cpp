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

// Largest header the readers accept (the reference implementation's MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeader = 100'000'000ULL;

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
  if (size == 0) {  // mmap refuses a length of 0
    ::close(fd);
    parse_safetensors_layout(nullptr, 0, path);  // throws the header_length error
  }
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw spade::Error(path + ": mmap failed: " + std::strerror(errno));
  f->map_ = m;
  f->map_size_ = size;
  const auto* bytes = static_cast<const uint8_t*>(m);

  SafetensorsLayout layout = parse_safetensors_layout(bytes, size, path);
  f->data_start_ = layout.data_start;
  f->entries_ = std::move(layout.tensors);
  f->metadata_ = std::move(layout.metadata);
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
  h.append((8 - h.size() % 8) % 8, ' ');  // data region starts 8-byte aligned; spaces are the only padding
  const uint64_t n = h.size();
  if (n > kMaxHeader)
    throw spade::Error(path + ": the header would be " + std::to_string(n) +
                       " bytes, over the 100,000,000-byte limit of safetensors readers; write fewer tensors per file");

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
