// Model-backed players: a harness Policy that asks a ChatClient (evaldual/model_client.h) and an
// Agent that hands one such Policy to every session of a participant (protocol.h: "Every session
// starts with a fresh context" — the harness owns the messages, so a fresh Policy needs no state).
//
// Thread-safety: ModelPolicy belongs to one session at a time (harness.h); ModelAgent::open_session
// is thread-safe and all its policies share one thread-safe ChatClient (shared accounting and rate limit).
#pragma once
#include <memory>

#include "evaldual/harness.h"
#include "evaldual/model_client.h"
#include "evaldual/model_endpoints.h"
#include "evaldual/protocol.h"

namespace spade::evaldual {

/// A Policy that sends the session's messages to a model endpoint.
class ModelPolicy : public Policy {
 public:
  /// `client` must not be null (throws spade::Error).
  explicit ModelPolicy(std::shared_ptr<ChatClient> client);

  /// One chat completion: content, prompt/completion tokens and cost (USD) from ChatClient::complete.
  /// Throws spade::Error when the call fails after retries (the harness then ends the session, status Error).
  PolicyReply query(const std::vector<Message>& messages) override;

 private:
  std::shared_ptr<ChatClient> client_;
};

/// An Agent whose sessions are all played by one model endpoint.
class ModelAgent : public Agent {
 public:
  /// `client` must not be null (throws spade::Error).
  explicit ModelAgent(std::shared_ptr<ChatClient> client);
  std::unique_ptr<Policy> open_session(const SessionContext& ctx) override;
  /// The shared client (its totals() account for every session).
  ChatClient& client() { return *client_; }

 private:
  std::shared_ptr<ChatClient> client_;
};

/// The agent that plays participant `id` from the endpoints file: resolve_endpoint() then a ChatClient.
/// The participant's harness field must be empty or "mini-swe-agent" (the built-in harness is that
/// loop); throws spade::Error naming the participant otherwise, and like resolve_endpoint/ChatClient.
std::unique_ptr<ModelAgent> make_model_agent(const EndpointFile& endpoints, const std::string& participant_id);

}  // namespace spade::evaldual
