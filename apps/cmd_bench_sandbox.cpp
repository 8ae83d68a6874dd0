// `spade bench sandbox`: the environment sandbox's speed, side by side with the two baselines, in one
// run, printed as JSON (recorded in bench/RESULTS.md):
//   sandbox     envsandbox::EnvServer (bwrap zygote, forked child per environment, all layers on);
//   subprocess  a fresh `python3` process per environment (what most RL code does): spawn, exec the
//               program, reset, steps, exit;
//   inprocess   the same program called in a loop inside one python3 process, no isolation (the limit).
// Figures (each with 1 and with 2 workers running at once, i.e. 1 and 2 cores busy):
//   startup_ms p50/p99: new environment -> program loaded -> reset() returned (spawn_loaded + reset);
//   episode_steps_per_s: 10-step episodes, each in a new environment (start-up included);
//   trivial_steps_per_s: steps of a trivial environment on a live instance (no start-up);
//   seed_steps_per_s: the same for a seed environment (data/seed_envs/...).
// Plus live_envs: N live environments at once and the pool's memory (cgroup charge and summed PSS);
// the sandbox, 1 worker, with one feature off: no spares at all (spare_children = preload_spares = 0:
// a fork on every start-up), no spinning (spin_us = 0: every wait blocks), no preloading
// (preload_spares = 0: every load on the caller's path); the same sandbox with a 100 ms pause before
// each episode (sandbox_paced_1_busy: start-up from a ready spare, where the figures above measure
// start-up under continuous demand, bound by how fast the zygote makes children); and
// python3_fork_exit_wait_ms, the floor of
// any process-per-environment design here. Episodes start through EnvServer::spawn_loaded, as
// envsandbox::Game::open (the trainer's path) does.
// The baselines inject the same common names as the sandbox's loader except numpy (importing numpy
// would slow the subprocess baseline by ~100 ms and flatter the ratios).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "apps/commands.h"
#include "apps/machine_info.h"
#include "apps/error_text.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "envsandbox/sandbox.h"

using nlohmann::json;

namespace spade::apps {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Trivial environment: the cheapest step that still crosses the whole protocol.
const char* kTrivialEnv = R"PY(class TrivialEnv:
    def __init__(self, max_turns=1000000):
        self.max_turns = max_turns
        self.n = 0
    def reset(self, seed=None):
        self.n = 0
        return "start", {}
    def step(self, action):
        self.n += 1
        return "ok", 0.0, False, False, {}
)PY";

// Baseline runner (python3 -c): "episode FILE SEED STEPS" prints R after reset and D at the end;
// "loop FILE STEPS" prints the in-process steps/s of a live instance; "fork - N" prints the mean
// seconds of fork + _exit + waitpid of a python3 holding numpy (the cost of any process per environment).
const char* kRunner = R"PY(
import sys, time
import itertools, math, random, re, json, collections, functools, string, copy, heapq, operator, statistics
from collections import deque, Counter, defaultdict
from itertools import combinations
from functools import reduce, lru_cache
from copy import deepcopy
from typing import Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Type, Union
mode, path = sys.argv[1], sys.argv[2]
if mode == "fork":  # the floor of a process per environment: fork + _exit + waitpid of a python3 holding numpy
    import os
    try:
        import numpy
    except ImportError:
        pass
    n = int(sys.argv[3])
    t0 = time.perf_counter()
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    print((time.perf_counter() - t0) / n)
    sys.exit(0)
ns = dict(globals())
ns["__name__"] = "spade_env"
exec(compile(open(path).read(), path, "exec"), ns)
cls = [v for k, v in ns.items() if isinstance(v, type) and k.endswith("Env") and v.__module__ == "spade_env"][-1]
env = cls()
if mode == "episode":
    env.reset(seed=int(sys.argv[3]))
    sys.stdout.write("R\n"); sys.stdout.flush()
    for i in range(int(sys.argv[4])):
        env.step("\\boxed{1}")
    sys.stdout.write("D\n"); sys.stdout.flush()
else:
    env.reset(seed=0)
    n = int(sys.argv[3])
    t0 = time.perf_counter()
    for i in range(n):
        env.step("\\boxed{1}")
    print(n / (time.perf_counter() - t0))
)PY";

struct Stats {
  std::vector<double> startup_s;
  double steps = 0, seconds = 0;  // for throughput: summed over workers, wall time of the slowest
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Runs `work(worker)` on `workers` threads at once; returns the wall time. Rethrows a worker's error.
double in_parallel(int workers, const std::function<void(int)>& work) {
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  std::mutex mu;
  std::string error;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        work(w);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        error = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  if (!error.empty()) throw Error(error);
  return since(t0);
}

// --- python3 subprocess helpers ---
struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn_python(const std::vector<std::string>& args) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw Error("bench: pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> all = {"/usr/bin/python3", "-c", kRunner};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  Child c;
  int rc = posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), ::environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    throw Error("bench: cannot run /usr/bin/python3");
  }
  c.out = p[0];
  return c;
}

// Reads stdout until `marker` (a line) or EOF; returns everything read.
std::string read_until(int fd, const std::string& marker) {
  std::string got;
  char buf[256];
  while (got.find(marker) == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

int finish(Child& c) {
  close(c.out);
  int st = 0;
  waitpid(c.pid, &st, 0);
  return st;
}

// --- the three methods ---
// pause_ms > 0: each worker waits that long before each episode (outside the timings), so the server's
// spares are ready when it asks: the start-up is then a hand-over, not a fork under continuous demand.
Stats sandbox_episodes(envsandbox::EnvServer& server, const std::string& src, int workers, int episodes, int steps,
                       int pause_ms = 0) {
  Stats s;
  std::mutex mu;
  double wall = in_parallel(workers, [&](int w) {
    std::vector<double> lat;
    for (int i = 0; i < episodes; ++i) {
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      auto t0 = Clock::now();
      envsandbox::CallResult load;
      auto env = server.spawn_loaded(src, 25, &load);  // as envsandbox::Game::open does
      if (!load.ok() || !env->reset(i).ok()) throw Error("bench: sandbox load/reset failed");
      lat.push_back(since(t0));
      for (int k = 0; k < steps; ++k)
        if (!env->step("\\boxed{1}").ok()) throw Error("bench: sandbox step failed");
    }
    std::lock_guard<std::mutex> lock(mu);
    s.startup_s.insert(s.startup_s.end(), lat.begin(), lat.end());
  });
  s.steps = static_cast<double>(workers) * episodes * steps;
  s.seconds = wall;
  return s;
}

Stats sandbox_steps(envsandbox::EnvServer& server, const std::string& src, int workers, int steps) {
  Stats s;
  std::vector<std::unique_ptr<envsandbox::EnvInstance>> envs;
  for (int w = 0; w < workers; ++w) {
    envs.push_back(server.spawn());
    if (!envs.back()->load(src).ok() || !envs.back()->reset(0).ok()) throw Error("bench: sandbox load failed");
  }
  s.seconds = in_parallel(workers, [&](int w) {
    for (int k = 0; k < steps; ++k)
      if (!envs[w]->step("\\boxed{1}").ok()) throw Error("bench: sandbox step failed");
  });
  s.steps = static_cast<double>(workers) * steps;
  return s;
}

Stats subprocess_episodes(const std::string& file, int workers, int episodes, int steps) {
  Stats s;
  std::mutex mu;
  s.seconds = in_parallel(workers, [&](int w) {
    std::vector<double> lat;
    for (int i = 0; i < episodes; ++i) {
      auto t0 = Clock::now();
      Child c = spawn_python({"episode", file, std::to_string(i), std::to_string(steps)});
      std::string out = read_until(c.out, "R\n");
      lat.push_back(since(t0));
      out += read_until(c.out, "D\n");
      if (finish(c) != 0 || out.find("D\n") == std::string::npos) throw Error("bench: python3 episode failed: " + out);
    }
    std::lock_guard<std::mutex> lock(mu);
    s.startup_s.insert(s.startup_s.end(), lat.begin(), lat.end());
  });
  s.steps = static_cast<double>(workers) * episodes * steps;
  return s;
}

// In-process limit: each worker is one python3 looping over step(); rates summed.
double inprocess_steps_per_s(const std::string& file, int workers, int steps) {
  std::vector<double> rate(static_cast<size_t>(workers));
  in_parallel(workers, [&](int w) {
    Child c = spawn_python({"loop", file, std::to_string(steps)});
    std::string out = read_until(c.out, "\n");
    finish(c);
    rate[static_cast<size_t>(w)] = std::atof(out.c_str());
  });
  double sum = 0;
  for (double r : rate) sum += r;
  return sum;
}

int64_t pss_bytes(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  long long kb;
  std::string unit;
  while (f >> key) {
    if (key == "Pss:") {
      f >> kb;
      return kb * 1024;
    }
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

json round3(double v) { return std::round(v * 1000) / 1000; }

}  // namespace

void add_bench_sandbox_command(CLI::App& app) {
  CLI::App* bench = bench_command(app);
  struct Args {
    int episodes = 100, steps = 2000, live = 400, episode_steps = 10, baseline_episodes = 20;
    std::string seed_env = "data/seed_envs/logic/bool_eval.py";
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench->add_subcommand("sandbox", "environment sandbox speed vs python3-per-env and in-process (JSON)");
  cmd->add_option("--episodes", args->episodes, "sandbox episodes per worker");
  cmd->add_option("--baseline-episodes", args->baseline_episodes, "python3-subprocess episodes per worker");
  cmd->add_option("--steps", args->steps, "steps per worker for the steps/s figures");
  cmd->add_option("--episode-steps", args->episode_steps, "steps per episode");
  cmd->add_option("--live", args->live, "live environments held at once for the memory figure");
  cmd->add_option("--seed-env", args->seed_env, "seed environment program");
  cmd->callback([args] {
    auto where = std::make_shared<std::string>();  // the workload, for an allocation failure
    set_action(reporting_allocation_failures("bench sandbox", where, [args, where] {
      const Args& a = *args;
      *where = std::to_string(a.live) + " live environments, " + std::to_string(a.episodes) + " episodes per worker";
      std::string seed_file = resolve_data_path(a.seed_env);
      std::string seed_src = read_file(seed_file);
      char tmpl[] = "/tmp/spade-bench-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) throw Error("bench: mkdtemp failed");
      std::string trivial_file = std::string(tmpl) + "/trivial.py";
      {
        std::ofstream f(trivial_file);
        f << kTrivialEnv;
      }
      envsandbox::SandboxOptions options;
      options.pool_max_tasks = std::max<int64_t>(4096, 2 * a.live + 64);
      envsandbox::EnvServer server(options);
      json results, ratios, targets;
      // The same sandbox with one feature off, 1 busy: no spare children (every start-up forks on the
      // caller's path) and no spinning (every wait blocks in poll()).
      auto variant = [&](const char* what, const std::function<void(envsandbox::SandboxOptions&)>& change) {
        envsandbox::SandboxOptions o = options;
        change(o);
        envsandbox::EnvServer variant_server(o);
        std::fprintf(stderr, "[bench] sandbox %s...\n", what);
        Stats ep = sandbox_episodes(variant_server, kTrivialEnv, 1, a.episodes, a.episode_steps);
        Stats triv = sandbox_steps(variant_server, kTrivialEnv, 1, a.steps);
        return json{{"startup_ms_p50", round3(percentile(ep.startup_s, 0.5) * 1e3)},
                    {"startup_ms_p99", round3(percentile(ep.startup_s, 0.99) * 1e3)},
                    {"episode_steps_per_s", round3(ep.steps / ep.seconds)},
                    {"trivial_steps_per_s", round3(triv.steps / triv.seconds)}};
      };
      json no_spares = variant("without spare children", [](envsandbox::SandboxOptions& o) {
        o.spare_children = 0;
        o.preload_spares = 0;
      });
      json no_spin = variant("without spinning", [](envsandbox::SandboxOptions& o) { o.spin_us = 0; });
      json no_preload = variant("without preloaded spares", [](envsandbox::SandboxOptions& o) { o.preload_spares = 0; });
      // The same sandbox, 1 busy, with a pause before each episode: start-up from a ready spare.
      json paced;
      {
        constexpr int kPauseMs = 100;  // several times a child's start-up on this VM (~20 ms of CPU)
        std::fprintf(stderr, "[bench] sandbox with a %d ms pause before each episode...\n", kPauseMs);
        Stats ep = sandbox_episodes(server, kTrivialEnv, 1, a.episodes, a.episode_steps, kPauseMs);
        paced = {{"pause_ms", kPauseMs},
                 {"startup_ms_p50", round3(percentile(ep.startup_s, 0.5) * 1e3)},
                 {"startup_ms_p99", round3(percentile(ep.startup_s, 0.99) * 1e3)}};
      }
      for (int workers : {1, 2}) {
        std::string key = std::to_string(workers) + "_busy";
        std::fprintf(stderr, "[bench] %d worker(s): sandbox...\n", workers);
        Stats sb_ep = sandbox_episodes(server, kTrivialEnv, workers, a.episodes, a.episode_steps);
        Stats sb_triv = sandbox_steps(server, kTrivialEnv, workers, a.steps);
        Stats sb_seed = sandbox_steps(server, seed_src, workers, a.steps / 2);
        Stats sb_seed_ep = sandbox_episodes(server, seed_src, workers, a.episodes / 2, a.episode_steps);
        std::fprintf(stderr, "[bench] %d worker(s): python3 per environment...\n", workers);
        Stats sp_ep = subprocess_episodes(trivial_file, workers, a.baseline_episodes, a.episode_steps);
        Stats sp_seed_ep = subprocess_episodes(seed_file, workers, a.baseline_episodes, a.episode_steps);
        std::fprintf(stderr, "[bench] %d worker(s): in-process...\n", workers);
        double ip_triv = inprocess_steps_per_s(trivial_file, workers, a.steps * 50);
        double ip_seed = inprocess_steps_per_s(seed_file, workers, a.steps * 10);
        auto method = [&](const Stats& ep, const Stats* triv, const Stats* seed, const Stats& seed_ep,
                          double triv_rate, double seed_rate) {
          return json{{"startup_ms_p50", round3(percentile(ep.startup_s, 0.5) * 1e3)},
                      {"startup_ms_p99", round3(percentile(ep.startup_s, 0.99) * 1e3)},
                      {"episode_steps_per_s", round3(ep.steps / ep.seconds)},
                      {"seed_episode_steps_per_s", round3(seed_ep.steps / seed_ep.seconds)},
                      {"trivial_steps_per_s", round3(triv ? triv->steps / triv->seconds : triv_rate)},
                      {"seed_steps_per_s", round3(seed ? seed->steps / seed->seconds : seed_rate)}};
        };
        json sb = method(sb_ep, &sb_triv, &sb_seed, sb_seed_ep, 0, 0);
        json sp = json{{"startup_ms_p50", round3(percentile(sp_ep.startup_s, 0.5) * 1e3)},
                       {"startup_ms_p99", round3(percentile(sp_ep.startup_s, 0.99) * 1e3)},
                       {"episode_steps_per_s", round3(sp_ep.steps / sp_ep.seconds)},
                       {"seed_episode_steps_per_s", round3(sp_seed_ep.steps / sp_seed_ep.seconds)}};
        json ip = json{{"trivial_steps_per_s", round3(ip_triv)}, {"seed_steps_per_s", round3(ip_seed)}};
        results[key] = {{"sandbox", sb}, {"subprocess", sp}, {"inprocess", ip}};
        ratios[key] = {
            {"episode_steps_vs_subprocess", round3(sb["episode_steps_per_s"].get<double>() / sp["episode_steps_per_s"].get<double>())},
            {"seed_episode_steps_vs_subprocess",
             round3(sb["seed_episode_steps_per_s"].get<double>() / sp["seed_episode_steps_per_s"].get<double>())},
            {"trivial_steps_vs_inprocess", round3(sb["trivial_steps_per_s"].get<double>() / ip_triv)},
            {"seed_steps_vs_inprocess", round3(sb["seed_steps_per_s"].get<double>() / ip_seed)},
            {"startup_p50_vs_subprocess", round3(sp["startup_ms_p50"].get<double>() / sb["startup_ms_p50"].get<double>())}};
        targets[key] = {{"startup_p50_le_2ms", sb["startup_ms_p50"].get<double>() <= 2.0},
                        {"episode_steps_ge_30x_subprocess", ratios[key]["episode_steps_vs_subprocess"].get<double>() >= 30},
                        {"trivial_steps_ge_25pct_inprocess", ratios[key]["trivial_steps_vs_inprocess"].get<double>() >= 0.25}};
      }
      // The floor of any design with one process per environment, on this machine.
      double fork_s = 0;
      {
        Child c = spawn_python({"fork", "-", "300"});
        fork_s = std::atof(read_until(c.out, "\n").c_str());
        finish(c);
      }
      // Live environments held at once.
      std::fprintf(stderr, "[bench] %d live environments...\n", a.live);
      json live;
      {
        int64_t before = server.pool_memory_bytes();
        std::vector<std::unique_ptr<envsandbox::EnvInstance>> envs;
        auto t0 = Clock::now();
        for (int i = 0; i < a.live; ++i) {
          envs.push_back(server.spawn());
          if (!envs.back()->load(kTrivialEnv).ok() || !envs.back()->reset(i).ok()) throw Error("bench: live env failed");
        }
        double spawn_s = since(t0);
        int64_t pss = 0;
        for (int pid : server.pool_pids()) pss += pss_bytes(pid);
        int64_t charged = server.pool_memory_bytes();
        live = {{"environments", a.live},
                {"spawn_load_reset_all_s", round3(spawn_s)},
                {"pool_cgroup_bytes", charged},
                {"pool_cgroup_bytes_before", before},
                {"pool_pss_bytes", pss},
                {"pool_processes", server.pool_pids().size()},
                {"under_4GiB", (charged > 0 ? charged : pss) < (int64_t{4} << 30)}};
      }
      unlink(trivial_file.c_str());
      rmdir(tmpl);
      utsname u{};
      uname(&u);
      char date[64];
      std::time_t now = std::time(nullptr);
      std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
      json out = {{"date", date},
                  {"machine", {{"cpus", std::thread::hardware_concurrency()}, {"cpu", cpu_model()},
                               {"kernel", std::string(u.release)}}},
                  {"isolation", server.isolation().to_json()},
                  {"spare_children", options.spare_children},
                  {"spin_us", options.spin_us},
                  {"sandbox_without_spares_1_busy", no_spares},
                  {"sandbox_without_spin_1_busy", no_spin},
                  {"preload_spares", options.preload_spares},
                  {"sandbox_without_preload_1_busy", no_preload},
                  {"sandbox_paced_1_busy", paced},
                  {"config", {{"episodes", a.episodes}, {"baseline_episodes", a.baseline_episodes},
                              {"steps", a.steps}, {"episode_steps", a.episode_steps}, {"seed_env", a.seed_env}}},
                  {"python3_fork_exit_wait_ms", round3(fork_s * 1e3)},
                  {"results", results},
                  {"ratios", ratios},
                  {"targets", targets},
                  {"live", live}};
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }));
  });
}

}  // namespace spade::apps
