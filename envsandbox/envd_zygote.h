// spade-envd: the zygote loop. Single-threaded; serves the control channel of protocol.h, forks one
// child per "spawn", reaps children through a signalfd for SIGCHLD, keeps each child's wait status until
// the host releases it, and removes each child's working directory once it is reaped. When the host
// closes the channel it kills and reaps every child, removes its temporary root and exits.
//
// Spare children: a spawn request may ask for "spares": K. After answering it, while no other request
// is waiting, the zygote forks up to K more children with the same limits; each confines itself and
// sends its hello, then blocks on its channel. The next spawn with identical limits hands a spare over
// (no fork on the request's path: start-up is then load + reset only); a spawn with different limits
// kills the spares and forks afresh. A spare is an ordinary child from the start (reaped, killed and
// cleaned up like any other), idle until handed over: it uses no CPU, so RLIMIT_CPU is unaffected, and
// its RLIMIT_AS is computed from the zygote's size at its fork, exactly as for an on-demand child.
//
// Preloaded spares: a spawn may carry "preload" (a child-channel load request, as the host would send
// it) and "preload_spares": M. After the plain spares are refilled, the zygote forks up to M more and
// writes the load request into each one's channel, from the host's side; the spare loads the program
// while it waits and its reply stays in the socket for the host. The next spawn with the same preload
// gets such a spare ("loaded": true): start-up is then the hand-over and reset() only. The zygote never
// reads a child's channel (a child's bytes are untrusted and only the host parses them). A spawn with
// another preload (or "" to clear) kills the preloaded spares of the old one; a spawn without one
// leaves them. A preloaded spare has run the program's top level and __init__ (and, when idle, its
// warm-up: envd_child.h WarmUp) before its hand-over: that CPU time counts against its RLIMIT_CPU, and
// the host's load deadline starts at the hand-over.
//
// Neighbours (issue 24). With per-child namespaces (envd_namespaces.h) every child is pid 1 of its own
// pid namespace with its own IPC and mount namespaces and /tmp: it can name no other process, and its
// work dir is created with it, empty, seen by nobody else. Whatever the layers, the zygote does not
// trust that it and its spares are as it left them (envd_state.h):
//   - before serving a spawn it compares its own limits and scheduling with those it started with and
//     restores them; when it cannot (a lowered hard limit, a raised nice), or when fork() fails, it
//     answers {"error":..., "retire":true}: the host starts a new zygote for the next children and
//     keeps this one only for the children it already handed over;
//   - before handing a spare over it checks that the spare is not stopped, that its limits and
//     scheduling are those it was given and (without own namespaces) that its work dir is still empty;
//     a spare that fails is killed and the next one (or a fresh fork) is used.
#pragma once
#include <sys/types.h>

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "envsandbox/envd_child.h"
#include "envsandbox/envd_namespaces.h"
#include "envsandbox/envd_prelude.h"
#include "envsandbox/envd_seccomp.h"
#include "envsandbox/envd_state.h"

namespace spade::envsandbox::envd {

class Zygote {
 public:
  /// `control_fd`: the channel to the host. `tmp_root`: without per-child namespaces, an existing private
  /// directory that will hold one working directory per child (removed at exit); "" with them.
  /// `namespaces`: active when children get their own namespaces, else `namespaces_error` says why not.
  /// Records its own limits and scheduling (the state it restores) and compiles the seccomp filter once.
  Zygote(int control_fd, const Prelude& prelude, std::string tmp_root, ChildNamespaces namespaces,
         std::string namespaces_error);

  /// Sends the "ready" message, then serves requests until the host closes the channel. Returns the
  /// process exit status.
  int run();

 private:
  struct Child {
    std::string workdir;  // "" with own namespaces (its /tmp dies with it)
    ChildSetup setup;     // what it was given (a spare is checked against it before its hand-over)
    bool reaped = false;
    int wait_status = 0;
    double cpu_s = 0;     // user + system CPU time, once reaped
    bool released = false;
  };

  nlohmann::json handle(const nlohmann::json& request, int* pass_fd);
  nlohmann::json spawn(const nlohmann::json& request, int* pass_fd);
  // Forks one confined child with `limits`; on success fills *pid and *fd (the zygote's end of its
  // channel) and returns "", else the error text.
  // `warm`: when the child warms up (a spare; envd_child.h WarmUp).
  std::string fork_child(const ChildLimits& limits, pid_t* pid, int* fd, WarmUp warm = WarmUp::kNone);
  // Forks spares until spare_target_ plain and preload_target_ preloaded ones are waiting, stopping
  // early when a request arrives.
  void refill_spares();
  // Kills the spares whose preload is `preload` (all spares when null).
  void drop_spares(const std::string* preload = nullptr);
  // Takes the first live, intact spare with this preload ("" = plain) off the list (killing those found
  // dead, stopped or altered); false when none.
  bool take_spare(const std::string& preload, pid_t* pid, int* fd);
  struct Spare;
  // Why `spare` must not be handed over ("" when it may).
  std::string spare_problem(const Spare& spare);
  nlohmann::json status(pid_t pid);
  nlohmann::json kill_child(pid_t pid, bool release);
  void reap();
  void shutdown();

  int control_fd_;
  int signal_fd_ = -1;
  const Prelude& prelude_;
  std::string tmp_root_;
  pid_t self_;
  std::map<pid_t, Child> children_;
  struct Spare {
    pid_t pid;
    int fd;
    std::string preload;  // the load request written to its channel; "" for a plain spare
  };
  std::deque<Spare> spares_;
  nlohmann::json spare_limits_;  // the limits every spare was forked with
  size_t spare_target_ = 0;
  std::string preload_;          // the current preload request ("" = none)
  size_t preload_target_ = 0;
  bool spare_fork_failed_ = false;  // stop refilling until the next spawn request
  ChildNamespaces namespaces_;
  std::string namespaces_error_;
  ProcessState own_state_;          // as at start: restored before every spawn
  int64_t vm_base_ = 0;             // RLIMIT_AS base of children: the zygote's size, in 64 MiB steps
  SeccompFilter filter_;
};

}  // namespace spade::envsandbox::envd
