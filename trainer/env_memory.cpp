#include "trainer/env_memory.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"

using nlohmann::json;

namespace spade::trainer {

namespace {
constexpr size_t kCodeChars = 2000;  // reference §6: first 2000 chars of code
}

EnvMemory::EnvMemory(int capacity, double band_low, double band_high)
    : capacity_(capacity), band_low_(band_low), band_high_(band_high) {}

void EnvMemory::add(MemoryRecord record) {
  if (record.code.size() > kCodeChars) record.code.resize(kCodeChars);
  records_.push_back(std::move(record));
  while (static_cast<int>(records_.size()) > capacity_) records_.erase(records_.begin());
}

std::vector<rollout::ReferenceEnv> EnvMemory::references(const std::string& skill, int n,
                                                         std::mt19937_64& rng) const {
  std::vector<const MemoryRecord*> pool, negatives;
  for (const MemoryRecord& r : records_) {
    if (r.skill != skill) continue;
    if (r.win_rate >= band_low_ && r.win_rate <= band_high_) pool.push_back(&r);
    if (r.win_rate > 0.9 || r.win_rate < 0.1) negatives.push_back(&r);
  }
  std::stable_sort(pool.begin(), pool.end(),
                   [](const MemoryRecord* a, const MemoryRecord* b) { return a->regret > b->regret; });
  const size_t pool_size = std::min(pool.size(), static_cast<size_t>(std::max(3 * n, 10)));
  pool.resize(pool_size);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<rollout::ReferenceEnv> out;
  for (int i = 0; i < n && i < static_cast<int>(pool.size()); ++i) out.push_back({pool[i]->code, false, ""});
  if (!negatives.empty()) {
    std::uniform_int_distribution<size_t> pick(0, negatives.size() - 1);
    const MemoryRecord* r = negatives[pick(rng)];
    out.push_back({r->code, true, r->win_rate > 0.9 ? "too easy" : "too hard"});
  }
  return out;
}

void EnvMemory::save(const std::string& path) const {
  json arr = json::array();
  for (const MemoryRecord& r : records_)
    arr.push_back({{"path", r.path}, {"skill", r.skill}, {"code", r.code}, {"win_rate", r.win_rate},
                   {"regret", r.regret}, {"rollout_id", r.rollout_id}});
  write_file_atomic(path, arr.dump(1));
}

void EnvMemory::load(const std::string& path) {
  records_.clear();
  if (!std::filesystem::exists(path)) return;
  json arr = json::parse(read_file(path), nullptr, false);
  if (arr.is_discarded() || !arr.is_array()) throw Error(path + ": environment memory is not a JSON array");
  for (const json& j : arr) {
    try {
      add({j.at("path"), j.at("skill"), j.at("code"), j.at("win_rate"), j.at("regret"), j.at("rollout_id")});
    } catch (const json::exception& e) {
      throw Error(path + ": malformed memory record: " + e.what());
    }
  }
}

}  // namespace spade::trainer
