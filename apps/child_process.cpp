#include "apps/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace spade::apps {

namespace {

std::string self_exe() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw Error("cannot read /proc/self/exe");
  exe[n] = '\0';
  return exe;
}

int status_of(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw); }

}  // namespace

ChildProcess ChildProcess::start(std::vector<std::string> argv, const std::string& log_path) {
  if (argv.empty()) throw Error("ChildProcess::start: no program");
  if (argv[0].empty()) argv[0] = self_exe();
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw Error(log_path + ": cannot open for the log of " + argv[0] + ": " + std::strerror(errno));
  struct stat st {};
  fstat(log, &st);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log, 1);
  posix_spawn_file_actions_adddup2(&fa, log, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(log);
  if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return ChildProcess(pid, log_path, static_cast<long long>(st.st_size));
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_), log_path_(std::move(o.log_path_)), log_start_(o.log_start_), status_(o.status_) {
  o.pid_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) terminate();
}

std::optional<int> ChildProcess::poll() {
  if (status_ || pid_ <= 0) return status_;
  int raw = 0;
  if (waitpid(pid_, &raw, WNOHANG) == pid_) status_ = status_of(raw);
  return status_;
}

int ChildProcess::wait() {
  while (!status_) {
    int raw = 0;
    const pid_t r = waitpid(pid_, &raw, 0);
    if (r == pid_) status_ = status_of(raw);
    else if (r < 0 && errno != EINTR) status_ = 255;
  }
  return *status_;
}

int ChildProcess::terminate(double grace_s) {
  if (poll()) return *status_;
  kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!poll() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!status_) kill(-pid_, SIGKILL);
  return wait();
}

std::string ChildProcess::log_tail(int lines) const {
  std::ifstream in(log_path_);
  in.seekg(log_start_);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

std::string ChildProcess::wait_for_line(const std::string& prefix, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const bool exited = poll().has_value();  // read the log after the check: nothing written is missed
    std::ifstream in(log_path_);
    in.seekg(log_start_);
    for (std::string l; std::getline(in, l);)
      if (l.rfind(prefix, 0) == 0 && !in.eof()) return l;  // a whole line (ended by '\n')
    if (exited)
      throw Error(log_path_ + ": the process exited (status " + std::to_string(*status_) + ") before printing \"" +
                  prefix + "...\"; its last lines:\n" + log_tail());
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(log_path_ + ": no line \"" + prefix + "...\" within " + std::to_string(timeout_s) +
                  " s; its last lines:\n" + log_tail());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace spade::apps
