#include "evaldual/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/error.h"

extern char** environ;

namespace spade::evaldual {
namespace {

// Keeps the first half and the last half of a stream, counting what is dropped in between.
class CappedBuffer {
 public:
  explicit CappedBuffer(size_t cap) : half_(cap / 2 == 0 ? 1 : cap / 2) {}
  void append(const char* p, size_t n) {
    total_ += n;
    size_t h = std::min(n, half_ - std::min(half_, head_.size()));
    head_.append(p, h);
    if (h < n) {
      tail_.append(p + h, n - h);
      if (tail_.size() > 2 * half_) tail_.erase(0, tail_.size() - half_);
    }
  }
  bool truncated() const { return total_ > head_.size() + std::min(tail_.size(), half_); }
  std::string str() const {
    if (!truncated()) return head_ + tail_;
    std::string t = tail_.size() > half_ ? tail_.substr(tail_.size() - half_) : tail_;
    size_t elided = total_ - head_.size() - t.size();
    return head_ + "\n[... " + std::to_string(elided) + " bytes elided ...]\n" + t;
  }

 private:
  size_t half_;
  size_t total_ = 0;
  std::string head_, tail_;
};

void set_nonblock_cloexec(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw Error("run_process: empty argv");
  int out_pipe[2], err_pipe[2] = {-1, -1}, in_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(in_pipe) != 0) throw Error(std::string("run_process: pipe: ") + strerror(errno));
  if (!options.merge_stderr && pipe(err_pipe) != 0) throw Error(std::string("run_process: pipe: ") + strerror(errno));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, options.merge_stderr ? out_pipe[1] : err_pipe[1], 2);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    if (fd > 2) posix_spawn_file_actions_addclose(&fa, fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // own process group: the timeout kills all of it
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  // posix_spawn has no chdir action in glibc 2.36's public API before _np; use the _np variant.
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, options.cwd.c_str());

  auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (err_pipe[1] >= 0) close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    if (err_pipe[0] >= 0) close(err_pipe[0]);
    throw Error("run_process: cannot start '" + argv[0] + "': " + strerror(rc) +
                (options.cwd.empty() ? "" : " (cwd " + options.cwd + ")"));
  }
  set_nonblock_cloexec(out_pipe[0]);
  set_nonblock_cloexec(in_pipe[1]);
  if (err_pipe[0] >= 0) set_nonblock_cloexec(err_pipe[0]);
  signal(SIGPIPE, SIG_IGN);

  CappedBuffer out(options.output_cap_bytes), err(options.output_cap_bytes);
  int fds[3] = {out_pipe[0], err_pipe[0], in_pipe[1]};
  size_t in_off = 0;
  if (options.stdin_data.empty()) {
    close(fds[2]);
    fds[2] = -1;
  }
  ProcessResult result;
  bool exited = false;
  int status = 0;
  auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0));
  std::chrono::steady_clock::time_point exit_time{};
  char buf[65536];
  for (;;) {
    if (!exited) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        exit_time = std::chrono::steady_clock::now();
      }
    }
    bool pipes_open = fds[0] >= 0 || fds[1] >= 0;
    if (exited && !pipes_open) break;
    auto now = std::chrono::steady_clock::now();
    // A background grandchild may hold the pipe after the child exits: give it 200 ms, then stop.
    if (exited && now - exit_time > std::chrono::milliseconds(200)) break;
    if (options.timeout_s > 0 && now >= deadline && !exited) {
      kill(-pid, SIGKILL);
      result.timed_out = true;
      waitpid(pid, &status, 0);
      break;
    }
    pollfd p[3];
    int n = 0;
    int map[3];
    for (int i = 0; i < 3; ++i) {
      if (fds[i] < 0) continue;
      p[n] = {fds[i], static_cast<short>(i == 2 ? POLLOUT : POLLIN), 0};
      map[n++] = i;
    }
    int wait_ms = 50;
    if (n == 0) {
      usleep(10000);
      continue;
    }
    if (poll(p, n, wait_ms) < 0 && errno != EINTR) break;
    for (int k = 0; k < n; ++k) {
      int i = map[k];
      if (!p[k].revents) continue;
      if (i == 2) {
        ssize_t w = write(fds[2], options.stdin_data.data() + in_off, options.stdin_data.size() - in_off);
        if (w > 0) in_off += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) in_off = options.stdin_data.size();
        if (in_off >= options.stdin_data.size()) {
          close(fds[2]);
          fds[2] = -1;
        }
        continue;
      }
      ssize_t r = read(fds[i], buf, sizeof(buf));
      if (r > 0) {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  // Whatever is left in the group (background jobs) goes too: no leftover processes.
  kill(-pid, SIGKILL);
  for (int& fd : fds)
    if (fd >= 0) close(fd);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.timed_out) result.rc = -1;
  else if (WIFEXITED(status)) result.rc = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.rc = 128 + WTERMSIG(status);
  result.output = out.str();
  result.error_output = err.str();
  result.output_truncated = out.truncated() || err.truncated();
  return result;
}

}  // namespace spade::evaldual
