// EnvServer::spawn_loaded: children with the program already loaded ahead of the caller (preloaded
// spares, protocol.h / envd_zygote.h), and the frame reader's spin-then-block wait (frame.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "envsandbox/frame.h"
#include "envsandbox/sandbox.h"
#include "test_util.h"

namespace spade::envsandbox {
namespace {

// CLOCK_MONOTONIC in seconds: the same clock inside the sandbox (time.monotonic(); a pid or mount
// namespace does not change it), so a program can tell when it was loaded.
double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// `name`Env records when its module ran and counts its instances (a class attribute, so a second
// instance in the same process would see 2).
std::string stamped_program(const std::string& name) {
  return "import time\n"
         "LOADED_AT = time.monotonic()\n"
         "class " + name + "Env:\n"
         "    made = 0\n"
         "    def __init__(self, max_turns=5):\n"
         "        type(self).made += 1\n"
         "        self.max_turns = max_turns\n"
         "    def reset(self, seed=None):\n"
         "        return '%s %r %d' % ('" + name + "', LOADED_AT, type(self).made), {}\n"
         "    def step(self, action):\n"
         "        return 'ok', 0.0, True, False, {}\n";
}

struct Stamp {
  std::string name;
  double loaded_at = 0;
  int instances = 0;
};

// Waits (up to 10 s) until the pool holds `processes` processes, i.e. the zygote has refilled its
// spares; without a pids cgroup to count with, waits 1 s.
void wait_for_refill(EnvServer& server, size_t processes) {
  if (server.isolation().cgroup_pids_dir.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return;
  }
  for (int i = 0; i < 1000 && server.pool_pids().size() < processes; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The last one, counted from its fork, must still confine itself (its own namespaces, tmpfs and
  // /proc since issue 24), warm up and load the program: 55-65 ms from fork to load measured under a
  // load average of 3 on the 2-core build machines (2026-12-04), where 50 ms failed half the time.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

// bwrap (with namespaces), the process it starts when that only waits for the zygote (per-child
// namespaces, envd_namespaces.h), the zygote, and its plain and preloaded spares.
size_t idle_pool(EnvServer& server) {
  return (server.isolation().namespaces ? 2 : 1) + (server.isolation().child_namespaces ? 1 : 0) +
         static_cast<size_t>(server.options().spare_children) +
         static_cast<size_t>(server.options().preload_spares);
}

Stamp play(EnvServer& server, const std::string& source, int max_turns_cap = 25) {
  CallResult load;
  auto env = server.spawn_loaded(source, max_turns_cap, &load);
  EXPECT_TRUE(load.ok()) << load.detail;
  CallResult reset = env->reset(0);
  EXPECT_TRUE(reset.ok()) << reset.detail;
  Stamp s;
  char name[64] = {0};
  double at = 0;
  int made = 0;
  if (reset.ok() && std::sscanf(reset.value.items()[0].as_str().c_str(), "%63s %lf %d", name, &at, &made) == 3) {
    s.name = name;
    s.loaded_at = at;
    s.instances = made;
  }
  EXPECT_EQ(env->max_turns(), std::min(5, max_turns_cap));  // load()'s reply reached the host intact
  return s;
}

SandboxOptions preload_options(int preload_spares) {
  SandboxOptions o = testing::fast_options();
  o.preload_spares = preload_spares;
  return o;
}

TEST(Preload, LaterPlaysOfOneProgramFindItLoadedAheadOfTheCall) {
  EnvServer server(preload_options(2));
  std::string source = stamped_program("Alpha");
  play(server, source);  // first request: nothing preloaded yet; asks for 2 preloaded spares
  int ahead = 0;
  for (int i = 0; i < 4; ++i) {
    wait_for_refill(server, idle_pool(server));
    double asked_at = monotonic_s();
    Stamp s = play(server, source);
    EXPECT_EQ(s.name, "Alpha");
    EXPECT_EQ(s.instances, 1);  // one instance per process: nothing shared between plays
    if (s.loaded_at > 0 && s.loaded_at < asked_at) ++ahead;
  }
  EXPECT_EQ(ahead, 4) << "each play after a pause should get a child that loaded the program before the call";
}

TEST(Preload, AnotherProgramIsNeverServedFromTheOldOnesSpares) {
  EnvServer server(preload_options(2));
  std::string a = stamped_program("Alpha"), b = stamped_program("Beta");
  for (int i = 0; i < 2; ++i) play(server, a);
  wait_for_refill(server, idle_pool(server));
  double asked_at = monotonic_s();
  Stamp s = play(server, b);
  EXPECT_EQ(s.name, "Beta");
  EXPECT_GT(s.loaded_at, asked_at);  // loaded on the caller's path: no Beta spare existed yet
  // The same source with another max_turns cap is another load request.
  wait_for_refill(server, idle_pool(server));
  Stamp capped = play(server, b, 3);
  EXPECT_EQ(capped.name, "Beta");
  // Alternating programs keeps giving the right one.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(play(server, i % 2 ? a : b).name, i % 2 ? "Alpha" : "Beta");
}

TEST(Preload, FailedLoadsReportTheSameWithAndWithoutPreloading) {
  const std::string broken = "class BrokenEnv:\n    def reset(self, seed=None)\n        return 'x', {}\n";
  const std::string raising = "class RaisingEnv:\n    def __init__(self):\n        raise ValueError('no')\n";
  for (int spares : {0, 2}) {
    EnvServer server(preload_options(spares));
    int preloaded = 0, plays = 0;
    for (const std::string* source : {&broken, &broken, &broken, &raising, &raising, &raising}) {
      if (plays++ > 0) wait_for_refill(server, idle_pool(server));  // spares exist after the first spawn
      CallResult load;
      auto env = server.spawn_loaded(*source, 25, &load);
      preloaded += env->preloaded();
      EXPECT_EQ(load.status, CallStatus::kException) << "preload_spares " << spares << ": " << load.detail;
      if (source == &broken) {
        EXPECT_EQ(load.stage, "compile");
        EXPECT_EQ(load.exception_type, "SyntaxError");
      } else {
        EXPECT_EQ(load.stage, "init");
        EXPECT_EQ(load.exception_type, "ValueError");
        EXPECT_NE(load.message.find("no"), std::string::npos);
      }
    }
    // Preloading: the 2nd and 3rd play of each program came from a preloaded child.
    EXPECT_EQ(preloaded, spares > 0 ? 4 : 0);
  }
}

// A program that starts hanging at load after a given time (CLOCK_MONOTONIC, shared with the
// sandbox): the plays before it come from spares preloaded in time; the first preloaded spare loaded
// after it hangs, times out after the full deadline counted from the hand-over, and the program is
// never preloaded again.
TEST(Preload, AProgramThatHangsWhileLoadingTimesOutFromTheHandOver) {
  SandboxOptions o = preload_options(2);
  o.load_timeout_s = 1;
  EnvServer server(o);
  const double hang_after = monotonic_s() + 2.0;
  char source[512];
  std::snprintf(source, sizeof source,
                "import time\n"
                "if time.monotonic() > %.6f:\n"
                "    while True:\n"
                "        pass\n"
                "class LateHangEnv:\n"
                "    def reset(self, seed=None):\n"
                "        return 'ok', {}\n"
                "    def step(self, action):\n"
                "        return 'ok', 0.0, True, False, {}\n",
                hang_after);
  auto play_once = [&](CallResult* load) {
    auto env = server.spawn_loaded(source, 25, load);
    return env->preloaded();
  };
  CallResult load;
  EXPECT_FALSE(play_once(&load));  // nothing preloaded yet; loads before hang_after
  ASSERT_TRUE(load.ok()) << load.detail;
  wait_for_refill(server, idle_pool(server));  // spares A and B load before hang_after
  while (monotonic_s() < hang_after + 0.2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int i = 0; i < 2; ++i) {  // A, then B: loaded in time; each is replaced by one that hangs
    EXPECT_TRUE(play_once(&load));
    EXPECT_TRUE(load.ok()) << load.detail;
    wait_for_refill(server, idle_pool(server));
  }
  EXPECT_TRUE(play_once(&load));  // C: preloaded, hanging since its fork
  EXPECT_EQ(load.status, CallStatus::kTimeout) << load.detail;
  EXPECT_GE(load.seconds, 0.9);  // the full deadline, counted from the hand-over
  EXPECT_LT(load.seconds, 3.0);
  EXPECT_FALSE(play_once(&load));  // never preloaded again; loads (and hangs) on the caller's path
  EXPECT_EQ(load.status, CallStatus::kTimeout) << load.detail;
  // The pool still serves a good program afterwards.
  EXPECT_EQ(play(server, stamped_program("Gamma")).name, "Gamma");
}

// frame.h: a spinning reader gets a frame written while it spins and one written after it blocked,
// and honours its deadline.
TEST(Frame, SpinningReaderGetsEarlyAndLateFramesAndTimesOut) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  for (int delay_us : {0, 20, 5000}) {
    std::thread writer([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      write_frame(sv[1], "payload-" + std::to_string(delay_us), deadline_after(1));
    });
    std::string got;
    SpinBudget spin(100);
    EXPECT_EQ(read_frame(sv[0], 1024, deadline_after(2), &got, nullptr, nullptr, nullptr, &spin), FrameStatus::kOk);
    EXPECT_EQ(got, "payload-" + std::to_string(delay_us));
    writer.join();
  }
  std::string got;
  auto t0 = Clock::now();
  SpinBudget long_spin(1000000);
  EXPECT_EQ(read_frame(sv[0], 1024, deadline_after(0.05), &got, nullptr, nullptr, nullptr, &long_spin),
            FrameStatus::kTimeout);  // a spin longer than the deadline stops at the deadline
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  close(sv[0]);
  close(sv[1]);
}

// The policy documented in frame.h, step by step: spin at full budget while replies arrive within it;
// after one that did not, block, and probe with one full spin every kProbeEvery waits.
TEST(Frame, SpinBudgetDropsTheSpinWhenWaitsOutlastItAndProbesAgain) {
  SpinBudget off(0);
  EXPECT_EQ(off.next(), 0);
  SpinBudget b(50);
  EXPECT_EQ(b.next(), 50);
  b.record(true);
  EXPECT_EQ(b.next(), 50);
  b.record(false);  // the reply came after the spin: stop spinning
  EXPECT_FALSE(b.spinning());
  for (int i = 1; i < SpinBudget::kProbeEvery; ++i) EXPECT_EQ(b.next(), 0) << "wait " << i;
  EXPECT_EQ(b.next(), 50);  // the probe
  b.record(false);
  for (int i = 1; i < SpinBudget::kProbeEvery; ++i) EXPECT_EQ(b.next(), 0);
  EXPECT_EQ(b.next(), 50);
  b.record(true);  // the probe caught its reply: spin again
  EXPECT_TRUE(b.spinning());
  EXPECT_EQ(b.next(), 50);
}

}  // namespace
}  // namespace spade::envsandbox
