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

/// How long a reader polls without blocking before it sleeps, adapted per channel. A sleeping reader
/// is woken by an inter-processor interrupt, which costs tens of microseconds on virtual machines: a
/// socket ping-pong between two processes on the 2-vCPU VMs measured here took 43-63 us per round
/// trip blocking and 7-9 us with a 50 us spin. But when every core is busy the spin only takes CPU
/// from the peer it waits for (the same ping-pong with two busy loops running: 20-36 us blocking,
/// 168-189 us spinning). So: spin up to max_us while replies keep arriving within the spin; after a
/// wait that outlasted it (no free core, or a slow call), block, and try one spin again every
/// kProbeEvery waits (measured: 20-27 us under the busy loops, 8-15 us idle). Not thread-safe: one per
/// channel, used by whoever serialises that channel's reads.
class SpinBudget {
 public:
  static constexpr int kProbeEvery = 64;
  /// `max_us` <= 0 disables spinning.
  explicit SpinBudget(int max_us = 0) : max_us_(max_us > 0 ? max_us : 0) {}
  /// Microseconds to spin in the next wait (0: block at once).
  int next() {
    if (max_us_ == 0) return 0;
    if (spinning_) return max_us_;
    if (++blocked_ < kProbeEvery) return 0;
    blocked_ = 0;
    return max_us_;
  }
  /// The outcome of a wait that was given next() > 0 microseconds.
  void record(bool arrived_while_spinning) { spinning_ = arrived_while_spinning; }
  bool spinning() const { return spinning_ && max_us_ > 0; }

 private:
  int max_us_;
  bool spinning_ = true;
  int blocked_ = 0;
};

/// Writes one frame. If `pass_fd` >= 0 it is sent alongside the first bytes with SCM_RIGHTS (the caller
/// keeps its own copy and closes it). On kError `*error` (if non-null) gets the errno text.
FrameStatus write_frame(int fd, std::string_view payload, Clock::time_point deadline, int pass_fd = -1,
                        std::string* error = nullptr);

/// Reads one frame of at most `max_bytes` payload bytes into `*payload`. File descriptors received with
/// SCM_RIGHTS are appended to `*fds` when non-null (and closed when null). Returns kTooLarge without
/// reading the payload if the announced length exceeds `max_bytes`. When the socket has SO_PASSCRED
/// set and `sender_pid` is non-null, it receives the sender's pid as seen from the reader's pid
/// namespace (SCM_CREDENTIALS; left unchanged when none arrived).
/// `spin` (optional): poll without blocking for up to spin->next() microseconds before blocking in
/// poll() (see SpinBudget).
FrameStatus read_frame(int fd, size_t max_bytes, Clock::time_point deadline, std::string* payload,
                       std::vector<int>* fds = nullptr, std::string* error = nullptr,
                       pid_t* sender_pid = nullptr, SpinBudget* spin = nullptr);

}  // namespace spade::envsandbox
