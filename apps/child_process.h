// A long-running helper process of the `spade` command: the duel watcher that `spade train` starts, the
// `spade serve` that the watcher starts for duel.serve. Started with posix_spawn (never fork: the
// parent may already run LibTorch threads, DESIGN.md "Contracts"), in its own process group, with
// stdin from /dev/null and stdout + stderr appended to a log file, which is also how the parent reads
// what it says (wait_for_line polls the file: no pipe can fill up and stall the child).
//
// Ownership: a ChildProcess owns its child; the destructor of one still running sends SIGTERM to its
// group, waits up to 10 s, then SIGKILLs it. Thread-safety: one thread uses an object.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace spade::apps {

class ChildProcess {
 public:
  /// Starts argv (argv[0] "" = this very executable, /proc/self/exe) with stdout and stderr appended
  /// to `log_path` (created when absent). Throws spade::Error naming the program when it cannot start.
  static ChildProcess start(std::vector<std::string> argv, const std::string& log_path);

  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  /// The first line of the log (from where it was when the child started) that begins with `prefix`,
  /// waiting up to timeout_s seconds. Throws spade::Error with the log's last lines when the child
  /// exits first or the time runs out.
  std::string wait_for_line(const std::string& prefix, double timeout_s);

  /// The exit status once the child has exited: its code, or 128 + signal; nullopt while it runs.
  std::optional<int> poll();
  /// Blocks until the child exits; returns poll()'s value.
  int wait();
  /// SIGTERM to the group, up to grace_s seconds for it to exit, then SIGKILL; returns its status.
  int terminate(double grace_s = 10.0);

  /// The log's last `lines` lines, for error messages.
  std::string log_tail(int lines = 20) const;

 private:
  ChildProcess(pid_t pid, std::string log_path, long long log_start)
      : pid_(pid), log_path_(std::move(log_path)), log_start_(log_start) {}
  pid_t pid_ = -1;
  std::string log_path_;
  long long log_start_ = 0;  // the log's size when the child started: its own output follows
  std::optional<int> status_;
};

}  // namespace spade::apps
