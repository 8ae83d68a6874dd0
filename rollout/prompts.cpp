#include "rollout/prompts.h"

#include <cctype>
#include <regex>

#include "common/error.h"
#include "rollout/parsing.h"

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

Setting parse_setting(const std::string& name) {
  if (name == "games") return Setting::kGames;
  if (name == "tool_use") return Setting::kToolUse;
  throw Error("unknown setting '" + name + "' (valid: games, tool_use)");
}

const std::vector<Skill>& skills_of(Setting setting) {
  return setting == Setting::kToolUse ? tooluse_skills() : game_skills();
}

bool is_tooluse_skill(const std::string& slug) {
  for (const Skill& s : tooluse_skills())
    if (s.slug == slug) return true;
  return false;
}

Setting setting_of_skill(const std::string& slug) {
  return is_tooluse_skill(slug) ? Setting::kToolUse : Setting::kGames;
}

const Skill& find_skill(const std::string& key, Setting setting) {
  std::string valid;
  for (const Skill& s : skills_of(setting)) {
    if (s.slug == key || s.name == key) return s;
    valid += (valid.empty() ? "" : ", ") + s.slug;
  }
  throw Error("unknown " + std::string(setting == Setting::kToolUse ? "tool-use" : "game") + " skill '" + key +
              "' (valid: " + valid + ")");
}

int skill_index(const std::string& key, Setting setting) {
  return static_cast<int>(&find_skill(key, setting) - skills_of(setting).data());
}

const Skill& skill_by_slug(const std::string& slug) {
  return find_skill(slug, setting_of_skill(slug));
}

std::vector<int> active_skills(int64_t t, int k, int count, const std::vector<int>& enabled) {
  std::vector<int> pool = enabled;
  if (pool.empty())  // six skills in either setting
    for (int i = 0; i < static_cast<int>(game_skills().size()); ++i) pool.push_back(i);
  const int n = static_cast<int>(pool.size());
  const int64_t epoch = t / k;
  const int start = static_cast<int>((3 * epoch) % n);
  std::vector<int> out;
  for (int i = 0; i < count && i < n; ++i) out.push_back(pool[(start + i) % n]);
  return out;
}

std::string designer_system_prompt(Setting setting) {
  return setting == Setting::kToolUse
             ? "You are the Environment Designer. You write executable Python tool-use environments."
             : "You are the Environment Designer. You write executable Python game environments.";
}

std::string agent_system_prompt() {
  return "You are the Reasoning Agent. You play games and answer inside \\boxed{}.";
}

namespace {

// The designer prompt's memory references (reference §6: positives "create a DIFFERENT <thing>", a
// negative "avoid <kind> like this one") and the answer format.
std::string references_and_answer_format(const std::vector<ReferenceEnv>& references, const std::string& kind,
                                         const std::string& thing) {
  std::string p;
  for (const ReferenceEnv& r : references)
    p += r.negative ? "\nAvoid " + kind + " like this one (" + r.why + "):\n```python\n" + r.code + "\n```\n"
                    : "\nReference environment (create a DIFFERENT " + thing + "):\n```python\n" + r.code + "\n```\n";
  return p + "\nAnswer with one ```python block.";
}

}  // namespace

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
  return p + references_and_answer_format(references, "games", "game");
}

std::string hint_user_prompt(const std::string& code, bool tool_use) {
  if (tool_use)
    return "Here is the source code of a tool-use environment:\n```python\n" + code +
           "\n```\nWrite a short numbered step-by-step plan for an assistant who cannot see the code: which "
           "tool to call for each request, in order, ending with the final answer. Do not give argument "
           "values; the assistant must find them by calling the tools.";
  return "Here is the source code of a game:\n```python\n" + code +
         "\n```\nWrite one short hint for a player who cannot see the code: the key insight or "
         "strategy and the expected answer format. Do not reveal the exact answer.";
}

const std::vector<TaskVariant>& tooluse_variants() {
  static const std::vector<TaskVariant> v = {
      {"execute", 3, "every instruction names the values the tools need"},
      {"read-then-write", 2,
       "some values must first be read with one tool and then used in a call that changes the state"},
      {"missing-parameter", 1,
       "an instruction names a thing by description only; its identifier must be found with a lookup tool "
       "before the tool that needs it can be called"},
      {"irrelevant", 1,
       "the last instruction asks for something no tool can do; the only right reply to it is to decline "
       "inside <answer></answer> (override _check_answer so that a decline of that request wins and "
       "\"done\" does not)"},
  };
  return v;
}

const std::string& draw_tooluse_variant(double u) {
  int total = 0;
  for (const TaskVariant& v : tooluse_variants()) total += v.weight;
  double edge = 0;
  for (const TaskVariant& v : tooluse_variants()) {
    edge += static_cast<double>(v.weight) / total;
    if (u < edge) return v.id;
  }
  return tooluse_variants().back().id;
}

std::string declared_tooluse_variant(const std::string& code) {
  static const std::regex re(R"(Variant:\s*(execute|read-then-write|missing-parameter|irrelevant)\b)");
  std::smatch m;
  return std::regex_search(code, m, re) ? m[1].str() : "";
}

std::string designer_tool_user_prompt(const Skill& skill, const std::optional<std::string>& document,
                                      const std::vector<ReferenceEnv>& references, int max_turns,
                                      const std::string& variant) {
  std::string p = "Design a " + skill.name + " task (" + skill.description +
                  ") as a simulated tool API in Python" +
                  (document ? " grounded in this document.\n\nDocument:\n" + *document : std::string(".")) +
                  "\n\nRules: one class whose name ends in Env, subclassing the provided ToolUseEnv (do not "
                  "define or import it); __init__(self, max_turns=" + std::to_string(max_turns) +
                  ", **kwargs) calls super().__init__(max_turns); reset(seed=None) builds everything from "
                  "random.Random(seed) and sets self._tools = {name: {\"description\": ..., \"parameters\": "
                  "JSON Schema object}} with 3 to 8 tools, some of them plausible distractors; self._state, "
                  "the data the tools read and change; self._user_messages, 3 to 5 short instructions shown "
                  "one at a time; self._message_criteria, one function of the state per instruction that is "
                  "true once it is done; self._current_msg = 0 and self._expected_answer = \"done\"; it "
                  "returns (\"[user] \" + the first instruction, {\"tools\": the tools in OpenAI function "
                  "format}). Each tool is a method tool_<name>(self, **arguments) returning a string, "
                  "deterministic, answering bad arguments with an error text. The player calls tools and "
                  "ends with <answer>done</answer>; reward 1.0 only when every instruction is done. Standard "
                  "library only; solution() returns the winning responses: each tool call as "
                  "<tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>, then <answer>done</answer>.\n";
  for (const TaskVariant& v : tooluse_variants())
    if (v.id == variant) p += "\nTask variant: " + v.id + " (" + v.description + ").\n";
  return p + references_and_answer_format(references, "environments", "task");
}

std::string self_validator_prompt(const std::string& code) {
  return "Here is the source code of a tool-use environment:\n```python\n" + code +
         "\n```\nCheck each entry of _message_criteria: after reset(), can it be made true by calling "
         "the tools in _tools with arguments the user's instructions and the tools' answers reveal? Reject "
         "the environment if some criterion is unreachable, already true before any call, or needs a value "
         "no instruction or tool reveals. Hard but feasible is fine. Answer \\boxed{yes} if every criterion "
         "can be met, else \\boxed{no}.";
}

std::optional<bool> self_validator_verdict(const std::string& response) {
  const std::optional<std::string> boxed = extract_first_boxed(after_last_think(response));
  if (!boxed) return std::nullopt;
  std::string v;
  for (char c : *boxed) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "yes" || v == "true") return true;
  if (v == "no" || v == "false") return false;
  return std::nullopt;
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
