// The trainer boundary (slime-style): a sample is tokens + loss mask + rollout logprobs + advantage.
// The trainer knows nothing of how a sample was produced (docs/design.md; slime's "rollout
// boundary"). Plain structs, torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spade::rollout {

enum class Role { Agent, Designer, Hint };

/// A span of a tool-use episode's tokens: a sampled response that calls tools, or the tool turn that
/// returns their results (rollouts.h5 token_kinds).
struct ToolSegment {
  enum class Kind : uint8_t { kCall = 1, kResult = 2 };
  int64_t begin = 0, end = 0;  // token indices [begin, end)
  Kind kind = Kind::kCall;
};
/// Stable ids for files and logs: "agent", "designer", "hint".
const char* role_name(Role role);
/// The Role whose role_name() is `name`. Throws spade::Error naming `name` and the three ids otherwise.
Role parse_role(const std::string& name);

/// One training sequence. Invariants: tokens, loss_mask and rollout_logprobs have equal length;
/// loss_mask[i] = 1 exactly for tokens sampled by the policy (assistant tokens), 0 for prompt,
/// observation, template and tool tokens (docs/design.md, Tokens); rollout_logprobs[i] is the sampler's
/// logprob of tokens[i] given tokens[0..i) (0 where loss_mask is 0).
struct Sample {
  Role role = Role::Agent;
  std::vector<int64_t> tokens;
  std::vector<float> loss_mask;
  std::vector<float> rollout_logprobs;
  double reward = 0.0;     // raw reward (episode reward for agents, designer reward for designers)
  double advantage = 0.0;  // per-sequence advantage, broadcast over tokens by the trainer
  std::string env_id;      // environment (agents) or generated environment (designers)
  std::string skill;
  int64_t rollout_id = 0;  // the rollout step t that produced the sample (delayed designer update)
  double temperature = 1.0; // sampling temperature of the response: the trainer recomputes logprobs
                            // at the same temperature so on-policy TIS ratios are 1 (issue 4)
  std::vector<ToolSegment> tool_segments;  // tool-use episodes, in token order; empty otherwise

  /// Appends `ids` with loss mask 0 (prompt / observation / template tokens).
  void append_context(const std::vector<int64_t>& ids);
  /// Appends sampled `ids` with loss mask 1 and their rollout logprobs (same length).
  void append_sampled(const std::vector<int64_t>& ids, const std::vector<float>& logprobs);
  /// Number of tokens with loss mask 1.
  int64_t num_trainable() const;
};

}  // namespace spade::rollout
