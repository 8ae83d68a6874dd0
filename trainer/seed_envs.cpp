#include "trainer/seed_envs.h"

#include <algorithm>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "rollout/prompts.h"

namespace fs = std::filesystem;

namespace spade::trainer {

std::vector<SeedEnv> load_seed_envs(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw Error("seed environments: directory not found: " + dir + " (set seed_envs.dir)");
  std::vector<SeedEnv> out;
  for (auto& skill_dir : fs::directory_iterator(dir)) {
    if (!skill_dir.is_directory()) continue;
    const std::string skill = skill_dir.path().filename().string();
    bool known = false;
    std::string valid;
    for (const auto* list : {&rollout::game_skills(), &rollout::tooluse_skills()})
      for (const rollout::Skill& s : *list) {
        known = known || s.slug == skill;
        valid += (valid.empty() ? "" : ", ") + s.slug;
      }
    if (!known) throw Error(skill_dir.path().string() + ": '" + skill + "' is not a skill (valid: " + valid + ")");
    for (auto& f : fs::directory_iterator(skill_dir.path())) {
      if (f.path().extension() != ".py") continue;
      fs::path hint_path = f.path();
      hint_path.replace_extension(".hint.txt");
      std::string hint = fs::exists(hint_path) ? trim(read_file(hint_path.string())) : "";
      out.push_back({skill, f.path().stem().string(), f.path().string(), read_file(f.path().string()), hint});
    }
  }
  if (out.empty()) throw Error("seed environments: no <skill>/<name>.py file under " + dir);
  std::sort(out.begin(), out.end(), [](const SeedEnv& a, const SeedEnv& b) { return a.path < b.path; });
  return out;
}

void check_seed_setting(const std::vector<SeedEnv>& envs, const std::string& setting, const std::string& key) {
  const bool tool_use = rollout::parse_setting(setting) == rollout::Setting::kToolUse;
  for (const SeedEnv& e : envs)
    if (rollout::is_tooluse_skill(e.skill) != tool_use)
      throw Error(key + ": " + e.path + " is a " + (tool_use ? "games" : "tool_use") + " environment (skill '" +
                  e.skill + "') but selfplay.setting is " + setting + " (use data/" +
                  (tool_use ? "tooluse_seed_envs" : "seed_envs") + ", or set selfplay.setting)");
}

}  // namespace spade::trainer
