#include "evaldual/model_agent.h"

#include "common/error.h"

namespace spade::evaldual {

ModelPolicy::ModelPolicy(std::shared_ptr<ChatClient> client) : client_(std::move(client)) {
  if (!client_) throw Error("ModelPolicy: client is null");
}

PolicyReply ModelPolicy::query(const std::vector<Message>& messages) {
  ChatReply r = client_->complete(messages);
  PolicyReply p;
  p.content = std::move(r.content);
  p.prompt_tokens = r.usage.prompt_tokens;
  p.completion_tokens = r.usage.completion_tokens;
  p.cost = r.usage.cost_usd;
  return p;
}

ModelAgent::ModelAgent(std::shared_ptr<ChatClient> client) : client_(std::move(client)) {
  if (!client_) throw Error("ModelAgent: client is null");
}

std::unique_ptr<Policy> ModelAgent::open_session(const SessionContext&) { return std::make_unique<ModelPolicy>(client_); }

std::unique_ptr<ModelAgent> make_model_agent(const EndpointFile& endpoints, const std::string& participant_id) {
  Participant p = Participant::parse(participant_id);
  if (!p.harness.empty() && p.harness != "mini-swe-agent")
    throw Error("participant '" + participant_id + "': harness '" + p.harness +
                "' is not available; model participants run the built-in mini-swe-agent loop (use model#mini-swe-agent...)");
  return std::make_unique<ModelAgent>(std::make_shared<ChatClient>(resolve_endpoint(endpoints, p)));
}

}  // namespace spade::evaldual
