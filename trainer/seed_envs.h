// The hand-written seed environments (data/seed_envs/<skill>/<name>.py, and the tool-use ones in
// data/tooluse_seed_envs): cold-start data and test fixtures. Each follows the games contract and has solution() (docs/design.md, Contracts).
#pragma once
#include <string>
#include <vector>

namespace spade::trainer {

struct SeedEnv {
  std::string skill;  // skill slug (folder name), one of rollout::game_skills() or rollout::tooluse_skills()
  std::string name;   // file stem
  std::string path;
  std::string code;
  std::string hint;   // <name>.hint.txt beside the program (a privileged hint), "" when absent
};

/// Loads every <skill>/<name>.py (and its optional <name>.hint.txt) under `dir`, sorted by path. Throws spade::Error if `dir` is
/// missing, a folder is not a game or tool-use skill slug (naming the folder and the valid slugs), or no
/// environment is found.
std::vector<SeedEnv> load_seed_envs(const std::string& dir);

/// Throws spade::Error when some environment of `envs` (loaded from `key`'s folder, e.g.
/// "seed_envs.dir") is not of `setting` (selfplay.setting: "games" or "tool_use"), naming the key, the
/// program and both settings: a games run cannot cold-start on, fill in with or draw tool-use programs.
void check_seed_setting(const std::vector<SeedEnv>& envs, const std::string& setting, const std::string& key);

}  // namespace spade::trainer
