// `spade train --nproc N`: N local ranks of this very binary with the torchrun environment, for
// convenience on one machine (torchrun --no-python --nproc-per-node N spade train ... does the same;
// scripts/launch/). Torch-free. Not thread-safe (installs process-wide signal handlers while running).
#pragma once
#include <string>
#include <vector>

namespace spade::trainer {

/// Starts `nproc` children running `/proc/self/exe args...`, each with this process's environment
/// plus MASTER_ADDR=127.0.0.1, MASTER_PORT=<a free local port>, RANK=r, WORLD_SIZE=nproc,
/// LOCAL_RANK=r, LOCAL_WORLD_SIZE=nproc (any SLURM_* / TORCHELASTIC_* variables removed), and waits.
/// SIGINT, SIGTERM and SIGHUP received meanwhile are forwarded to every rank. When a rank fails (non-zero
/// exit or a signal), the others get SIGTERM, then SIGKILL after `grace_s` seconds.
/// Returns 0 when every rank exited 0, else the first failing rank's exit code (128 + signal when
/// killed). One line per failing rank goes to stderr. Throws spade::Error when nproc < 1 or a spawn fails.
int launch_local_ranks(int nproc, const std::vector<std::string>& args, double grace_s = 10.0);

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released). Throws
/// spade::Error when no socket can be bound.
int free_local_port();

}  // namespace spade::trainer
