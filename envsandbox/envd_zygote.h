// spade-envd: the zygote loop. Single-threaded; serves the control channel of protocol.h, forks one
// child per "spawn", reaps children through a signalfd for SIGCHLD, keeps each child's wait status until
// the host releases it, and removes each child's working directory once it is reaped. When the host
// closes the channel it kills and reaps every child, removes its temporary root and exits.
#pragma once
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

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
  nlohmann::json spawn(const nlohmann::json& limits, int* pass_fd);
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
  SeccompFilter filter_;
};

}  // namespace spade::envsandbox::envd
