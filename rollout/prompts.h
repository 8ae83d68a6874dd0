// Prompt texts of the two roles (SPADE paper §3: one policy, role-specific system prompts).
// Templates are data: each function documents the reference behaviour it follows. Torch-free.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace spade::rollout {

/// A game skill (SPADE paper §5, games setting; reference §6). `slug` names the seed folder.
struct Skill {
  std::string slug;
  std::string name;
  std::string description;
};

/// The six game skills in the paper's order: Mathematical Reasoning, Logical Deduction, Spatial
/// Reasoning, Pattern Recognition, Optimization, Causal Inference.
const std::vector<Skill>& game_skills();

/// The six tool-use skills in the paper's order (SPADE §5.2; reference §7): API Orchestration, Data
/// Retrieval, State Modification, Error Recovery, Tool Selection, Multi-Step Workflows. Their slugs
/// name the folders of data/tooluse_seed_envs and data/tooluse_heldout_envs.
const std::vector<Skill>& tooluse_skills();

/// Finds a game skill by slug or display name; throws spade::Error listing the valid names.
const Skill& find_skill(const std::string& slug_or_name);
/// The index in game_skills() of find_skill(slug_or_name); throws as find_skill.
int skill_index(const std::string& slug_or_name);

/// Active skills at rollout t (reference §1): epoch = floor(t/k), start = (3*epoch) mod 6,
/// window of `count` consecutive skills (wrapping). Returns indices into game_skills(). With
/// `enabled` (indices into game_skills(), e.g. a two-skill run, SPADE §7) the rotation runs over that
/// list instead: start = (3*epoch) mod enabled.size(); empty = all six.
std::vector<int> active_skills(int64_t t, int k, int count, const std::vector<int>& enabled = {});

/// System prompts of the two roles.
std::string designer_system_prompt();
std::string agent_system_prompt();
/// The agent's system prompt in a tool-use episode: call the given tools; <answer>done</answer> when
/// every request is done; a request no tool can serve is declined inside <answer> (reference §7).
std::string agent_tool_system_prompt();
/// The first user turn of a tool-use episode: the environment's first message (its first instruction),
/// then "\n\nPLAN (a hint): " + hint when hinted (the designer's value-free plan).
std::string agent_tool_first_turn(const std::string& observation, const std::string& hint);

/// An environment from memory shown to the designer (reference §6).
struct ReferenceEnv {
  std::string code;    // first 2000 characters of the program
  bool negative = false;  // true: "avoid" example (too easy or too hard)
  std::string why;     // for negatives: "too easy" / "too hard"
};

/// Designer user prompt: skill, corpus document, the environment contract, memory references
/// (positives "create a DIFFERENT game", one negative "avoid"), answer in one ```python block.
/// `document` nullopt: an ungrounded prompt, no document and no "grounded in" clause (the
/// no-corpus control, corpus.enabled: false; SPADE §7 Table 3).
std::string designer_user_prompt(const Skill& skill, const std::optional<std::string>& document,
                                 const std::vector<ReferenceEnv>& references, int max_turns);

/// Hint-writer prompt (paper §4.2 "Hint generation"; Appendix: the hint writer sees the code, the
/// agent never does): key insight or strategy and the answer format, never the exact answer.
std::string hint_user_prompt(const std::string& code);

/// First agent turn (reference §3): fixed instruction, "Observation: {obs}", then the boxed-answer
/// instruction. With a hint, "\n\nHINT: {hint}" is appended to the observation (reference §5).
std::string agent_first_turn(const std::string& observation, const std::string& hint = "");

}  // namespace spade::rollout
