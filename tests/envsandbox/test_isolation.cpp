// The isolation layers (sandbox.h, isolation.h, envd_seccomp.h), checked from inside with
// programs/isolation_probe.py. Expected values follow from the layer definitions: seccomp denies with
// EPERM (PermissionError), read-only binds give EROFS (OSError), namespaces hide /etc/passwd and host
// pids, the cleared environment holds only PATH, LANG, TMPDIR, HOME (+ PWD set by bwrap, LC_CTYPE
// by Python; the zygote's BLAS thread variables). Namespace-only checks skip (saying why) where bwrap cannot run.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "test_util.h"

namespace spade::envsandbox {
namespace {

using testing::program;

std::string field(const PyValue& info, const char* key) {
  const PyValue* v = info.find(key);
  if (v == nullptr) return "<missing>";
  return v->is_str() ? v->as_str() : v->repr(200);
}

// Loads the probe in a fresh instance of `server` and returns reset()'s info dict.
PyValue probe(EnvServer& server, std::unique_ptr<EnvInstance>* keep = nullptr) {
  auto env = server.spawn();
  CallResult load = env->load(program("isolation_probe.py"));
  EXPECT_TRUE(load.ok()) << load.detail;
  CallResult r = env->reset(0);
  EXPECT_TRUE(r.ok()) << r.detail;
  PyValue info = r.ok() ? r.value.items()[1] : PyValue();
  if (keep) *keep = std::move(env);
  return info;
}

std::string step_obs(EnvInstance& env, const std::string& action) {
  CallResult r = env.step(action);
  if (!r.ok()) return std::string("<") + call_status_name(r.status) + ": " + r.detail + ">";
  return r.value.items()[0].as_str();
}

// Layers present whatever the machine allows: seccomp, rlimits, unprivileged uid as root.
void expect_child_layers(const PyValue& info, const EnvServer& server) {
  EXPECT_EQ(field(info, "fork"), "PermissionError");
  EXPECT_EQ(field(info, "exec"), "PermissionError");
  EXPECT_EQ(field(info, "subprocess"), "PermissionError");
  EXPECT_EQ(field(info, "inet"), "PermissionError");
  EXPECT_EQ(field(info, "inet6"), "PermissionError");
  EXPECT_EQ(field(info, "netlink"), "PermissionError");
  EXPECT_EQ(field(info, "unix"), "ok");  // AF_UNIX stays allowed (the channel is one)
  EXPECT_EQ(field(info, "kill_parent"), "PermissionError");  // the zygote is out of reach
  EXPECT_EQ(field(info, "kill_all"), "PermissionError");
  EXPECT_EQ(field(info, "kill_self_0"), "ok");
  EXPECT_EQ(field(info, "unshare"), "PermissionError");
  EXPECT_EQ(field(info, "thread"), "ok");  // threads are clone(CLONE_THREAD): allowed
  EXPECT_EQ(field(info, "write_cwd"), "ok");
  // Issue 24: every call aimed at another process is denied, whatever the namespaces; no capability.
  for (const char* call : {"prlimit_other", "setpriority_other", "setpriority_user", "affinity_other", "ioprio_user",
                           "pidfd_signal_self", "f_setown", "f_setsig"})
    EXPECT_EQ(field(info, call), "PermissionError") << call;
  EXPECT_EQ(field(info, "caps"), "0000000000000000");
  // IPC objects: in the child's own IPC namespace, or not at all.
  EXPECT_EQ(field(info, "shmget"), server.isolation().child_namespaces ? "ok" : "PermissionError");
  if (geteuid() == 0) {
    EXPECT_EQ(info.find("uid")->as_int(), server.isolation().uid);
    EXPECT_EQ(server.isolation().host_uid, 65534);
    EXPECT_NE(field(info, "write_usr"), "ok");
    EXPECT_NE(field(info, "read_shadow"), "ok");
  }
}

TEST(Isolation, ReportsItsLayers) {
  EnvServer& server = testing::shared_server();
  const IsolationInfo& iso = server.isolation();
  std::printf("[isolation] %s\n", iso.to_json().dump().c_str());
  EXPECT_TRUE(iso.seccomp);
  if (geteuid() == 0) {
    EXPECT_EQ(iso.host_uid, 65534);
    if (access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0) {
      EXPECT_FALSE(iso.cgroup_memory_dir.empty()) << iso.cgroup_note;
      EXPECT_FALSE(iso.cgroup_pids_dir.empty());
      EXPECT_GT(iso.pool_memory_bytes, 0);
    }
  }
  if (!iso.namespaces) {
    EXPECT_FALSE(iso.fallback_reason.empty());
  }
}

TEST(Isolation, ProgramSeesConfinedWorld) {
  EnvServer& server = testing::shared_server();
  std::unique_ptr<EnvInstance> env;
  PyValue info = probe(server, &env);
  expect_child_layers(info, server);
  if (!server.isolation().namespaces) GTEST_SKIP() << "no namespaces here: " << server.isolation().fallback_reason;
  EXPECT_EQ(field(info, "hostname"), "spade-envd");
  EXPECT_EQ(field(info, "read_passwd"), "FileNotFoundError");  // /etc is not bound
  EXPECT_EQ(field(info, "write_usr"), "OSError");              // read-only bind (EROFS)
  EXPECT_LT(info.find("pid")->as_int(), 1000);                 // its own pid namespace
  EXPECT_NE(info.find("pid")->as_int(), env->pid());           // the host sees another pid
  std::string root = field(info, "root_listing");  // system dirs + the spade-envd binary's path only
  for (const char* hidden : {"'root'", "'home'", "'var'", "'opt'", "'srv'", "'mnt'", "'boot'"})
    EXPECT_EQ(root.find(hidden), std::string::npos) << hidden << " visible: " << root;
  EXPECT_NE(root.find("'tmp'"), std::string::npos) << root;
  // Read-only everywhere but /tmp; /dev holds the usual character devices only (issue 24).
  EXPECT_EQ(field(info, "write_root"), "OSError");
  EXPECT_EQ(field(info, "write_dev"), "OSError");
  EXPECT_EQ(field(info, "write_tmp"), "ok");
  EXPECT_EQ(field(info, "dev_listing"),
            "['fd', 'full', 'null', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero']");
  if (!server.isolation().child_namespaces) {
    EXPECT_EQ(field(info, "cwd").rfind("/tmp/spade-envd-", 0), 0u) << field(info, "cwd");
    EXPECT_EQ(field(info, "write_dev_shm"), "OSError");  // read-only: shared memory would outlive it
    return;
  }
  // Its own namespaces: pid 1 seeing only itself, its own /tmp with its work dir and /dev/shm.
  EXPECT_EQ(info.find("pid")->as_int(), 1);
  EXPECT_EQ(info.find("ppid")->as_int(), 0);  // the zygote is outside its namespace
  EXPECT_EQ(field(info, "proc_pids"), "[1]");
  EXPECT_EQ(field(info, "cwd"), "/tmp/work");
  EXPECT_EQ(field(info, "write_dev_shm"), "ok");
}

TEST(Isolation, InsideBubblewrapWithoutChildNamespaces) {
  // SandboxOptions::child_namespaces = false (what a machine that cannot make them gets, with a
  // warning): the pool's namespaces and the read-only root hold; children share the pool's /tmp, see
  // each other's pids, cannot create IPC objects and find /dev/shm read-only.
  SandboxOptions o = testing::fast_options();
  o.child_namespaces = false;
  EnvServer server(o);
  if (!server.isolation().namespaces) GTEST_SKIP() << "no namespaces here: " << server.isolation().fallback_reason;
  EXPECT_FALSE(server.isolation().child_namespaces);
  EXPECT_EQ(server.isolation().child_namespaces_reason, "disabled by SandboxOptions::child_namespaces");
  std::unique_ptr<EnvInstance> env;
  PyValue info = probe(server, &env);
  expect_child_layers(info, server);
  EXPECT_EQ(field(info, "cwd").rfind("/tmp/spade-envd-", 0), 0u) << field(info, "cwd");
  EXPECT_EQ(field(info, "write_root"), "OSError");
  EXPECT_EQ(field(info, "write_dev_shm"), "OSError");
  EXPECT_EQ(field(info, "write_tmp"), "ok");
  EXPECT_NE(info.find("pid")->as_int(), 1);  // a process of the zygote's namespace
}

TEST(Isolation, NoHostSecretInTheEnvironment) {
  setenv("SPADE_TEST_SECRET", "hunter2", 1);
  EnvServer server(testing::fast_options());
  unsetenv("SPADE_TEST_SECRET");
  std::unique_ptr<EnvInstance> env;
  PyValue info = probe(server, &env);
  std::string environ = field(info, "environ");
  EXPECT_EQ(environ.find("SPADE_TEST_SECRET"), std::string::npos) << environ;
  std::string all = step_obs(*env, "environ");
  EXPECT_EQ(all.find("hunter2"), std::string::npos) << all;
  // The host's own environment through /proc: another pid namespace (namespaces), or another uid.
  std::string host_environ = step_obs(*env, "read /proc/" + std::to_string(getpid()) + "/environ");
  EXPECT_NE(host_environ, "ok");
  if (server.isolation().namespaces) {
    EXPECT_EQ(environ, "['HOME', 'LANG', 'MKL_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', "
                       "'PWD', 'TMPDIR']");
  }
}

TEST(Isolation, HostPidOfAChildIsARealUnprivilegedProcess) {
  EnvServer& server = testing::shared_server();
  auto env = server.spawn();
  pid_t pid = env->pid();
  ASSERT_GT(pid, 0);
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line, uid_line;
  while (std::getline(status, line))
    if (line.rfind("Uid:", 0) == 0) uid_line = line;
  ASSERT_FALSE(uid_line.empty()) << "no /proc/" << pid;
  if (geteuid() == 0) {
    EXPECT_NE(uid_line.find("65534"), std::string::npos) << uid_line;
  }
  std::vector<int> pool = server.pool_pids();
  if (!server.isolation().cgroup_pids_dir.empty()) {
    EXPECT_NE(std::find(pool.begin(), pool.end(), pid), pool.end()) << "child not in the pool's pids cgroup";
  }
}

TEST(Isolation, NeighboursCannotSignalEachOther) {
  EnvServer& server = testing::shared_server();
  std::unique_ptr<EnvInstance> a, b;
  PyValue info_a = probe(server, &a);
  probe(server, &b);
  // a's pid as the host sees it, and (without per-child namespaces) as the pool sees it; with them a is
  // pid 1 of its own namespace, a number that names b itself in b's.
  std::vector<int64_t> names = {a->pid()};
  if (!server.isolation().child_namespaces) names.push_back(info_a.find("pid")->as_int());
  for (int64_t pid : names) EXPECT_EQ(step_obs(*b, "kill " + std::to_string(pid)), "PermissionError") << pid;
  EXPECT_EQ(step_obs(*a, "?"), "?");  // a is alive and serving
}

TEST(Isolation, TmpfsIsSizeCapped) {
  SandboxOptions o = testing::fast_options();
  o.tmpfs_bytes = int64_t{40} << 20;
  o.call_timeout_s = 20;
  EnvServer server(o);
  if (!server.isolation().namespaces) GTEST_SKIP() << "no namespaces here: " << server.isolation().fallback_reason;
  std::unique_ptr<EnvInstance> env;
  probe(server, &env);
  // 15 MiB files (under RLIMIT_FSIZE 16 MiB): two fit in 40 MiB, the third hits ENOSPC (28).
  EXPECT_EQ(step_obs(*env, "fill 10"), "wrote 2 then OSError errno 28");
}

TEST(Isolation, PoolMemoryCgroupKillsTheRunawayChildWithReasonMemory) {
  SandboxOptions o = testing::fast_options();
  o.pool_memory_bytes = int64_t{200} << 20;
  o.memory_limit_bytes = int64_t{4} << 30;  // RLIMIT_AS would allow it: the cgroup must stop it
  o.call_timeout_s = 20;
  EnvServer server(o);
  if (server.isolation().cgroup_memory_dir.empty()) GTEST_SKIP() << "no memory cgroup: " << server.isolation().cgroup_note;
  std::unique_ptr<EnvInstance> env;
  probe(server, &env);
  CallResult r = env->step("alloc 600");
  EXPECT_EQ(r.status, CallStatus::kMemory) << r.detail;
  EXPECT_FALSE(env->alive());
  EXPECT_LE(server.pool_peak_memory_bytes(), int64_t{200} << 20);
  // The pool goes on serving.
  std::unique_ptr<EnvInstance> next;
  PyValue info = probe(server, &next);
  EXPECT_EQ(field(info, "fork"), "PermissionError");
}

TEST(Isolation, FallsBackWithAWarningWhenBwrapIsMissing) {
  SandboxOptions o = testing::fast_options();
  o.bwrap_path = "/nonexistent/bwrap";
  ::testing::internal::CaptureStderr();
  std::unique_ptr<EnvServer> server;
  try {
    server = std::make_unique<EnvServer>(o);
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    throw;
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("WARNING: bubblewrap cannot create the sandbox namespaces"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/bwrap"), std::string::npos) << err;
  EXPECT_FALSE(server->isolation().namespaces);
  EXPECT_NE(server->isolation().fallback_reason.find("not found"), std::string::npos);
  PyValue info = probe(*server);
  expect_child_layers(info, *server);  // seccomp, rlimits and the uid still hold
  // One warning per process for the same reason.
  ::testing::internal::CaptureStderr();
  EnvServer again(o);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(Isolation, RequireThrowsAndOffIsQuiet) {
  SandboxOptions o = testing::fast_options();
  o.bwrap_path = "/nonexistent/bwrap";
  o.namespaces = "require";
  EXPECT_THROW(EnvServer{o}, Error);
  o.namespaces = "off";
  ::testing::internal::CaptureStderr();
  EnvServer server(o);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(server.isolation().namespaces);
  o.namespaces = "sometimes";
  EXPECT_THROW(EnvServer{o}, Error);
}

TEST(Isolation, SeccompCanBeTurnedOff) {
  SandboxOptions o = testing::fast_options();
  o.seccomp = false;
  EnvServer server(o);
  EXPECT_FALSE(server.isolation().seccomp);
  auto env = server.spawn();
  ASSERT_TRUE(env->load("import socket\nclass UEnv:\n    def reset(self, seed=None):\n"
                        "        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()\n"
                        "        return 'inet allowed', {}\n").ok());
  CallResult r = env->reset(0);
  EXPECT_TRUE(r.ok()) << r.detail;
}

TEST(Isolation, NothingLeftAfterTheServerGoes) {
  std::vector<int> pool;
  std::string memory_dir;
  {
    EnvServer server(testing::fast_options());
    std::vector<std::unique_ptr<EnvInstance>> envs;
    for (int i = 0; i < 3; ++i) {
      envs.push_back(server.spawn());
      ASSERT_TRUE(envs.back()->load(program("good_guess.py")).ok());
    }
    pool = server.pool_pids();
    memory_dir = server.isolation().cgroup_memory_dir;
    if (!memory_dir.empty()) {
      EXPECT_GE(pool.size(), 4u);  // zygote + 3 children (+ bwrap)
    }
  }
  for (int pid : pool) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    // Dead: gone or a zombie (bwrap's namespace init is reaped by the host's init, not by us).
    EXPECT_TRUE(testing::wait_dead(pid, 2)) << "pool process " << pid << " left behind: " << line;
  }
  if (!memory_dir.empty()) {
    EXPECT_NE(access(memory_dir.c_str(), F_OK), 0) << memory_dir << " not removed";
  }
}

}  // namespace
}  // namespace spade::envsandbox

namespace spade::envsandbox {
namespace {

TEST(Isolation, ServerOutlivesTheThreadThatCreatedIt) {
  // bwrap's --die-with-parent follows the creating *thread*; zygotes are spawned from a process-wide
  // thread, so a server built on a short-lived worker keeps its pool.
  std::unique_ptr<EnvServer> server;
  std::thread([&] { server = std::make_unique<EnvServer>(testing::fast_options()); }).join();
  usleep(100000);
  pid_t zygote = server->zygote_host_pid();
  auto env = server->spawn();
  CallResult r = env->load(testing::program("good_guess.py"));
  EXPECT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(server->zygote_host_pid(), zygote) << "the zygote was restarted";
}

}  // namespace
}  // namespace spade::envsandbox

namespace spade::envsandbox {
namespace {

// A host killed with -9 cannot remove its pool cgroups; the next server removes every empty
// "spade-envd-<pid>-..." over a minute old whose pid is gone (1,704 had piled up on a test machine
// from killed runs), and leaves a live one alone.
TEST(Isolation, StalePoolCgroupsOfDeadHostsAreRemoved) {
  EnvServer& live = testing::shared_server();
  if (live.isolation().cgroup_pids_dir.empty()) GTEST_SKIP() << "no pids cgroup: " << live.isolation().cgroup_note;
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);  // reaped: this pid now names no process (until reused)
  std::string parent = live.isolation().cgroup_pids_dir.substr(0, live.isolation().cgroup_pids_dir.rfind('/'));
  std::string stale = parent + "/spade-envd-" + std::to_string(dead) + "-0";
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  const std::string young = parent + "/spade-envd-" + std::to_string(dead) + "-1";
  ASSERT_EQ(mkdir(young.c_str(), 0755), 0) << young;
  timespec old_times[2] = {{time(nullptr) - 120, 0}, {time(nullptr) - 120, 0}};  // two minutes ago
  if (utimensat(AT_FDCWD, stale.c_str(), old_times, 0) != 0) {
    rmdir(stale.c_str());
    rmdir(young.c_str());
    GTEST_SKIP() << "cannot set the times of a cgroup directory here";
  }
  EnvServer fresh(testing::fast_options());
  EXPECT_FALSE(fresh.isolation().cgroup_pids_dir.empty()) << fresh.isolation().cgroup_note;
  struct stat st{};
  EXPECT_NE(stat(stale.c_str(), &st), 0) << stale << " should have been removed";
  if (stat(stale.c_str(), &st) == 0) rmdir(stale.c_str());
  EXPECT_EQ(stat(young.c_str(), &st), 0) << "a pool cgroup under a minute old is kept (age guard)";
  rmdir(young.c_str());
  EXPECT_EQ(stat(live.isolation().cgroup_pids_dir.c_str(), &st), 0);  // the live pool's is kept
  auto env = live.spawn();
  EXPECT_TRUE(env->load("class AEnv:\n    pass\n").ok());
}

}  // namespace
}  // namespace spade::envsandbox
