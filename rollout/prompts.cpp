#include "rollout/prompts.h"

#include "common/error.h"

namespace spade::rollout {

const std::vector<Skill>& game_skills() {
  static const std::vector<Skill> skills = {
      {"math", "Mathematical Reasoning", "computing or deducing numbers from mathematical structure"},
      {"logic", "Logical Deduction", "deriving hidden facts from rules and clues"},
      {"spatial", "Spatial Reasoning", "moving and placing things on grids, graphs and shapes"},
      {"pattern", "Pattern Recognition", "finding the rule behind sequences and symbols"},
      {"optimization", "Optimization", "choosing the best plan under constraints"},
      {"causal", "Causal Inference", "finding causes from interventions and their effects"},
  };
  return skills;
}

const std::vector<Skill>& tooluse_skills() {
  static const std::vector<Skill> skills = {
      {"api_orchestration", "API Orchestration", "chaining several API calls, each using what the last returned"},
      {"data_retrieval", "Data Retrieval", "finding the records a request needs by searching and reading"},
      {"state_modification", "State Modification", "changing a system's state exactly as asked"},
      {"error_recovery", "Error Recovery", "noticing failed or refused calls and recovering from them"},
      {"tool_selection", "Tool Selection", "picking the right tool among similar ones, or none"},
      {"multi_step_workflows", "Multi-Step Workflows", "carrying a request through many dependent steps"},
  };
  return skills;
}

const Skill& find_skill(const std::string& key) {
  std::string valid;
  for (const Skill& s : game_skills()) {
    if (s.slug == key || s.name == key) return s;
    valid += (valid.empty() ? "" : ", ") + s.slug;
  }
  throw Error("unknown skill '" + key + "' (valid: " + valid + ")");
}

int skill_index(const std::string& key) { return static_cast<int>(&find_skill(key) - game_skills().data()); }

std::vector<int> active_skills(int64_t t, int k, int count, const std::vector<int>& enabled) {
  std::vector<int> pool = enabled;
  if (pool.empty())
    for (int i = 0; i < static_cast<int>(game_skills().size()); ++i) pool.push_back(i);
  const int n = static_cast<int>(pool.size());
  const int64_t epoch = t / k;
  const int start = static_cast<int>((3 * epoch) % n);
  std::vector<int> out;
  for (int i = 0; i < count && i < n; ++i) out.push_back(pool[(start + i) % n]);
  return out;
}

std::string designer_system_prompt() {
  return "You are the Environment Designer. You write executable Python game environments.";
}

std::string agent_system_prompt() {
  return "You are the Reasoning Agent. You play games and answer inside \\boxed{}.";
}

std::string designer_user_prompt(const Skill& skill, const std::optional<std::string>& document,
                                 const std::vector<ReferenceEnv>& references, int max_turns) {
  std::string p = "Design a " + skill.name + " game (" + skill.description + ") as a Python environment" +
                  (document ? " grounded in this document.\n\nDocument:\n" + *document : std::string(".")) +
                  "\n\nRules: one class whose name ends in Env; __init__(self, max_turns=" +
                  std::to_string(max_turns) +
                  ", **kwargs); reset(seed=None) returns (observation, info); step(action) returns "
                  "(observation, reward, terminated, truncated, info); the player answers inside "
                  "\\boxed{}; reward 1.0 on a win, else 0.0; standard library only; solution() "
                  "returns the winning answers.\n";
  for (const ReferenceEnv& r : references) {
    if (r.negative) {
      p += "\nAvoid games like this one (" + r.why + "):\n```python\n" + r.code + "\n```\n";
    } else {
      p += "\nReference environment (create a DIFFERENT game):\n```python\n" + r.code + "\n```\n";
    }
  }
  p += "\nAnswer with one ```python block.";
  return p;
}

std::string hint_user_prompt(const std::string& code) {
  return "Here is the source code of a game:\n```python\n" + code +
         "\n```\nWrite one short hint for a player who cannot see the code: the key insight or "
         "strategy and the expected answer format. Do not reveal the exact answer.";
}

std::string agent_tool_system_prompt() {
  return "You are the Reasoning Agent. You carry out the user's requests by calling the tools you are given, "
         "one request at a time. When every request is done, reply <answer>done</answer>. When a request cannot "
         "be served by any of the tools, decline it inside <answer></answer>.";
}

std::string agent_tool_first_turn(const std::string& observation, const std::string& hint) {
  return hint.empty() ? observation : observation + "\n\nPLAN (a hint): " + hint;
}

std::string agent_first_turn(const std::string& observation, const std::string& hint) {
  std::string obs = observation;
  if (!hint.empty()) obs += "\n\nHINT: " + hint;
  return "You are playing a language game. Make valid actions to win.\nObservation: " + obs +
         "\nReason step by step, and put your final answer within \\boxed{}.";
}

}  // namespace spade::rollout
