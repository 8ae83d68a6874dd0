#include <nlohmann/json.hpp>

#include "common/error.h"
#include "envsandbox/sandbox.h"
#include "envsandbox/zygote_process.h"

using nlohmann::json;

namespace spade::envsandbox {
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
}

}  // namespace

EnvServer::EnvServer(SandboxOptions options) : options_(std::move(options)) {
  check_options(options_);
  envd_path_ = detail::locate_envd(options_.envd_path);
  zygote_ = detail::ZygoteProcess::start(envd_path_, options_.startup_timeout_s);
}

EnvServer::~EnvServer() {
  if (zygote_) zygote_->stop();  // live EnvInstances keep the handle but their processes are gone
}

std::unique_ptr<EnvInstance> EnvServer::spawn() {
  const json limits{{"memory_bytes", options_.memory_limit_bytes},
                    {"cpu_s", options_.cpu_limit_s},
                    {"max_files", options_.max_open_files},
                    {"file_size_bytes", options_.file_size_limit_bytes},
                    {"max_output_bytes", options_.max_output_bytes},
                    {"max_reply_bytes", options_.max_reply_bytes},
                    {"max_str_chars", options_.max_obs_chars}};
  std::lock_guard<std::mutex> lock(mu_);
  std::string error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!zygote_ || !zygote_->alive()) {
      zygote_.reset();  // reap the dead one before starting its replacement
      zygote_ = detail::ZygoteProcess::start(envd_path_, options_.startup_timeout_s);
    }
    pid_t pid = -1;
    int fd = -1;
    if (zygote_->spawn(limits, &pid, &fd, &error))
      return std::unique_ptr<EnvInstance>(new EnvInstance(zygote_, pid, fd, options_));
    if (zygote_->alive()) break;  // it answered with an error (e.g. fork failed): a restart won't help
  }
  throw Error("envsandbox: could not create an environment process: " + error);
}

}  // namespace spade::envsandbox
