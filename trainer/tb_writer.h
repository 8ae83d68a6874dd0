// TensorBoard event files (issue 5, "Logs and data") without TensorFlow or protobuf: the records are
// framed as TFRecord (u64 little-endian length, masked CRC32C of the length, data, masked CRC32C of
// the data) and each record is an Event protobuf encoded by hand:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// (tensorflow/core/util/event.proto, summary.proto). The first record carries file_version
// "brain.Event:2", as TensorBoard's own writers do. Not thread-safe: one writer per file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace spade::trainer {

/// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) of `n` bytes, as in TFRecord.
uint32_t crc32c(const void* data, size_t n);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t n);

/// One scalar-summary Event, encoded (exposed for tests).
std::string encode_scalar_event(double wall_time, int64_t step, const std::map<std::string, double>& scalars);
/// The file_version Event that opens every events file.
std::string encode_file_version_event(double wall_time);
/// `data` framed as one TFRecord.
std::string frame_tfrecord(const std::string& data);

class TbWriter {
 public:
  /// Creates `dir` and a new file dir/events.out.tfevents.<unix seconds>.<host>.<pid> beginning with
  /// the file_version record. A resumed run opens a new file; TensorBoard merges the files of a
  /// directory. Throws spade::Error naming the path when the file cannot be created.
  explicit TbWriter(const std::string& dir);
  ~TbWriter();
  TbWriter(const TbWriter&) = delete;
  TbWriter& operator=(const TbWriter&) = delete;

  /// Appends one Event with a scalar per metric (non-finite values are skipped) and flushes, so the
  /// file is readable while training runs; a record torn by a kill is ignored by readers.
  /// `wall_time` in seconds since the Unix epoch (default: now). Throws spade::Error on write failure.
  void add_scalars(int64_t step, const std::map<std::string, double>& scalars, double wall_time = -1);

  const std::string& path() const { return path_; }

 private:
  void write(const std::string& data);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace spade::trainer
