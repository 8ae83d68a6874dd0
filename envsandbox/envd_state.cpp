#include "envsandbox/envd_state.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spade::envsandbox::envd {
namespace {

constexpr int kIoprioWhoProcess = 1;

const char* limit_name(int r) {
  static const char* const kNames[RLIM_NLIMITS] = {
      "RLIMIT_CPU",     "RLIMIT_FSIZE", "RLIMIT_DATA",   "RLIMIT_STACK",      "RLIMIT_CORE",  "RLIMIT_RSS",
      "RLIMIT_NPROC",   "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_AS",       "RLIMIT_LOCKS", "RLIMIT_SIGPENDING",
      "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME"};
  return r >= 0 && r < RLIM_NLIMITS ? kNames[r] : "RLIMIT_?";
}

std::string value(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

std::string failed(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::string read_process_state(pid_t pid, ProcessState* out) {
  for (int r = 0; r < RLIM_NLIMITS; ++r)
    if (prlimit(pid, static_cast<__rlimit_resource>(r), nullptr, &out->limits[r]) != 0) return failed("prlimit");
  errno = 0;
  out->nice = getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
  if (errno != 0) return failed("getpriority");
  out->policy = sched_getscheduler(pid);
  if (out->policy < 0) return failed("sched_getscheduler");
  sched_param param{};
  if (sched_getparam(pid, &param) != 0) return failed("sched_getparam");
  out->rt_priority = param.sched_priority;
  CPU_ZERO(&out->affinity);
  if (sched_getaffinity(pid, sizeof(out->affinity), &out->affinity) != 0) return failed("sched_getaffinity");
  long io = syscall(SYS_ioprio_get, kIoprioWhoProcess, pid);
  if (io < 0) return failed("ioprio_get");
  out->ioprio = static_cast<int>(io);
  return "";
}

std::string state_difference(const ProcessState& want, const ProcessState& got) {
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
  for (int r = 0; r < RLIM_NLIMITS; ++r) {
    const rlimit &w = want.limits[r], &g = got.limits[r];
    if (w.rlim_cur != g.rlim_cur || w.rlim_max != g.rlim_max)
      add(std::string(limit_name(r)) + " " + value(g.rlim_cur) + "/" + value(g.rlim_max) + " instead of " +
          value(w.rlim_cur) + "/" + value(w.rlim_max));
  }
  if (want.nice != got.nice) add("nice " + std::to_string(got.nice) + " instead of " + std::to_string(want.nice));
  if (want.policy != got.policy || want.rt_priority != got.rt_priority)
    add("scheduling policy " + std::to_string(got.policy) + "/" + std::to_string(got.rt_priority) + " instead of " +
        std::to_string(want.policy) + "/" + std::to_string(want.rt_priority));
  if (!CPU_EQUAL(&want.affinity, &got.affinity))
    add("CPU affinity of " + std::to_string(CPU_COUNT(&got.affinity)) + " CPUs instead of " +
        std::to_string(CPU_COUNT(&want.affinity)));
  if (want.ioprio != got.ioprio)
    add("I/O priority " + std::to_string(got.ioprio) + " instead of " + std::to_string(want.ioprio));
  return out;
}

std::string restore_own_state(const ProcessState& want) {
  ProcessState now;
  std::string error = read_process_state(0, &now);
  if (!error.empty()) return error;
  if (state_difference(want, now).empty()) return "";
  // Each step may fail (raising a hard limit or lowering nice needs privilege); the re-read decides.
  for (int r = 0; r < RLIM_NLIMITS; ++r)
    if (now.limits[r].rlim_cur != want.limits[r].rlim_cur || now.limits[r].rlim_max != want.limits[r].rlim_max)
      setrlimit(static_cast<__rlimit_resource_t>(r), &want.limits[r]);
  if (now.policy != want.policy || now.rt_priority != want.rt_priority) {
    sched_param param{};
    param.sched_priority = want.rt_priority;
    sched_setscheduler(0, want.policy, &param);
  }
  if (now.nice != want.nice) setpriority(PRIO_PROCESS, 0, want.nice);
  if (!CPU_EQUAL(&now.affinity, &want.affinity)) sched_setaffinity(0, sizeof(want.affinity), &want.affinity);
  if (now.ioprio != want.ioprio) syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, want.ioprio);
  error = read_process_state(0, &now);
  if (!error.empty()) return error;
  return state_difference(want, now);
}

bool child_is_stopped(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == pid && (info.si_code == CLD_STOPPED || info.si_code == CLD_TRAPPED);
}

}  // namespace spade::envsandbox::envd
