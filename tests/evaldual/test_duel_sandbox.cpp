// Workspace sandbox: commands that misbehave are contained (issue 6 "an agent that runs rm -rf /,
// forks forever or spins is contained").
#include <gtest/gtest.h>

#include <dirent.h>

#include <filesystem>
#include <fstream>

#include "common/atomic_file.h"
#include "evaldual/workspace_sandbox.h"
#include "tests/evaldual/duel_test_util.h"

namespace fs = std::filesystem;
using namespace spade::evaldual;
using spade::evaldual::testing::fresh_dir;
using spade::evaldual::testing::put;

namespace {

// Host processes whose command line contains `needle`.
int count_processes(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos && cmd.find("spade-duel-launch") == std::string::npos) ++n;
  }
  return n;
}

SandboxLimits quick(double timeout_s) {
  SandboxLimits l;
  l.timeout_s = timeout_s;
  l.max_processes = 64;
  l.memory_bytes = 256LL << 20;
  return l;
}

}  // namespace

TEST(DuelSandbox, RunsInWorkspaceWithoutNetwork) {
  std::string ws = fresh_dir("ws");
  put(ws, "in.txt", "hello\n");
  WorkspaceSandbox sb(ws);
  CommandResult r = sb.run("pwd; cat in.txt; echo out > out.txt; ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1", quick(20));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("/workspace\nhello\n"), std::string::npos) << r.output;
  EXPECT_EQ(spade::read_file(ws + "/out.txt"), "out\n");
  EXPECT_EQ(r.output.find("eth"), std::string::npos) << "a network interface is visible: " << r.output;
  EXPECT_FALSE(r.timed_out);
}

TEST(DuelSandbox, ExitCodeAndCappedOutput) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  SandboxLimits l = quick(20);
  l.output_cap_bytes = 4096;
  CommandResult r = sb.run("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo THE-END; exit 7", l);
  EXPECT_EQ(r.rc, 7);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_LT(r.output.size(), 4200u);
  EXPECT_NE(r.output.find("THE-END"), std::string::npos);  // the tail is kept
  EXPECT_NE(r.output.find("bytes elided"), std::string::npos);
}

TEST(DuelSandbox, SpinningCommandIsKilledAtTheDeadline) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  CommandResult r = sb.run("while :; do :; done", quick(1.0));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.rc, -1);
  EXPECT_LT(r.seconds, 5.0);
}

TEST(DuelSandbox, ForkBombIsCappedAndCleanedUp) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  SandboxInfo info = WorkspaceSandbox::probe();
  // Each child runs `sleep 9731` so leftovers are recognisable on the host.
  CommandResult r = sb.run("bomb() { sleep 9731 & bomb & bomb; }; bomb", quick(2.0));
  // Either fork starts failing at pids.max and the shell gives up, or the deadline kills it; in both
  // cases the pid namespace and the cgroup are emptied before run() returns.
  EXPECT_TRUE(r.timed_out || r.rc != 0) << r.output;
  EXPECT_LT(r.seconds, 6.0);
  if (info.pids_cgroup) {
    EXPECT_EQ(r.output.find("sleep 9731"), std::string::npos);
  }
  EXPECT_EQ(count_processes("sleep 9731"), 0);
}

TEST(DuelSandbox, BackgroundProcessesDoNotOutliveTheCommand) {
  WorkspaceSandbox sb(fresh_dir("ws"));
  CommandResult r = sb.run("(sleep 9737 &) ; nohup sleep 9737 >/dev/null 2>&1 & echo started", quick(20));
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_EQ(count_processes("sleep 9737"), 0);
}

TEST(DuelSandbox, WritesOutsideTheWorkspaceFail) {
  std::string outside = fresh_dir("outside");
  put(outside, "keep.txt", "keep\n");
  std::string ws = fresh_dir("ws");
  WorkspaceSandbox sb(ws);
  CommandResult r = sb.run(
      "echo x > /usr/spade-evil 2>/dev/null && echo WROTE-USR; "
      "echo x > " + outside + "/keep.txt 2>/dev/null && echo WROTE-OUTSIDE; "
      "echo x > /tmp/t && echo TMP-OK; cat /etc/shadow 2>/dev/null && echo READ-SHADOW; "
      "ls /root 2>/dev/null && echo SAW-ROOT; true",
      quick(20));
  EXPECT_EQ(r.output.find("WROTE-USR"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("WROTE-OUTSIDE"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("READ-SHADOW"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("SAW-ROOT"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("TMP-OK"), std::string::npos) << r.output;  // private tmpfs
  EXPECT_FALSE(fs::exists("/usr/spade-evil"));
  EXPECT_EQ(spade::read_file(outside + "/keep.txt"), "keep\n");
}

TEST(DuelSandbox, RmRfRootIsContained) {
  std::string outside = fresh_dir("outside");
  put(outside, "sentinel", "alive\n");
  std::string ws = fresh_dir("ws");
  put(ws, "victim.txt", "bye\n");
  WorkspaceSandbox sb(ws);
  // First prove the system is read-only inside: only then run the real thing.
  CommandResult probe = sb.run("touch /usr/probe 2>&1; echo rc=$?", quick(20));
  ASSERT_NE(probe.output.find("rc=1"), std::string::npos) << probe.output;
  // The workspace first (the agent's own to destroy), then everything: rm walks all of /usr failing
  // (~10 s), so the deadline ends it; nothing outside the workspace is touched either way.
  CommandResult r = sb.run("rm -rf --no-preserve-root /workspace/* / 2>/dev/null; echo done", quick(3));
  EXPECT_FALSE(fs::exists(ws + "/victim.txt"));
  EXPECT_EQ(spade::read_file(outside + "/sentinel"), "alive\n");
  EXPECT_TRUE(fs::exists("/usr/bin/sh"));
  EXPECT_TRUE(fs::exists("/bin/sh"));
}

TEST(DuelSandbox, MemoryCapStopsAHog) {
  SandboxInfo info = WorkspaceSandbox::probe();
  WorkspaceSandbox sb(fresh_dir("ws"));
  SandboxLimits l = quick(20);
  l.memory_bytes = 64LL << 20;
  // python3 allocates 512 MB and touches it.
  CommandResult r = sb.run("python3 -c 'b = bytearray(512 << 20); b[::4096] = b\"x\" * (len(b) // 4096); print(\"ALLOCATED\")'", l);
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_EQ(r.output.find("ALLOCATED"), std::string::npos) << r.output;
  if (info.memory_cgroup) {
    EXPECT_TRUE(r.oom_killed || r.rc != 0);
  }
}

TEST(DuelSandbox, ProbeReportsLayers) {
  SandboxInfo info = WorkspaceSandbox::probe();
  EXPECT_TRUE(info.bwrap) << info.detail;
}

// The versioned toolchain configuration in /etc is visible under whatever version the distribution
// has (Debian 12: /etc/python3.11, /etc/java-17-openjdk; Debian 13: /etc/python3.13,
// /etc/java-21-openjdk, whose JVM dies without its java.security there). The expected list is the
// host's own shell glob, not the sandbox's name filter.
TEST(DuelSandbox, VersionedToolchainConfigurationIsVisible) {
  const std::string list = "for d in /etc/python3.* /etc/java-*-openjdk; do [ -d \"$d\" ] && echo \"$d\"; done; true";
  FILE* p = popen(("sh -c '" + list + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string host;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) host += buf;
  pclose(p);
  if (host.empty()) GTEST_SKIP() << "no /etc/python3.* or /etc/java-*-openjdk directory on this machine";
  WorkspaceSandbox sb(fresh_dir("ws"));
  CommandResult r = sb.run(list, quick(20));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(r.output, host);
}
