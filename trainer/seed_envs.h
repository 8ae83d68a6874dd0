// The hand-written seed environments (data/seed_envs/<skill>/<name>.py): cold-start data and
// test fixtures. Each follows the games contract and has solution() (docs/design.md, Contracts).
#pragma once
#include <string>
#include <vector>

namespace spade::trainer {

struct SeedEnv {
  std::string skill;  // skill slug (folder name), one of rollout::game_skills()
  std::string name;   // file stem
  std::string path;
  std::string code;
  std::string hint;   // <name>.hint.txt beside the program (a privileged hint), "" when absent
};

/// Loads every <skill>/<name>.py (and its optional <name>.hint.txt) under `dir`, sorted by path. Throws spade::Error if `dir` is
/// missing, a folder is not a known skill slug, or no environment is found.
std::vector<SeedEnv> load_seed_envs(const std::string& dir);

}  // namespace spade::trainer
