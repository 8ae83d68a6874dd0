#include "evaldual/arena.h"

#include <filesystem>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/input_fields.h"
#include "evaldual/repo_spec.h"

namespace fs = std::filesystem;

namespace spade::evaldual {

Arena parse_arena(const std::string& text, const std::string& origin, const std::string& base_dir) {
  const YAML::Node n = parse_yaml_text(text, origin);
  if (!n.IsMap()) throw Error(origin + ": an arena must be a YAML mapping, got " + describe_yaml(n));
  static const std::set<std::string> known = {"repos",      "turns_per_player", "attempts_per_slot", "workers",
                                              "step_limit", "recovery_turns",   "recovery_steps",    "wall_clock_s"};
  for (const auto& kv : n) {
    const std::string k = yaml_string(kv.first, origin + ": a key");
    if (!known.count(k))
      throw Error(origin + ": unknown key '" + k + "' (known: repos, turns_per_player, attempts_per_slot, workers, step_limit, "
                  "recovery_turns, recovery_steps, wall_clock_s)");
  }
  Arena a;
  a.path = origin;
  if (!n["repos"]) throw Error(origin + ": missing required key 'repos' (a list of repository spec files)");
  for (const std::string& p : yaml_string_list(n["repos"], origin + ": repos")) {
    const fs::path path = fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
    a.specs.push_back(fs::absolute(path).lexically_normal().string());
  }
  if (a.specs.empty()) throw Error(origin + ": repos: empty; name at least one repository spec");
  auto positive = [&](const char* key, int* out) {
    if (!n[key]) return;
    *out = yaml_int(n[key], origin + ": " + key);
    if (*out < 1) throw Error(origin + ": " + key + " must be >= 1, got " + std::to_string(*out));
  };
  positive("turns_per_player", &a.turns_per_player);
  positive("attempts_per_slot", &a.attempts_per_slot);
  positive("workers", &a.workers);
  positive("step_limit", &a.harness.step_limit);
  if (n["recovery_turns"]) {
    a.harness.recovery_turns = yaml_int(n["recovery_turns"], origin + ": recovery_turns");
    if (a.harness.recovery_turns < 0) throw Error(origin + ": recovery_turns must be >= 0");
  }
  positive("recovery_steps", &a.harness.recovery_steps);
  if (n["wall_clock_s"]) {
    a.harness.wall_clock_s = yaml_number(n["wall_clock_s"], origin + ": wall_clock_s");
    if (!(a.harness.wall_clock_s > 0)) throw Error(origin + ": wall_clock_s must be > 0");
  }
  return a;
}

Arena load_arena(const std::string& path) {
  Arena a = parse_arena(read_file(path), path, fs::absolute(path).parent_path().string());
  for (const std::string& s : a.specs) {
    if (!fs::exists(s)) throw Error(path + ": repos: " + s + " does not exist (a repository spec, repo_spec.h)");
    load_repo_spec(s);
  }
  return a;
}

void apply_arena(const Arena& a, ProtocolConfig* p) {
  p->attempts_per_slot = a.attempts_per_slot;
  for (HarnessConfig* h : {&p->red_harness, &p->blue_harness}) {
    h->step_limit = a.harness.step_limit;
    h->recovery_turns = a.harness.recovery_turns;
    h->recovery_steps = a.harness.recovery_steps;
    h->wall_clock_s = a.harness.wall_clock_s;
  }
}

LeaderboardArena leaderboard_arena(const Arena& a) {
  LeaderboardArena out;
  for (const std::string& s : a.specs) {
    out.repos.push_back(load_repo_spec(s).name);
    out.specs.push_back(s);
  }
  out.turns_per_player = a.turns_per_player;
  return out;
}

}  // namespace spade::evaldual
