#include "trainer/launch_local.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace spade::trainer {

namespace {

// The ranks' pids, read by the signal handler (async-signal-safe: plain array, kill()).
constexpr int kMaxRanks = 1024;
volatile pid_t g_ranks[kMaxRanks];
volatile int g_num_ranks = 0;

void forward_signal(int sig) {
  for (int i = 0; i < g_num_ranks; ++i)
    if (g_ranks[i] > 0) kill(g_ranks[i], sig);
}

bool launcher_variable(const std::string& key) {
  return key == "RANK" || key == "WORLD_SIZE" || key == "LOCAL_RANK" || key == "LOCAL_WORLD_SIZE" ||
         key == "MASTER_ADDR" || key == "MASTER_PORT" || key.rfind("SLURM_", 0) == 0 ||
         key.rfind("TORCHELASTIC_", 0) == 0 || key == "GROUP_RANK" || key == "ROLE_RANK";
}

}  // namespace

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("launch: socket(): ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    throw Error("launch: cannot bind a free port on 127.0.0.1: " + why);
  }
  close(fd);
  return ntohs(a.sin_port);
}

int launch_local_ranks(int nproc, const std::vector<std::string>& args, double grace_s) {
  if (nproc < 1 || nproc > kMaxRanks)
    throw Error("launch: --nproc must be in [1, " + std::to_string(kMaxRanks) + "], got " + std::to_string(nproc));
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw Error("launch: cannot read /proc/self/exe");
  exe[n] = '\0';
  const int port = free_local_port();

  std::vector<std::string> base_env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (!launcher_variable(kv.substr(0, kv.find('=')))) base_env.push_back(kv);
  }
  struct sigaction sa {}, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  g_num_ranks = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);

  std::vector<pid_t> pids;
  auto stop_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
  };
  for (int r = 0; r < nproc; ++r) {
    std::vector<std::string> env = base_env;
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(port));
    env.push_back("RANK=" + std::to_string(r));
    env.push_back("WORLD_SIZE=" + std::to_string(nproc));
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc));
    std::vector<std::string> argv_s = {exe};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), envp.data());
    if (rc != 0) {
      stop_all(SIGTERM);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      g_num_ranks = 0;
      throw Error("launch: cannot start rank " + std::to_string(r) + " (" + exe + "): " + std::strerror(rc));
    }
    pids.push_back(pid);
    g_ranks[r] = pid;
    g_num_ranks = r + 1;
  }

  int result = 0, alive = nproc;
  std::chrono::steady_clock::time_point deadline{};
  bool stopping = false;
  while (alive > 0) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, stopping ? WNOHANG : 0);
    if (p < 0 && errno == EINTR) continue;  // a forwarded signal; keep waiting
    if (p < 0) break;
    if (p == 0) {  // stopping: poll until the grace period ends
      if (std::chrono::steady_clock::now() > deadline) stop_all(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    int rank = -1;
    for (int r = 0; r < nproc; ++r)
      if (pids[r] == p) rank = r;
    if (rank < 0) continue;  // not ours
    pids[rank] = -1;
    g_ranks[rank] = -1;
    --alive;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      std::fprintf(stderr, "spade train --nproc: rank %d %s %d; stopping the other ranks\n", rank,
                   WIFEXITED(status) ? "exited with code" : "was killed by signal",
                   WIFEXITED(status) ? code : WTERMSIG(status));
      stop_all(SIGTERM);
      stopping = true;
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
    }
  }
  g_num_ranks = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return result;
}

}  // namespace spade::trainer
