// Atomic file output: write to a temporary sibling, fsync, rename over the target.
// A reader never sees a half-written file; a crash leaves either the old or the new content.
// Thread-safe for distinct target paths.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace spade {

/// Writes `data` to `path` atomically (temp file in the same directory + fsync + rename(2)).
/// Creates missing parent directories. Throws spade::Error naming the path on any I/O failure.
void write_file_atomic(const std::string& path, std::string_view data);

/// Reads a whole file. Throws spade::Error naming the path if it cannot be opened or read.
std::string read_file(const std::string& path);

/// Reads a whole file of at most `max_bytes` bytes: reading stops with a spade::Error naming the path
/// and the limit as soon as more arrive (so a path to /dev/zero or a runaway pipe fails instead of
/// hanging or exhausting memory). Other errors as read_file(path).
std::string read_file(const std::string& path, uint64_t max_bytes);

/// Appends one line (a '\n' is added) to `path` and flushes; used for metrics.jsonl.
/// Throws spade::Error on failure.
void append_line(const std::string& path, std::string_view line);

/// Renames directory `tmp_dir` to `final_dir`, replacing an existing `final_dir` (removed first).
/// Used to publish checkpoint directories atomically. Throws spade::Error on failure.
void publish_directory(const std::string& tmp_dir, const std::string& final_dir);

}  // namespace spade
