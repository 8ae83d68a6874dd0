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

/// The two settings of SPADE §5: games (§5.1) and tool use (§5.2; reference §7). One run plays one
/// setting (the config key selfplay.setting).
enum class Setting { kGames, kToolUse };
/// "games" / "tool_use" -> Setting; throws spade::Error naming the value and both ids.
Setting parse_setting(const std::string& name);
/// game_skills() or tooluse_skills().
const std::vector<Skill>& skills_of(Setting setting);
/// True when `slug` is a tool-use skill slug: its environments are tool-use programs (ToolUseEnv,
/// EpisodeSpec::tool_use).
bool is_tooluse_skill(const std::string& slug);
/// kToolUse for a tool-use skill slug, else kGames.
Setting setting_of_skill(const std::string& slug);

/// Finds a skill of `setting` by slug or display name; throws spade::Error listing the valid slugs.
const Skill& find_skill(const std::string& slug_or_name, Setting setting = Setting::kGames);
/// The index in skills_of(setting) of find_skill(slug_or_name, setting); throws as find_skill.
int skill_index(const std::string& slug_or_name, Setting setting = Setting::kGames);
/// The skill (of either setting) whose slug is `slug`; throws spade::Error when neither has it.
const Skill& skill_by_slug(const std::string& slug);

/// Active skills at rollout t (reference §1): epoch = floor(t/k), start = (3*epoch) mod 6,
/// window of `count` consecutive skills (wrapping). Returns indices into skills_of(setting) (six in
/// either setting). With `enabled` (such indices, e.g. a two-skill run, SPADE §7) the rotation runs over that
/// list instead: start = (3*epoch) mod enabled.size(); empty = all six.
std::vector<int> active_skills(int64_t t, int k, int count, const std::vector<int>& enabled = {});

/// System prompts of the two roles. The designer's names what it writes in `setting` (game or
/// tool-use environments).
std::string designer_system_prompt(Setting setting = Setting::kGames);
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
/// Tool use (`tool_use`, SPADE §5.2): a numbered step-by-step plan naming the tools in order, without
/// argument values ("look up a record, update it, then reconcile"), so the agent still has to find the
/// exact arguments by calling the tools.
std::string hint_user_prompt(const std::string& code, bool tool_use = false);

/// The four tool-use task variants in the reference's order and mix (reference §7: execute,
/// read-then-write, missing-parameter, irrelevant, weights 3:2:1:1).
struct TaskVariant {
  std::string id;           // "execute", "read-then-write", "missing-parameter", "irrelevant"
  int weight;               // 3, 2, 1, 1
  std::string description;  // what the designer is asked to build
};
const std::vector<TaskVariant>& tooluse_variants();
/// Draws a variant id with the weights above from u in [0, 1) (u = 0.5 -> "read-then-write").
const std::string& draw_tooluse_variant(double u);
/// The variant a program declares in its opening comment ("Variant: read-then-write ..."), as the
/// seed programs do; "" when none of the four ids follows "Variant:".
std::string declared_tooluse_variant(const std::string& code);

/// Designer user prompt of the tool-use setting (SPADE §5.2, App. F; reference §7): a simulated tool
/// API grounded in `document` (none: ungrounded) for `skill`: a ToolUseEnv subclass whose reset(seed)
/// sets _tools (3-8 tools in OpenAI function format, distractors included), _state, 3-5
/// _user_messages revealed one at a time with one _message_criteria check on _state each, and
/// deterministic tool_<name>(**kwargs) -> str methods; the task variant `variant` (tooluse_variants();
/// "" leaves it to the designer); solution() returns the tool-call responses and the answer.
/// References as in designer_user_prompt.
std::string designer_tool_user_prompt(const Skill& skill, const std::optional<std::string>& document,
                                      const std::vector<ReferenceEnv>& references, int max_turns,
                                      const std::string& variant);

/// The self-validator's prompt (SPADE App. F.2: "an LLM screen that rejects impossible environments
/// (unreachable, pre-satisfied, or underivable success criteria) while keeping hard-but-feasible
/// ones"): the program, then the question whether every success criterion can be met by calling
/// some of its tools, answered \boxed{yes} or \boxed{no}.
std::string self_validator_prompt(const std::string& code);
/// The validator's verdict: the first \boxed{} of `response` (after the last </think>) read as yes /
/// no (case-insensitive; "true"/"false" too); nullopt when there is none or it says something else.
std::optional<bool> self_validator_verdict(const std::string& response);

/// First agent turn (reference §3): fixed instruction, "Observation: {obs}", then the boxed-answer
/// instruction. With a hint, "\n\nHINT: {hint}" is appended to the observation (reference §5).
std::string agent_first_turn(const std::string& observation, const std::string& hint = "");

}  // namespace spade::rollout
