#include "envsandbox/zygote_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "common/error.h"
#include "envsandbox/frame.h"
#include "envsandbox/isolation.h"
#include "envsandbox/protocol.h"
#include "envsandbox/remove_tree.h"

using nlohmann::json;

namespace spade::envsandbox::detail {
namespace {

constexpr double kControlTimeoutS = 10;  // the zygote answers control requests in microseconds

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

// A process-wide thread that lives until exit and does every posix_spawn of a zygote. bwrap's
// --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that created the process exits: spawning
// from the caller's thread would kill the pool when, e.g., a worker thread that built the EnvServer ends.
class SpawnerThread {
 public:
  static SpawnerThread& get() {
    static SpawnerThread* instance = new SpawnerThread();  // never destroyed: the thread outlives main
    return *instance;
  }
  // Runs `fn` on the spawner thread and waits for it.
  void run(const std::function<void()>& fn) {
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back([&] {
        fn();
        done.set_value();
      });
    }
    cv_.notify_one();
    finished.wait();
  }

 private:
  SpawnerThread() {
    std::thread([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return !tasks_.empty(); });
          task = std::move(tasks_.front());
          tasks_.pop_front();
        }
        task();
      }
    }).detach();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
};

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

}  // namespace

std::string locate_envd(const std::string& configured) {
  if (!configured.empty()) {
    if (executable(configured)) return configured;
    throw Error("spade-envd not found or not executable at SandboxOptions::envd_path = '" + configured +
                "'; build it with `cmake --build <build> --target spade-envd` or fix the path");
  }
  std::vector<std::string> tried;
  const char* env = std::getenv("SPADE_ENVD");
  if (env != nullptr && *env) {
    if (executable(env)) return env;
    tried.push_back(std::string("$SPADE_ENVD = ") + env);
  } else {
    tried.push_back("$SPADE_ENVD (unset)");
  }
  std::string next_to_exe = self_dir() + "/spade-envd";
  if (executable(next_to_exe)) return next_to_exe;
  tried.push_back(next_to_exe);
#ifdef SPADE_ENVD_BUILD_PATH
  if (executable(SPADE_ENVD_BUILD_PATH)) return SPADE_ENVD_BUILD_PATH;
  tried.push_back(SPADE_ENVD_BUILD_PATH);
#endif
  std::string list;
  for (const std::string& t : tried) list += "\n  " + t;
  throw Error("spade-envd (the environment sandbox server) was not found; looked at:" + list +
              "\nBuild it with `cmake --build <build> --target spade-envd`, then set SPADE_ENVD=<path> or "
              "SandboxOptions::envd_path, or install it next to this program.");
}

std::shared_ptr<ZygoteProcess> ZygoteProcess::start(const std::string& envd_path, double startup_timeout_s) {
  return start(std::vector<std::string>{envd_path}, startup_timeout_s, false);
}

std::shared_ptr<ZygoteProcess> ZygoteProcess::start(const std::vector<std::string>& command, double startup_timeout_s,
                                                    bool private_tmp) {
  const std::string& envd_path = command.at(0);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(std::string("spade-envd: socketpair failed: ") + std::strerror(errno));
  int child_end = sv[1];
  if (child_end == protocol::kControlFd) {  // dup2 onto itself would keep FD_CLOEXEC set
    child_end = fcntl(sv[1], F_DUPFD_CLOEXEC, protocol::kControlFd + 1);
    close(sv[1]);
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, protocol::kControlFd);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);  // own process group: a terminal's Ctrl-C goes to the host only
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  // A minimal environment: programs must not see the host's variables (tokens, paths).
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpdir = std::string("TMPDIR=") + (tmp && *tmp ? tmp : "/tmp");
  std::vector<std::string> env_strings = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", tmpdir};
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = 0;
  SpawnerThread::get().run([&] { rc = posix_spawn(&pid, envd_path.c_str(), &actions, &attr, argv.data(), envp.data()); });
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(child_end);
  if (rc != 0) {
    close(sv[0]);
    throw Error("spade-envd: posix_spawn of '" + envd_path + "' failed: " + std::strerror(rc));
  }
  auto zygote = std::make_shared<ZygoteProcess>(pid, sv[0]);

  std::string payload, error;
  FrameStatus s = read_frame(sv[0], protocol::kMaxRequestBytes, deadline_after(startup_timeout_s), &payload,
                             nullptr, &error);
  if (s != FrameStatus::kOk) {
    throw Error("spade-envd ('" + envd_path + "') did not start: " +
                (s == FrameStatus::kTimeout ? "no ready message within " + std::to_string(startup_timeout_s) + " s"
                                            : std::string("channel ") + frame_status_name(s) + " " + error) +
                " (its stderr has details)");
  }
  json ready = json::parse(payload, nullptr, false);
  if (!ready.is_object() || ready.value("op", "") != "ready") {
    std::string message = ready.is_object() ? ready.value("message", payload) : payload;
    throw Error("spade-envd ('" + envd_path + "') failed to start: " + message);
  }
  std::string root = ready.value("tmp_root", "");
  if (!private_tmp && root.find("/spade-envd-") != std::string::npos) zygote->tmp_root_ = root;  // only ever remove our own
  zygote->ready_ = ready;
  return zygote;
}

ZygoteProcess::~ZygoteProcess() { stop(); }

int64_t ZygoteProcess::oom_kills() const { return cgroup ? cgroup->oom_kills() : -1; }

void ZygoteProcess::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  broken_ = true;
  for (int i = 0; i < 500; ++i) {  // up to 5 s for the zygote to kill and reap its children
    pid_t r = waitpid(pid_, nullptr, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      remove_tree(tmp_root_);  // normally gone already; left behind if the zygote was killed
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);  // its children die with it (PR_SET_PDEATHSIG)
  waitpid(pid_, nullptr, 0);
  remove_tree(tmp_root_);  // a killed zygote could not clean up its children's directories
}

bool ZygoteProcess::alive() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_ && waitpid(pid_, nullptr, WNOHANG) == pid_) {
    broken_ = true;  // reaped; stop() must not wait for it again
    close(fd_);
    fd_ = -1;
    remove_tree(tmp_root_);
  }
  return !broken_;
}

bool ZygoteProcess::request(const json& req, json* reply, int* passed_fd, std::string* error, bool* retire) {
  std::lock_guard<std::mutex> lock(mu_);
  if (retire != nullptr) *retire = true;  // until the zygote answers otherwise
  if (broken_) {
    *error = "spade-envd is no longer running";
    return false;
  }
  auto deadline = deadline_after(kControlTimeoutS);
  std::string payload, io_error;
  std::vector<int> fds;
  FrameStatus s = write_frame(fd_, req.dump(), deadline, -1, &io_error);
  if (s == FrameStatus::kOk)
    s = read_frame(fd_, protocol::kMaxRequestBytes, deadline, &payload, &fds, &io_error, nullptr, &spin);
  if (s != FrameStatus::kOk) {
    for (int fd : fds) close(fd);
    broken_ = true;
    *error = std::string("spade-envd control channel: ") + frame_status_name(s) + " " + io_error;
    return false;
  }
  *reply = json::parse(payload, nullptr, false);
  if (passed_fd != nullptr && fds.size() == 1) {
    *passed_fd = fds[0];
  } else {
    for (int fd : fds) close(fd);
  }
  if (!reply->is_object()) {
    broken_ = true;
    *error = "spade-envd sent an invalid control reply";
    return false;
  }
  if (retire != nullptr) *retire = reply->value("retire", false);
  if (reply->contains("error")) {
    *error = "spade-envd: " + reply->value("error", std::string("unknown error"));
    return false;
  }
  return true;
}

bool ZygoteProcess::spawn(const json& limits, int spares, pid_t* pid, int* fd, std::string* error,
                          const std::string& preload, int preload_spares, bool* loaded, bool* retire) {
  json reply;
  int passed = -1;
  json req{{"op", "spawn"}, {"limits", limits}, {"spares", spares}};
  if (preload_spares >= 0) {
    req["preload"] = preload;
    req["preload_spares"] = preload_spares;
  }
  if (!request(req, &reply, &passed, error, retire)) return false;
  auto p = reply.find("pid");
  if (passed < 0 || p == reply.end() || !p->is_number_integer()) {
    if (passed >= 0) close(passed);
    *error = "spade-envd answered spawn without a pid and a channel";
    return false;
  }
  *pid = p->get<pid_t>();
  *fd = passed;
  if (loaded != nullptr) *loaded = reply.value("loaded", false) && !preload.empty() && preload_spares > 0;
  return true;
}

json ZygoteProcess::status(pid_t pid) {
  json reply;
  std::string error;
  if (!request(json{{"op", "status"}, {"pid", pid}}, &reply, nullptr, &error)) return json{{"state", "unknown"}};
  return reply;
}

void ZygoteProcess::kill(pid_t pid) {
  json reply;
  std::string error;
  request(json{{"op", "kill"}, {"pid", pid}}, &reply, nullptr, &error);
}

void ZygoteProcess::release(pid_t pid) {
  json reply;
  std::string error;
  request(json{{"op", "release"}, {"pid", pid}}, &reply, nullptr, &error);
}

}  // namespace spade::envsandbox::detail
