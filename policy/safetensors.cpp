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

SafetensorsWriter::SafetensorsWriter(std::string path, std::vector<SafetensorsTensorSpec> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tmp_(path_ + ".tmp") {
  if (!host_is_little_endian()) throw spade::Error(path_ + ": safetensors I/O needs a little-endian host");
  std::sort(tensors.begin(), tensors.end(),
            [](const SafetensorsTensorSpec& a, const SafetensorsTensorSpec& b) { return a.name < b.name; });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (SafetensorsTensorSpec& t : tensors) {
    if (t.name == "__metadata__") throw spade::Error(path_ + ": '__metadata__' is not a valid tensor name");
    if (index_.count(t.name)) throw spade::Error(path_ + ": tensor '" + t.name + "' is listed twice");
    std::string dtype;
    try {
      dtype = safetensors_dtype_name(t.dtype);
    } catch (const spade::Error& e) {
      throw spade::Error(path_ + ": tensor '" + t.name + "': " + e.what());
    }
    uint64_t numel = 1;
    for (const int64_t d : t.shape) {
      if (d < 0) throw spade::Error(path_ + ": tensor '" + t.name + "' has a negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    Slot slot;
    slot.offset = data_bytes_;
    slot.bytes = numel * static_cast<uint64_t>(compat::element_size(t.dtype));
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {slot.offset, slot.offset + slot.bytes}}};
    data_bytes_ += slot.bytes;
    index_[t.name] = slots_.size();
    slot.spec = std::move(t);
    slots_.push_back(std::move(slot));
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data region starts 8-byte aligned; spaces are the only padding
  const uint64_t n = h.size();
  if (n > kMaxHeader)
    throw spade::Error(path_ + ": the header would be " + std::to_string(n) +
                       " bytes, over the 100,000,000-byte limit of safetensors readers; write fewer tensors per file");
  data_start_ = 8 + n;
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw spade::Error(tmp_ + ": cannot open for writing: " + std::strerror(errno));
  std::string head(reinterpret_cast<const char*>(&n), 8);
  head += h;
  try {
    write_at(head.data(), head.size(), 0, "the header");
  } catch (...) {  // no destructor runs for a constructor that throws
    ::close(fd_);
    std::remove(tmp_.c_str());
    throw;
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) std::remove(tmp_.c_str());
}

void SafetensorsWriter::write_at(const void* data, uint64_t bytes, uint64_t offset, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd_, p, std::min<uint64_t>(bytes, uint64_t{1} << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw spade::Error(tmp_ + ": write failed (disk full?) at " + what + ": " + std::strerror(errno));
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void SafetensorsWriter::write(const std::string& name, const at::Tensor& value) {
  const auto it = index_.find(name);
  if (it == index_.end()) throw spade::Error(path_ + ": tensor '" + name + "' is not one this file was planned with");
  Slot& slot = slots_[it->second];
  if (slot.written) throw spade::Error(path_ + ": tensor '" + name + "' written twice");
  if (!value.defined()) throw spade::Error(path_ + ": tensor '" + name + "' is undefined");
  if (value.sizes().vec() != slot.spec.shape)
    throw spade::Error(path_ + ": tensor '" + name + "' has shape " + c10::str(value.sizes()) + ", planned " +
                       c10::str(at::IntArrayRef(slot.spec.shape)));
  const at::Tensor t = value.detach().to(at::kCPU, slot.spec.dtype).contiguous();
  write_at(compat::const_data(t), slot.bytes, data_start_ + slot.offset, "tensor '" + name + "'");
  slot.written = true;
}

void SafetensorsWriter::commit() {
  if (committed_) return;
  for (const Slot& s : slots_)
    if (!s.written) throw spade::Error(path_ + ": tensor '" + s.spec.name + "' was never written");
  // Size the file exactly (a data region of zero-sized tensors only ends at the header).
  const bool sized = ::ftruncate(fd_, static_cast<off_t>(data_start_ + data_bytes_)) == 0;
  const int size_errno = errno;
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!sized || !closed)
    throw spade::Error(tmp_ + ": cannot finish the file: " + std::strerror(sized ? errno : size_errno));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw spade::Error(path_ + ": rename from " + tmp_ + " failed: " + std::strerror(errno));
  committed_ = true;
}

void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsTensorSpec> specs;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw spade::Error(path + ": tensor '" + name + "' is undefined");
    specs.push_back({name, t.scalar_type(), t.sizes().vec()});
  }
  SafetensorsWriter writer(path, std::move(specs), metadata);
  for (const auto& [name, t] : tensors) writer.write(name, t);
  writer.commit();
}

}  // namespace spade::policy
