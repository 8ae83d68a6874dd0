#include "envsandbox/frame.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace spade::envsandbox {
namespace {

// Milliseconds left until `deadline` for poll(): -1 for no deadline, 0 once expired.
int poll_timeout_ms(Clock::time_point deadline) {
  if (deadline == no_deadline()) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left) + 1;
}

// Waits until `fd` is ready for `events`; kOk when ready (or hung up: the next I/O call reports it).
// First polls without blocking for up to `spin_us` microseconds (SpinBudget), then blocks in poll();
// `*spun` (when non-null) tells whether it became ready while spinning.
FrameStatus wait_ready(int fd, short events, Clock::time_point deadline, int spin_us, std::string* error,
                       bool* spun = nullptr) {
  if (spun != nullptr) *spun = false;
  if (spin_us > 0) {
    auto spin_until = Clock::now() + std::chrono::microseconds(spin_us);
    for (;;) {
      pollfd p{fd, events, 0};
      int n = poll(&p, 1, 0);
      if (n > 0) {
        if (spun != nullptr) *spun = true;
        return FrameStatus::kOk;
      }
      if (n < 0 && errno != EINTR) break;  // the blocking poll below reports it
      auto now = Clock::now();
      if (now >= spin_until || now >= deadline) break;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  for (;;) {
    pollfd p{fd, events, 0};
    int timeout = poll_timeout_ms(deadline);
    int n = poll(&p, 1, timeout);
    if (n > 0) return FrameStatus::kOk;
    if (n == 0) {
      if (timeout == 0 || Clock::now() >= deadline) return FrameStatus::kTimeout;
      continue;
    }
    if (errno == EINTR) continue;
    if (error) *error = std::string("poll: ") + std::strerror(errno);
    return FrameStatus::kError;
  }
}

void keep_or_close_fds(msghdr* msg, std::vector<int>* fds, pid_t* sender_pid) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
      if (sender_pid != nullptr && cred.pid > 0) *sender_pid = cred.pid;
      continue;
    }
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fds) fds->push_back(fd); else close(fd);
    }
  }
}

// Reads exactly `size` bytes into `buf`, collecting passed descriptors. Tries the socket first and
// waits (spinning as `spin` allows, then blocking) only when nothing is there yet.
FrameStatus read_exact(int fd, char* buf, size_t size, Clock::time_point deadline, SpinBudget* spin,
                       std::vector<int>* fds, std::string* error, pid_t* sender_pid) {
  size_t got = 0;
  while (got < size) {
    iovec iov{buf + got, size - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4) + CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        int spin_us = spin != nullptr ? spin->next() : 0;
        bool spun = false;
        FrameStatus s = wait_ready(fd, POLLIN, deadline, spin_us, error, &spun);
        if (spin_us > 0 && s == FrameStatus::kOk) spin->record(spun);
        if (s != FrameStatus::kOk) return s;
        continue;
      }
      if (errno == ECONNRESET) return FrameStatus::kEof;
      if (error) *error = std::string("recvmsg: ") + std::strerror(errno);
      return FrameStatus::kError;
    }
    keep_or_close_fds(&msg, fds, sender_pid);
    if (n == 0) return FrameStatus::kEof;
    got += static_cast<size_t>(n);
  }
  return FrameStatus::kOk;
}

}  // namespace

Clock::time_point deadline_after(double seconds) {
  if (!(seconds > 0)) return Clock::now();
  if (seconds > 1e7) return no_deadline();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

const char* frame_status_name(FrameStatus status) {
  switch (status) {
    case FrameStatus::kOk: return "ok";
    case FrameStatus::kEof: return "eof";
    case FrameStatus::kTimeout: return "timeout";
    case FrameStatus::kTooLarge: return "too_large";
    case FrameStatus::kError: return "error";
  }
  return "error";
}

FrameStatus write_frame(int fd, std::string_view payload, Clock::time_point deadline, int pass_fd,
                        std::string* error) {
  if (payload.size() > UINT32_MAX) {
    if (error) *error = "frame payload over 4 GiB";
    return FrameStatus::kTooLarge;
  }
  uint32_t len = static_cast<uint32_t>(payload.size());
  std::string buf(4 + payload.size(), '\0');
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  std::memcpy(buf.data() + 4, payload.data(), payload.size());
  size_t sent = 0;
  while (sent < buf.size()) {
    iovec iov{buf.data() + sent, buf.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (pass_fd >= 0 && sent == 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        FrameStatus s = wait_ready(fd, POLLOUT, deadline, 0, error);
        if (s != FrameStatus::kOk) return s;
        continue;
      }
      if (errno == EPIPE || errno == ECONNRESET) return FrameStatus::kEof;
      if (error) *error = std::string("sendmsg: ") + std::strerror(errno);
      return FrameStatus::kError;
    }
    sent += static_cast<size_t>(n);
  }
  return FrameStatus::kOk;
}

FrameStatus read_frame(int fd, size_t max_bytes, Clock::time_point deadline, std::string* payload,
                       std::vector<int>* fds, std::string* error, pid_t* sender_pid, SpinBudget* spin) {
  unsigned char header[4];
  FrameStatus s = read_exact(fd, reinterpret_cast<char*>(header), 4, deadline, spin, fds, error, sender_pid);
  if (s != FrameStatus::kOk) return s;
  uint32_t len = static_cast<uint32_t>(header[0]) | (static_cast<uint32_t>(header[1]) << 8) |
                 (static_cast<uint32_t>(header[2]) << 16) | (static_cast<uint32_t>(header[3]) << 24);
  if (len > max_bytes) {
    if (error) *error = "frame of " + std::to_string(len) + " bytes over the cap of " + std::to_string(max_bytes);
    return FrameStatus::kTooLarge;
  }
  payload->assign(len, '\0');
  return read_exact(fd, payload->data(), len, deadline, spin, fds, error, sender_pid);
}

}  // namespace spade::envsandbox
