// Length-prefixed frames over a stream socket: a u32 little-endian payload length, then the payload
// (UTF-8 JSON in this project). Used by the host library and by spade-envd on both ends of every channel.
//
// Every read is bounded by a byte cap and a deadline, so a peer that stalls, floods or lies about the
// length cannot block or exhaust the reader. Writes use MSG_NOSIGNAL: a dead peer yields an error, never
// SIGPIPE in the writer.
//
// Thread-safety: stateless; concurrent calls on the same fd must be serialised by the caller.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace spade::envsandbox {

using Clock = std::chrono::steady_clock;

/// A deadline that never expires (used where the peer is trusted, e.g. the zygote reading its host).
inline Clock::time_point no_deadline() { return Clock::time_point::max(); }

/// Deadline `seconds` from now; non-positive values give an already expired deadline.
Clock::time_point deadline_after(double seconds);

/// Outcome of one frame read or write.
enum class FrameStatus {
  kOk,
  kEof,        // the peer closed the channel (before or inside a frame)
  kTimeout,    // the deadline passed
  kTooLarge,   // the announced length exceeds the reader's cap
  kError,      // any other I/O error (errno text in `error`)
};

/// Stable lower-case name of a status ("ok", "eof", "timeout", "too_large", "error").
const char* frame_status_name(FrameStatus status);

/// Writes one frame. If `pass_fd` >= 0 it is sent alongside the first bytes with SCM_RIGHTS (the caller
/// keeps its own copy and closes it). On kError `*error` (if non-null) gets the errno text.
FrameStatus write_frame(int fd, std::string_view payload, Clock::time_point deadline, int pass_fd = -1,
                        std::string* error = nullptr);

/// Reads one frame of at most `max_bytes` payload bytes into `*payload`. File descriptors received with
/// SCM_RIGHTS are appended to `*fds` when non-null (and closed when null). Returns kTooLarge without
/// reading the payload if the announced length exceeds `max_bytes`. When the socket has SO_PASSCRED
/// set and `sender_pid` is non-null, it receives the sender's pid as seen from the reader's pid
/// namespace (SCM_CREDENTIALS; left unchanged when none arrived).
FrameStatus read_frame(int fd, size_t max_bytes, Clock::time_point deadline, std::string* payload,
                       std::vector<int>* fds = nullptr, std::string* error = nullptr,
                       pid_t* sender_pid = nullptr);

}  // namespace spade::envsandbox
