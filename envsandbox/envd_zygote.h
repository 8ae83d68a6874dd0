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
#pragma once
#include <sys/types.h>

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "envsandbox/envd_child.h"
#include "envsandbox/envd_prelude.h"
#include "envsandbox/envd_seccomp.h"

namespace spade::envsandbox::envd {

class Zygote {
 public:
  /// `control_fd`: the channel to the host. `tmp_root`: an existing private directory that will hold
  /// one working directory per child (removed at exit). Compiles the seccomp filter once.
  Zygote(int control_fd, const Prelude& prelude, std::string tmp_root);

  /// Sends the "ready" message, then serves requests until the host closes the channel. Returns the
  /// process exit status.
  int run();

 private:
  struct Child {
    std::string workdir;
    bool reaped = false;
    int wait_status = 0;
    bool released = false;
  };

  nlohmann::json handle(const nlohmann::json& request, int* pass_fd);
  nlohmann::json spawn(const nlohmann::json& limits, int spares, int* pass_fd);
  // Forks one confined child with `limits`; on success fills *pid and *fd (the zygote's end of its
  // channel) and returns "", else the error text.
  // `warm`: a spare (run_child's warm-up).
  std::string fork_child(const ChildLimits& limits, pid_t* pid, int* fd, bool warm = false);
  // Forks spares until spare_target_ are waiting, stopping early when a request arrives.
  void refill_spares();
  void drop_spares();
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
  };
  std::deque<Spare> spares_;
  nlohmann::json spare_limits_;  // the limits every spare was forked with
  size_t spare_target_ = 0;
  bool spare_fork_failed_ = false;  // stop refilling until the next spawn request
  SeccompFilter filter_;
};

}  // namespace spade::envsandbox::envd
