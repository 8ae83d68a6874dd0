#include "rollout/sample.h"

#include "common/error.h"

namespace spade::rollout {

const char* role_name(Role role) {
  switch (role) {
    case Role::Agent: return "agent";
    case Role::Designer: return "designer";
    case Role::Hint: return "hint";
  }
  return "?";
}

Role parse_role(const std::string& name) {
  for (Role r : {Role::Agent, Role::Designer, Role::Hint})
    if (name == role_name(r)) return r;
  throw Error("unknown sample role '" + name + "' (agent, designer or hint)");
}

void Sample::append_context(const std::vector<int64_t>& ids) {
  tokens.insert(tokens.end(), ids.begin(), ids.end());
  loss_mask.insert(loss_mask.end(), ids.size(), 0.0f);
  rollout_logprobs.insert(rollout_logprobs.end(), ids.size(), 0.0f);
}

void Sample::append_sampled(const std::vector<int64_t>& ids, const std::vector<float>& logprobs) {
  if (ids.size() != logprobs.size())
    throw Error("Sample::append_sampled: " + std::to_string(ids.size()) + " tokens but " +
                std::to_string(logprobs.size()) + " logprobs");
  tokens.insert(tokens.end(), ids.begin(), ids.end());
  loss_mask.insert(loss_mask.end(), ids.size(), 1.0f);
  rollout_logprobs.insert(rollout_logprobs.end(), logprobs.begin(), logprobs.end());
}

int64_t Sample::num_trainable() const {
  int64_t n = 0;
  for (float m : loss_mask) n += m > 0.5f;
  return n;
}

}  // namespace spade::rollout
