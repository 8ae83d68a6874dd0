// The adversarial suite (issue 3): every program in tests/sandbox_adversarial/ (one hostile environment
// per file, covering each item of sandbox anchors (docs/sources.md) "Adversarial programs" and more) is
// validated by the full gates on one shared server. For each: the verdict and reason are asserted
// (kExpected below, derived from the layer that must stop it: host deadline -> timeout, RLIMIT_AS ->
// memory, seccomp -> PermissionError -> *_exception, C++ type checks -> step_bad_*...), then the same
// server must admit a good program, no process of it may be left in the pool, no watched file outside
// the work dir may change, the host's memory stays bounded, and (issue 24) a follow-up program finds
// exactly the world it finds in a fresh pool (programs/world_probe.py: limits, scheduling, writable
// places, files, processes, IPC objects, free memory; tests/envsandbox/world.h). Then all of them run
// concurrently with good programs on one server. test_neighbours.cpp runs the programs aimed at
// neighbours with live neighbours too.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "envsandbox/validate.h"
#include "test_util.h"
#include "world.h"

namespace spade::envsandbox {
namespace {

const char* const kSecret = "spade-adversarial-secret-4f1c";  // in the host environment, never in a sandbox

struct Expected {
  const char* file;
  bool admitted;
  std::set<std::string> reasons;  // accepted reason ids (more than one only where the machine decides)
};

// Every file of tests/sandbox_adversarial/ must be listed here (checked by EveryProgramHasAnExpectation).
const std::vector<Expected>& expectations() {
  static const std::vector<Expected> kExpected = {
      // 1-3: loops and long C calls: only the host deadline stops them.
      {"loop_try_except.py", false, {"timeout"}},
      {"sigalrm_disabled_spin.py", false, {"timeout"}},
      {"sigalrm_disabled_sleep.py", false, {"timeout"}},
      {"long_c_call_pbkdf2.py", false, {"timeout"}},
      {"long_c_call_regex.py", false, {"timeout"}},
      {"long_c_call_sorted.py", false, {"memory", "timeout"}},  // RLIMIT_AS or the deadline, whichever first
      // 4: memory.
      {"alloc_10gb.py", false, {"memory"}},
      {"alloc_slow_growth.py", false, {"memory", "timeout"}},  // ~1000 allocations: slow on a loaded box
      {"obs_2gb.py", false, {"memory"}},
      {"obs_200mb.py", false, {"obs_too_large"}},
      {"mmap_huge.py", false, {"reset_exception"}},  // OSError ENOMEM under RLIMIT_AS
      // 5: processes: seccomp denies fork/clone/exec (PermissionError); threads are capped by RLIMIT_AS.
      {"fork_bomb.py", false, {"reset_exception"}},
      {"multiprocessing_pool.py", false, {"reset_exception"}},
      {"subprocess_shell.py", false, {"reset_exception"}},
      {"double_fork_setsid.py", false, {"reset_exception"}},
      {"thread_bomb.py", false, {"reset_exception"}},
      // 6: the file system: read-only binds + tmpfs + RLIMIT_FSIZE; the programs swallow errors.
      {"overwrite_system_files.py", true, {"ok"}},
      {"fill_tmp.py", true, {"ok"}},
      {"big_file.py", false, {"reset_exception"}},  // EFBIG past RLIMIT_FSIZE
      // 7: network.
      {"inet_socket.py", false, {"reset_exception"}},
      {"dns_lookup.py", false, {"reset_exception"}},
      {"unix_socket_escape.py", true, {"ok"}},
      // 8: secrets (admitted; the output is checked for the host's secret).
      {"read_secrets.py", true, {"ok"}},
      // 9-10: values.
      {"reward_nan.py", false, {"reward_out_of_range"}},
      {"reward_inf.py", false, {"reward_out_of_range"}},
      {"reward_1e308.py", false, {"reward_out_of_range"}},
      {"terminated_str.py", false, {"step_bad_type"}},
      {"arity_step_4.py", false, {"step_bad_arity"}},
      {"arity_step_6.py", false, {"step_bad_arity"}},
      {"arity_reset_3.py", false, {"reset_bad_return"}},
      // 11: hostile objects are never called by the host.
      {"hostile_endless_iter.py", false, {"step_bad_type"}},
      {"hostile_sleeping_eq.py", true, {"ok"}},  // a float subclass is a float; its methods never run
      {"hostile_self_reference.py", false, {"info_not_json"}},
      {"hostile_lambda_info.py", false, {"info_not_json"}},
      // 12: output and the channel.
      {"stdout_flood.py", true, {"ok"}},
      {"forged_frame.py", false, {"step_bad_arity"}},  // its forged reply is answered by its own real one
      {"forged_huge_frame.py", false, {"protocol"}},
      {"close_channel.py", false, {"protocol"}},
      // 13: exits.
      {"system_exit.py", false, {"reset_exception"}},
      {"keyboard_interrupt.py", false, {"step_exception"}},
      {"custom_base_exception.py", false, {"reset_exception"}},
      {"os_exit_zero.py", false, {"exited"}},
      // 14: crashes.
      // SIGSEGV up to Python 3.11 (Debian 12); from 3.12 (Debian 13's 3.13) repr's recursion is bounded
      // by CPython's own C recursion limit, which sys.setrecursionlimit does not raise: RecursionError.
      {"segv_deep_recursion.py", false, {"signal", "reset_exception"}},
      {"segv_ctypes.py", false, {"signal"}},
      {"abort.py", false, {"signal"}},
      // 15: imports, tampering, nondeterminism.
      {"missing_import.py", false, {"load_exception"}},
      {"tamper_modules.py", true, {"ok"}},
      {"unseeded_global_rng.py", false, {"nondeterministic"}},
      {"time_dependent.py", false, {"nondeterministic"}},
      {"set_ordering.py", true, {"ok"}},
      // More: neighbours, the zygote, limits, load-time hangs, a CPU-burning thread.
      {"kill_zygote.py", false, {"reset_exception"}},
      {"ptrace_ctypes.py", false, {"reset_exception"}},
      {"raise_rlimits.py", false, {"reset_exception"}},
      {"fd_exhaustion.py", false, {"reset_exception"}},
      {"sleep_in_init.py", false, {"timeout"}},
      {"module_level_loop.py", false, {"timeout"}},
      {"background_spinner.py", true, {"ok"}},
      {"neighbour_channel.py", true, {"ok"}},
      // Issue 24: neighbours, the pool and the reader. The programs swallow their own failures, so they
      // are admitted (their harm would be silent); the world check below is what catches them.
      {"stop_neighbours_pidfd.py", true, {"ok"}},
      {"stop_neighbours_sigio.py", true, {"ok"}},
      {"prlimit_neighbours.py", true, {"ok"}},
      {"renice_neighbours.py", true, {"ok"}},
      {"write_everywhere.py", true, {"ok"}},
      {"fill_shm.py", true, {"ok"}},
      {"sysv_ipc_leak.py", true, {"ok"}},
      {"plant_workdirs.py", true, {"ok"}},
      {"forged_long_obs.py", false, {"obs_too_large"}},  // the host's own cap, not the child's flag
      {"terminal_escape.py", false, {"reset_exception"}},  // its message is escaped by `envs check`
  };
  return kExpected;
}

std::string adversarial_dir() { return std::string(SPADE_SOURCE_DIR) + "/tests/sandbox_adversarial/"; }

std::string adversarial(const std::string& file) { return read_file(adversarial_dir() + file); }

SandboxOptions adversarial_options() {
  SandboxOptions o = testing::fast_options();
  o.pool_memory_bytes = int64_t{3} << 30;  // the whole pool, whatever runs at once
  return o;
}

EnvServer& adversarial_server() {
  static EnvServer* server = [] {
    setenv("SPADE_ADVERSARIAL_SECRET", kSecret, 1);  // visible to the host only
    auto* s = new EnvServer(adversarial_options());
    return s;
  }();
  return *server;
}

// Files a program must not change: (size, mtime) of each, or (-1, 0) if absent.
std::map<std::string, std::pair<int64_t, int64_t>> watched_files() {
  std::vector<std::string> paths = {"/bin/bash", "/usr/bin/bash", "/etc/passwd", "/root/.bashrc",
                                    "/tmp/spade_pwned", "/spade_pwned", "/work/main/runs/spade_pwned",
                                    std::string(SPADE_SOURCE_DIR) + "/README.md"};
  for (const char* dir : {"/tmp", "/", "/root", SPADE_SOURCE_DIR})
    if (DIR* d = opendir(dir)) {
      while (dirent* e = readdir(d))
        if (std::string(e->d_name).find("spade_pwned") != std::string::npos)
          paths.push_back(std::string(dir) + "/" + e->d_name);
      closedir(d);
    }
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const std::string& p : paths) {
    struct stat st{};
    out[p] = stat(p.c_str(), &st) == 0 ? std::make_pair(int64_t(st.st_size), int64_t(st.st_mtime)) : std::make_pair(int64_t{-1}, int64_t{0});
  }
  return out;
}

int64_t own_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key)
    if (key == "VmRSS:") {
      int64_t kb;
      f >> kb;
      return kb * 1024;
    }
  return -1;
}

// Processes of an idle pool: bwrap outside the namespaces, the process bwrap starts (pid 1 inside,
// --as-pid-1) which with per-child namespaces only waits for the zygote it forked (envd_namespaces.h),
// the zygote, and the spare children it keeps waiting.
size_t idle_pool_size(EnvServer& server) {
  const IsolationInfo& iso = server.isolation();
  return (iso.namespaces ? 2 : 1) + (iso.child_namespaces ? 1 : 0) + static_cast<size_t>(server.options().spare_children);
}

// Waits up to `seconds` until the pool holds at most `count` processes.
bool pool_drains_to(EnvServer& server, size_t count, double seconds) {
  if (server.isolation().cgroup_pids_dir.empty()) return true;  // nothing to count with
  for (int i = 0; i < seconds * 100; ++i) {
    if (server.pool_pids().size() <= count) return true;
    usleep(10000);
  }
  return false;
}

void PrintTo(const Expected& e, std::ostream* os) { *os << e.file; }

class Adversarial : public ::testing::TestWithParam<Expected> {};

TEST_P(Adversarial, IsContained) {
  const Expected& e = GetParam();
  EnvServer& server = adversarial_server();
  // Baseline: the good program is admitted, and the pool's idle process count.
  ASSERT_TRUE(validate_game(server, testing::program("good_guess.py")).admitted);
  // The steady state, not a count taken now: a spare may be between hand-over and refill.
  const size_t idle = idle_pool_size(server);
  ASSERT_TRUE(pool_drains_to(server, idle, 3));
  auto files_before = watched_files();

  ValidationReport r = validate_game(server, adversarial(e.file));
  EXPECT_EQ(r.admitted, e.admitted) << e.file << ": " << r.to_json().dump(2);
  EXPECT_TRUE(e.reasons.count(r.reason)) << e.file << ": reason " << r.reason << " -- " << r.detail;

  // The same server keeps serving.
  ValidationReport good = validate_game(server, testing::program("good_guess.py"));
  EXPECT_TRUE(good.admitted) << "after " << e.file << ": " << good.to_json().dump(2);
  // No process left behind.
  EXPECT_TRUE(pool_drains_to(server, idle, 5)) << e.file << " left processes in the pool: " << server.pool_pids().size()
                                               << " vs " << idle << " idle";
  // No file outside the work dir changed.
  EXPECT_EQ(watched_files(), files_before) << e.file << " changed a watched file";
  // Bounded memory: the host's own, and the pool under its cap.
  EXPECT_LT(own_rss_bytes(), int64_t{1} << 30);
  if (server.pool_peak_memory_bytes() >= 0) {
    EXPECT_LE(server.pool_peak_memory_bytes(), int64_t{3} << 30);
  }
  // No host secret reaches a program; output stays capped.
  EXPECT_EQ(r.output.find(kSecret), std::string::npos) << e.file << " saw the host's secret";
  EXPECT_LE(r.output.size(), static_cast<size_t>(server.options().max_output_bytes));
  // The next program finds the world of a fresh pool (issue 24).
  nlohmann::json after = testing::world_of(server);
  const nlohmann::json& fresh = testing::fresh_world(adversarial_options());
  EXPECT_EQ(after, fresh) << "after " << e.file << ", the follow-up's world differs from a fresh pool's:"
                          << testing::differences(after, fresh);
}

std::string param_name(const ::testing::TestParamInfo<Expected>& info) {
  std::string name = info.param.file;
  name = name.substr(0, name.rfind('.'));
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Programs, Adversarial, ::testing::ValuesIn(expectations()), param_name);

TEST(AdversarialSuite, EveryProgramHasAnExpectation) {
  std::set<std::string> files, listed;
  DIR* d = opendir(adversarial_dir().c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 3 && n.substr(n.size() - 3) == ".py") files.insert(n);
  }
  closedir(d);
  for (const Expected& e : expectations()) listed.insert(e.file);
  EXPECT_EQ(files, listed);
  EXPECT_GE(files.size(), 40u);
}

TEST(AdversarialSuite, SecretOutputIsAbsentFromTheSnooper) {
  ValidationReport r = validate_game(adversarial_server(), adversarial("read_secrets.py"));
  ASSERT_TRUE(r.admitted) << r.to_json().dump(2);
  EXPECT_NE(r.output.find("environ:"), std::string::npos);  // it did run and print
  EXPECT_EQ(r.output.find(kSecret), std::string::npos);
  EXPECT_EQ(r.output.find("SPADE_ADVERSARIAL_SECRET"), std::string::npos);
}

TEST(AdversarialSuite, AllAtOnceWithGoodProgramsOnOneServer) {
  // A separate pool: 4 workers interleave every hostile program with good ones.
  SandboxOptions o = adversarial_options();
  EnvServer server(o);
  const auto& all = expectations();
  std::vector<std::string> failures;
  std::mutex mu;
  int good_admitted = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      for (size_t i = static_cast<size_t>(w); i < all.size(); i += 4) {
        ValidationReport r = validate_game(server, adversarial(all[i].file));
        ValidationReport g = validate_game(server, testing::program(i % 2 ? "good_guess.py" : "base_class.py"));
        std::lock_guard<std::mutex> lock(mu);
        // Under 4x contention on a 2-core machine, a program racing RLIMIT_AS or a crash against the
        // 2 s deadline may meet the deadline first: still contained, with reason timeout. So may
        // obs_200mb.py, whose reset writes 200 MiB: alone, its whole per-program test (two good
        // validations included) takes 1.2 s; here it shares the window with segv_deep_recursion.py's
        // 10^5-deep repr and stdout_flood.py and was measured at 2.05 s (the crash too ran into the
        // deadline; 2026-12-04, this 2-core machine).
        std::set<std::string> ok = all[i].reasons;
        if (ok.count("memory") || ok.count("signal") || ok.count("obs_too_large")) ok.insert("timeout");
        if (r.admitted != all[i].admitted || !ok.count(r.reason))
          failures.push_back(std::string(all[i].file) + ": " + r.reason + " -- " + r.detail);
        good_admitted += g.admitted;
        if (!g.admitted) failures.push_back("good program after " + std::string(all[i].file) + ": " + g.reason);
      }
    });
  for (std::thread& t : workers) t.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[adversarial] %zu hostile + %zu good validations on 4 threads in %.1f s\n", all.size(), all.size(), took);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(good_admitted, static_cast<int>(all.size()));
  EXPECT_TRUE(pool_drains_to(server, idle_pool_size(server), 5)) << "processes left: " << server.pool_pids().size();
  if (server.pool_peak_memory_bytes() >= 0) {
    EXPECT_LE(server.pool_peak_memory_bytes(), int64_t{3} << 30);
  }
  EXPECT_LT(own_rss_bytes(), int64_t{1} << 30);
}

}  // namespace
}  // namespace spade::envsandbox
