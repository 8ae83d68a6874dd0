#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "envsandbox/isolation.h"
#include "envsandbox/protocol.h"
#include "envsandbox/zygote_process.h"

using nlohmann::json;

namespace spade::envsandbox {

void check_namespaces_mode(const std::string& mode) {
  if (mode != "auto" && mode != "require" && mode != "off")
    throw Error("namespaces must be auto, require or off, not '" + mode + "'");
}

namespace {

void check_options(const SandboxOptions& o) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw Error("invalid SandboxOptions: " + what);
  };
  require(o.startup_timeout_s > 0, "startup_timeout_s must be > 0");
  require(o.load_timeout_s > 0, "load_timeout_s must be > 0");
  require(o.call_timeout_s > 0, "call_timeout_s must be > 0");
  require(o.memory_limit_bytes >= (int64_t{16} << 20), "memory_limit_bytes must be >= 16 MiB");
  require(o.cpu_limit_s >= 1, "cpu_limit_s must be >= 1");
  require(o.max_open_files >= 8, "max_open_files must be >= 8");
  require(o.file_size_limit_bytes >= 0, "file_size_limit_bytes must be >= 0");
  require(o.max_output_bytes >= 0, "max_output_bytes must be >= 0");
  require(o.max_reply_bytes >= o.max_output_bytes + (int64_t{64} << 10),
          "max_reply_bytes must exceed max_output_bytes by at least 64 KiB");
  require(o.max_obs_chars >= 1, "max_obs_chars must be >= 1");
  check_namespaces_mode(o.namespaces);
  require(o.tmpfs_bytes >= (int64_t{1} << 20), "tmpfs_bytes must be >= 1 MiB");
  require(o.sandbox_uid > 0 && o.sandbox_gid > 0, "sandbox_uid and sandbox_gid must be > 0 (not root)");
  require(o.pool_memory_bytes == 0 || o.pool_memory_bytes >= (int64_t{64} << 20),
          "pool_memory_bytes must be 0 (half of MemTotal) or >= 64 MiB");
  require(o.pool_max_tasks >= 16, "pool_max_tasks must be >= 16");
  require(o.spare_children >= 0 && o.spare_children <= protocol::kMaxSpares, "spare_children must be in [0, 64]");
  require(o.preload_spares >= 0 && o.preload_spares <= protocol::kMaxSpares, "preload_spares must be in [0, 64]");
  require(o.spin_us >= 0 && o.spin_us <= 10000, "spin_us must be in [0, 10000] microseconds");
  for (const std::string& b : o.extra_ro_binds)
    require(!b.empty() && b[0] == '/', "extra_ro_binds entries must be absolute paths");
}

int64_t half_of_ram() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 2 : int64_t{4} << 30;
}

}  // namespace

EnvServer::EnvServer(SandboxOptions options) : options_(std::move(options)) {
  check_options(options_);
  envd_path_ = detail::locate_envd(options_.envd_path);
  int64_t pool_memory = options_.pool_memory_bytes > 0 ? options_.pool_memory_bytes : half_of_ram();
  std::string cgroup_note = "disabled by SandboxOptions::cgroups";
  if (options_.cgroups) {
    cgroup_ = detail::PoolCgroup::create(pool_memory, options_.pool_max_tasks, &cgroup_note);
    if (cgroup_) cgroup_note.clear();
  }
  detail::LaunchPlan plan = detail::plan_launch(options_, envd_path_, cgroup_.get());
  launch_argv_ = plan.argv;
  isolation_ = plan.info;
  isolation_.cgroup_note = cgroup_note;
  if (cgroup_) {
    isolation_.pool_memory_bytes = pool_memory;
    isolation_.pool_max_tasks = options_.pool_max_tasks;
  }
  zygote_ = start_zygote();
  const json& ready = zygote_->ready();
  isolation_.seccomp = options_.seccomp && ready.value("seccomp", false);
  isolation_.child_namespaces = ready.value("child_namespaces", false);
  isolation_.child_namespaces_reason =
      isolation_.child_namespaces ? ""
      : !options_.child_namespaces ? "disabled by SandboxOptions::child_namespaces"
      : !isolation_.namespaces     ? "no bubblewrap namespaces (" + isolation_.fallback_reason + ")"
                                   : ready.value("child_namespaces_error", std::string("unknown"));
  if (isolation_.namespaces && options_.child_namespaces && !isolation_.child_namespaces)
    detail::warn_once("child namespaces: " + isolation_.child_namespaces_reason,
                      "spade-envd: WARNING: environments run in the pool's namespaces but not each in its own (" +
                          isolation_.child_namespaces_reason +
                          "): they share the pool's /tmp (one environment can read and write another's work "
                          "dir) and see each other's pids in /proc; SysV/POSIX IPC objects cannot be created "
                          "and /dev/shm is read-only; seccomp still denies every call aimed at another process.");
  isolation_.uid = ready.value("uid", int64_t{-1});
  isolation_.gid = ready.value("gid", int64_t{-1});
  if (options_.seccomp && !isolation_.seccomp)
    throw Error("envsandbox: the seccomp filter could not be built in spade-envd: " +
                ready.value("seccomp_error", std::string("unknown error")) + " (set SandboxOptions::seccomp = false to run without it)");
}

std::shared_ptr<detail::ZygoteProcess> EnvServer::start_zygote() {
  auto zygote = detail::ZygoteProcess::start(launch_argv_, options_.startup_timeout_s, isolation_.namespaces);
  zygote->cgroup = cgroup_;
  zygote->spin = SpinBudget(options_.spin_us);
  return zygote;
}

int64_t EnvServer::pool_memory_bytes() const { return cgroup_ ? cgroup_->memory_bytes() : -1; }
int64_t EnvServer::pool_peak_memory_bytes() const { return cgroup_ ? cgroup_->peak_memory_bytes() : -1; }
std::vector<int> EnvServer::pool_pids() const { return cgroup_ ? cgroup_->pids() : std::vector<int>{}; }

pid_t EnvServer::zygote_host_pid() {
  std::lock_guard<std::mutex> lock(mu_);
  return zygote_ && zygote_->alive() ? zygote_->host_pid() : -1;
}

EnvServer::~EnvServer() {
  if (zygote_) zygote_->stop();  // live EnvInstances keep the handle but their processes are gone
  // cgroup_ is removed when the last holder (this server, live instances' zygote handles) lets go.
}

std::unique_ptr<EnvInstance> EnvServer::spawn() { return spawn_child("", -1, nullptr); }

std::unique_ptr<EnvInstance> EnvServer::spawn_loaded(const std::string& source, int max_turns_cap, CallResult* load) {
  std::string preload = EnvInstance::load_request(source, max_turns_cap).dump(-1, ' ', false, json::error_handler_t::replace);
  bool refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refused = no_preload_.count(preload) > 0;
  }
  bool loaded = false;
  std::unique_ptr<EnvInstance> instance =
      options_.preload_spares > 0 && !refused ? spawn_child(preload, options_.preload_spares, &loaded)
                                              : spawn_child("", 0, nullptr);  // "": drop preloaded spares
  instance->preloaded_ = loaded;
  *load = loaded ? instance->receive_preloaded_load() : instance->load(source, max_turns_cap);
  // A program whose load hangs or kills its process would keep its preloaded spares burning CPU
  // (up to RLIMIT_CPU each) or dying: never preload it again.
  if (!load->ok() && load->status != CallStatus::kException && load->status != CallStatus::kUnavailable) {
    std::lock_guard<std::mutex> lock(mu_);
    no_preload_.insert(std::move(preload));
  }
  return instance;
}

std::unique_ptr<EnvInstance> EnvServer::spawn_child(const std::string& preload, int preload_spares, bool* loaded) {
  const json limits{{"memory_bytes", options_.memory_limit_bytes},
                    {"cpu_s", options_.cpu_limit_s},
                    {"max_files", options_.max_open_files},
                    {"file_size_bytes", options_.file_size_limit_bytes},
                    {"max_output_bytes", options_.max_output_bytes},
                    {"max_reply_bytes", options_.max_reply_bytes},
                    {"max_str_chars", options_.max_obs_chars},
                    {"seccomp", options_.seccomp},
                    {"spin_us", options_.spin_us},
                    {"tmpfs_bytes", options_.tmpfs_bytes}};
  std::lock_guard<std::mutex> lock(mu_);
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!zygote_ || !zygote_->alive()) {
      zygote_.reset();  // reap a dead one before starting its replacement
      try {
        zygote_ = start_zygote();
      } catch (const Error& e) {
        error += std::string(error.empty() ? "" : "; then ") + "starting a new zygote failed: " + e.what();
        break;
      }
    }
    pid_t pid = -1;
    int fd = -1;
    bool retire = false;
    std::string why;
    if (zygote_->spawn(limits, options_.spare_children, &pid, &fd, &why, preload, preload_spares, loaded, &retire))
      return std::unique_ptr<EnvInstance>(new EnvInstance(zygote_, pid, fd, options_));
    error += (error.empty() ? "" : "; then ") + why;
    if (!retire) break;  // a refusal a new zygote would repeat (e.g. invalid limits)
    // It cannot fork, was altered beyond repair, or its channel broke: the next children come from a new
    // zygote. The instances it handed over hold it, and it serves them until they are released.
    zygote_.reset();
  }
  return EnvInstance::unavailable(options_, "could not create an environment process: " + error);
}

}  // namespace spade::envsandbox
