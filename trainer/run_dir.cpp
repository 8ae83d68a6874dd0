#include "trainer/run_dir.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"

namespace fs = std::filesystem;

namespace spade::trainer {

std::string RunDir::checkpoint_dir(int64_t step) const {
  char name[32];
  std::snprintf(name, sizeof name, "step_%06lld", static_cast<long long>(step));
  return checkpoints_dir() + "/" + name;
}

RunDir RunDir::create(const std::string& out_dir, const std::string& name) {
  RunDir r{out_dir + "/" + name};
  std::error_code ec;
  for (const std::string& d : {r.root, r.envs_dir(), r.rejected_dir(), r.checkpoints_dir()}) {
    fs::create_directories(d, ec);
    if (ec) throw Error("cannot create run directory " + d + ": " + ec.message());
  }
  return r;
}

void RunDir::log_metrics(int64_t step, const std::map<std::string, double>& metrics) const {
  log_metrics_to(metrics_path(), step, metrics);
}

void RunDir::log_metrics_to(const std::string& path, int64_t step, const std::map<std::string, double>& metrics) {
  nlohmann::ordered_json j;
  j["step"] = step;
  for (const auto& [k, v] : metrics) {
    if (std::isfinite(v)) j[k] = v;
    else j[k] = nullptr;
  }
  append_line(path, j.dump());
}

void RunDir::truncate_metrics(int64_t first_step) const {
  if (!fs::exists(metrics_path())) return;
  const std::string text = read_file(metrics_path());
  std::string kept;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) continue;
    if (j["step"].get<int64_t>() >= first_step) continue;
    kept += line + "\n";
  }
  write_file_atomic(metrics_path(), kept);
}

void RunDir::prune_checkpoints(int keep, int keep_every) const {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(checkpoints_dir(), ec))
    if (e.is_directory() && starts_with(e.path().filename().string(), "step_") &&
        !ends_with(e.path().filename().string(), ".tmp"))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < dirs.size(); ++i) {
    const std::string digits = dirs[i].filename().string().substr(5);
    const bool numbered = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
    if (keep_every > 0 && numbered && std::stoll(digits) % keep_every == 0) continue;
    fs::remove_all(dirs[i], ec);
  }
}

}  // namespace spade::trainer
