#include "trainer/tb_writer.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace spade::trainer {

namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protobuf wire format: varints, tags (field << 3 | wire type), fixed little-endian 32/64-bit.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_tag(std::string& out, int field, int wire) { put_varint(out, static_cast<uint64_t>(field << 3 | wire)); }
template <class T>
void put_fixed(std::string& out, T v) {  // x86-64 and aarch64 are little-endian, as the format
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  const auto& t = crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = t[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::map<std::string, double>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    if (!std::isfinite(value)) continue;
    std::string v;
    put_bytes(v, 1, tag);                         // Value.tag
    put_tag(v, 2, 5);                             // Value.simple_value (float, fixed32)
    put_fixed<float>(v, static_cast<float>(value));
    put_bytes(summary, 1, v);                     // Summary.value
  }
  std::string event;
  put_tag(event, 1, 1);                           // Event.wall_time (double, fixed64)
  put_fixed<double>(event, wall_time);
  put_tag(event, 2, 0);                           // Event.step (int64, varint)
  put_varint(event, static_cast<uint64_t>(step));
  put_bytes(event, 5, summary);                   // Event.summary
  return event;
}

std::string encode_file_version_event(double wall_time) {
  std::string event;
  put_tag(event, 1, 1);
  put_fixed<double>(event, wall_time);
  put_bytes(event, 3, "brain.Event:2");           // Event.file_version
  return event;
}

std::string frame_tfrecord(const std::string& data) {
  std::string out;
  const uint64_t len = data.size();
  put_fixed<uint64_t>(out, len);
  put_fixed<uint32_t>(out, masked_crc32c(&len, sizeof len));
  out += data;
  put_fixed<uint32_t>(out, masked_crc32c(data.data(), data.size()));
  return out;
}

TbWriter::TbWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host +
          "." + std::to_string(getpid());
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) throw Error("tensorboard: cannot create " + path_ + ": " + std::strerror(errno));
  write(encode_file_version_event(now_seconds()));
}

TbWriter::~TbWriter() {
  if (file_) std::fclose(file_);
}

void TbWriter::add_scalars(int64_t step, const std::map<std::string, double>& scalars, double wall_time) {
  write(encode_scalar_event(wall_time >= 0 ? wall_time : now_seconds(), step, scalars));
}

void TbWriter::write(const std::string& data) {
  const std::string rec = frame_tfrecord(data);
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size() || std::fflush(file_) != 0)
    throw Error("tensorboard: cannot write " + path_ + ": " + std::strerror(errno));
}

}  // namespace spade::trainer
