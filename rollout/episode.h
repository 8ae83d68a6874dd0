// Multi-turn agent episodes: the policy plays environments in the sandbox, token-in/token-out.
// Many episodes advance together and independently (GenerationSession::run_turns, continuous batching
// across turns): when an episode's turn ends, its environment is stepped at once and its next turn is
// queued for the next free slot while the other episodes go on decoding, so no episode waits for the
// slowest turn of the others. Each episode's KV cache persists across its turns: a turn prefills only the tokens appended since the previous one (the previous
// turn's end-of-turn token and the new observation), so a turn costs O(new tokens); the history is
// never recomputed or re-tokenized. Prompts and observations come from policy.chat in the checkpoint's
// chat format (ChatML, Llama 3, Llama 2, Mistral: policy/chat_template.h); an observation that answers a
// tool call is appended as a "tool" turn, any other as a "user" turn. A turn ends on any of
// PolicyRef::stop_token_ids() (the template's end of turn and every eos id of the checkpoint); one that
// ended on an eos id other than the end of turn is closed with close_turn_ids() before the next turn
// (the sampled id stays, loss mask 1; the closing id is context, mask 0). Not thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envsandbox/game.h"
#include "rollout/episode_defaults.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "rollout/sampler.h"

namespace spade::rollout {

/// One episode to play.
struct EpisodeSpec {
  std::string env_id;
  std::string skill;
  std::string source;              // the environment program
  std::optional<int64_t> seed;     // reset seed (nullopt: the environment's default)
  std::string hint;                // "" for a no-hint play
  /// A tool-use program (a ToolUseEnv, reference §7): the agent sees its tools through the chat
  /// template (policy::tool_use_opening), every tool call of a turn is parsed here (Qwen JSON / XML
  /// <tool_call> blocks; Llama 3.1's JSON object) and stepped in order, and the results come back as
  /// one tool turn (ChatTemplate::ids_for_tool_results). A reply without a call (an <answer>, or text
  /// the base class answers with its format penalty) is stepped as it is.
  bool tool_use = false;
};

struct EpisodeResult {
  Sample sample;        // role Agent; tokens of the whole episode, loss mask 1 on sampled tokens
  double reward = 0;    // episode reward (reference §3): clamp(last, -1, 1) if terminated, else 0
  bool terminated = false;
  bool truncated = false;
  int turns = 0;
  /// "" or why the environment failed: a load/reset reason id, a process-level step failure (timeout,
  /// exited, signal, protocol; reward 0), why its last step() answer was refused
  /// (envsandbox::GameStep::refused: step_exception, memory, step_bad_return, step_bad_type,
  /// reward_not_finite; the episode then ended terminated with reward -1, reference §3), or
  /// "episode_timeout" (EpisodeOptions::episode_timeout_s). A NaN or infinite environment reward
  /// therefore never reaches `reward`. A stable id for files and logs; compare `process` in code.
  std::string failure;
  /// The process-level outcome of the sandbox call that ended the episode: kTimeout when load, reset
  /// or step ran past its deadline, kExited/kSignal/kProtocol/kUnavailable for a broken process,
  /// kException/kMemory for a load or reset that raised; kOk otherwise (including "episode_timeout"
  /// and a refused step answer).
  envsandbox::CallStatus process = envsandbox::CallStatus::kOk;
  std::vector<std::string> actions;  // parsed actions sent to step(), for logs
  int tool_calls = 0;                // tool-use episodes: calls stepped (well-formed or not)
  int malformed_tool_calls = 0;      // of which the parser could not read (the base class's format penalty)
  /// The observation reset() returned, without the hint ("" when load or reset failed); the
  /// trainer's designer/formula_in_first_obs reads it (trainer/generation_stats.h).
  std::string first_observation;
};

struct EpisodeOptions {
  SamplingParams sampling;    // per-turn sampling; max_new_tokens is the per-turn cap
  int max_turns = episode_defaults::kMaxTurns;
  int context_tokens = episode_defaults::kContextTokens;
  int reserve_tokens = 64;    // reference §3: max_new = min(cap, context_left - 64); stop when <= 64 left
  int max_batch = episode_defaults::kMaxBatch;
  int max_turns_cap = episode_defaults::kMaxTurns;  // passed to the environment constructor (min(class default, cap))
  /// true: KV caches persist across turns (GenerationSession). false: every turn re-prefills each
  /// episode's whole history (GenerationSession::drop_cache; the reference behaviour, kept for
  /// equivalence tests). Both sample the same tokens for the same seed; logprobs agree to ~1e-6.
  bool persistent_kv_cache = true;
  /// Wall-clock limit of one play, seconds from its reset to its last step (sampling of its turns
  /// included, as the reference's per-play timeout of 300 s); 0 = none. A play over it ends before its
  /// next step as truncated, reward 0, failure "episode_timeout" (the environment is not blamed: the
  /// step-timeout penalty of the regret_based designer reward is for EpisodeResult::process kTimeout).
  double episode_timeout_s = 0;
};

/// Plays every spec once. Environments that fail to load or reset produce a result with
/// `failure` set and an empty sample (a tool-use program whose tools cannot be read: "tools_invalid").
/// Throws spade::Error when a tool-use spec meets a chat format without tool calling (Llama 2,
/// Mistral), naming the format. Reference §3 rules: a response without EOS ends the episode
/// as truncated without stepping; full context ends it; turn limit ends it as truncated.
/// `seed` makes sampling reproducible: turn k of specs[i] draws from the stream
/// sampling_stream(seed + k * 1000003, i) (rollout/sampler.h), so an episode samples the same tokens
/// whatever else is played beside it and whatever max_batch is (logprobs equal up to summation order).
/// Each result's sample.temperature is the logprob temperature (sampling temperature, 1 if greedy).
/// `stats`, if given, receives the sampler's totals for the call (SamplerStats: rounds, peaks).
/// Throws what the sampler or the tokenizer throws (an environment's failure ends its episode, not
/// the call).
std::vector<EpisodeResult> play_episodes(PolicyRef policy, envsandbox::EnvServer& server,
                                         const std::vector<EpisodeSpec>& specs,
                                         const EpisodeOptions& options, uint64_t seed,
                                         SamplerStats* stats = nullptr);

}  // namespace spade::rollout
