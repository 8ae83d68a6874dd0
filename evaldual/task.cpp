#include "evaldual/task.h"

#include <ctime>

#include "common/error.h"

using nlohmann::json;

namespace spade::evaldual {

json to_json(const PublicBundle& b) {
  return {{"task_id", b.task_id},
          {"repo", b.repo},
          {"language", b.language},
          {"feature_spec", b.feature_spec},
          {"exploration_summary", b.exploration_summary},
          {"feature_rationale", b.feature_rationale},
          {"target_files", b.target_files},
          {"pr_diff", b.pr_diff},
          {"feature_tests", b.feature_tests},
          {"red_pre_existing_failures", b.red_pre_existing_failures}};
}

json to_json(const SealedBundle& b) {
  return {{"bug_type", b.bug_type},
          {"bug_description", b.bug_description},
          {"bug_location", b.bug_location},
          {"bug_tests", b.bug_tests},
          {"feature_only_diff", b.feature_only_diff}};
}

json to_json(const GateResult& g) { return {{"gate", g.gate}, {"passed", g.passed}, {"detail", g.detail}}; }

json to_json(const TaskRecord& r) {
  json gates = json::array();
  for (const auto& g : r.gates) gates.push_back(to_json(g));
  return {{"task_id", r.task_id}, {"red", r.red},     {"repo", r.repo}, {"repo_pin", r.repo_pin}, {"slot", r.slot},
          {"attempt", r.attempt}, {"gates", gates},   {"cost", r.cost}, {"tokens", r.tokens}, {"created_at", r.created_at}};
}

PublicBundle public_from_json(const json& j) {
  try {
    PublicBundle b;
    b.task_id = j.value("task_id", "");
    b.repo = j.value("repo", "");
    b.language = j.value("language", "");
    b.feature_spec = j.value("feature_spec", "");
    b.exploration_summary = j.value("exploration_summary", "");
    b.feature_rationale = j.value("feature_rationale", "");
    b.target_files = j.value("target_files", std::vector<std::string>{});
    b.pr_diff = j.value("pr_diff", "");
    b.feature_tests = j.value("feature_tests", std::map<std::string, std::string>{});
    b.red_pre_existing_failures = j.value("red_pre_existing_failures", std::vector<std::string>{});
    return b;
  } catch (const json::exception& e) {
    throw Error(std::string("public bundle: ") + e.what());
  }
}

SealedBundle sealed_from_json(const json& j) {
  try {
    SealedBundle b;
    b.bug_type = j.value("bug_type", "");
    b.bug_description = j.value("bug_description", "");
    b.bug_location = j.value("bug_location", "");
    b.bug_tests = j.value("bug_tests", std::map<std::string, std::string>{});
    b.feature_only_diff = j.value("feature_only_diff", "");
    return b;
  } catch (const json::exception& e) {
    throw Error(std::string("sealed bundle: ") + e.what());
  }
}

TaskRecord record_from_json(const json& j) {
  try {
    TaskRecord r;
    r.task_id = j.value("task_id", "");
    r.red = j.value("red", "");
    r.repo = j.value("repo", "");
    r.repo_pin = j.value("repo_pin", "");
    r.slot = j.value("slot", 0);
    r.attempt = j.value("attempt", 0);
    for (const auto& g : j.value("gates", json::array()))
      r.gates.push_back({g.value("gate", ""), g.value("passed", false), g.value("detail", "")});
    r.cost = j.value("cost", 0.0);
    r.tokens = j.value("tokens", int64_t{0});
    r.created_at = j.value("created_at", "");
    return r;
  } catch (const json::exception& e) {
    throw Error(std::string("task record: ") + e.what());
  }
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace spade::evaldual
