// The endpoints file: which model endpoint plays a participant (reference §7 models.yaml: "nickname ->
// model id, temperature, effort menu, providers, rate limits"). YAML:
//
//   defaults:                       # optional: every model starts from these keys
//     base_url: https://openrouter.ai/api/v1
//     api_key_env: OPENROUTER_API_KEY
//   models:                         # required: nickname -> endpoint keys (ModelEndpoint)
//     qwen3-8b:
//       model: qwen/qwen3-8b        # required: the provider's model id
//       temperature: 0.6
//       max_tokens: 32768
//       reasoning_effort: medium    # default effort; a participant's effort field overrides it
//       effort_field: reasoning.effort
//       extra_body: {usage: {include: true}}
//       providers:                  # participant provider field -> body fields merged in
//         deepinfra: {provider: {order: [deepinfra], allow_fallbacks: false}}
//       requests_per_minute: 60
//       price_input_per_m: 0.05     # USD per 1M tokens (used when the server reports no usage.cost)
//       price_output_per_m: 0.25
//       connect_timeout_s: 30
//       timeout_s: 600
//       max_retries: 5
//       backoff_base_s: 1
//       backoff_cap_s: 60
//
// A participant "NICK#HARNESS#EFFORT#PROVIDER" (evaldual/participant.h) resolves to models[NICK], with
// EFFORT (when non-empty) as reasoning_effort and providers[PROVIDER] (when PROVIDER is non-empty; it
// must be listed) merged into extra_body. Unknown keys are errors naming the key and the file.
// YAML scalars in extra_body/providers become JSON booleans, integers, reals or null when plain
// (unquoted) and look like one; quoted scalars stay strings.
//
// Thread-safety: plain values and pure functions.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "evaldual/model_client.h"
#include "evaldual/participant.h"

namespace spade::evaldual {

/// One model entry: its endpoint (name = the nickname) and its provider menu.
struct EndpointEntry {
  ModelEndpoint endpoint;
  std::map<std::string, nlohmann::json> providers;  // provider name -> body fields (JSON objects)
};

/// A parsed endpoints file.
struct EndpointFile {
  std::string path;                               // origin, for messages
  std::map<std::string, EndpointEntry> models;    // nickname -> entry (never empty)
};

/// Parses endpoints YAML `text`; `origin` names it in errors. Throws spade::Error naming the origin
/// and key for invalid YAML, unknown keys, a missing 'models' map or 'model', wrong value types.
EndpointFile parse_endpoints(const std::string& text, const std::string& origin);

/// Reads and parses the file at `path` (throws like parse_endpoints, or when it cannot be read).
EndpointFile load_endpoints(const std::string& path);

/// The endpoint that plays `participant` (see the file comment); its name is participant.id().
/// Throws spade::Error naming the file and listing the known nicknames/providers when the model
/// nickname or the provider is not in the file.
ModelEndpoint resolve_endpoint(const EndpointFile& file, const Participant& participant);

}  // namespace spade::evaldual
