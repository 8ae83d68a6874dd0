// Cold start (issue 2, step 4): supervised training of the freshly initialised policy on
// (a) designer examples: a designer prompt built from a corpus document and a skill -> a seed
//     environment of that skill in a ```python block (tool use: the tool-use prompt, asking for the
//     task variant the seed declares in its header);
// (b) agent demonstrations: multi-turn episodes that play seed environments in the sandbox with
//     the actions of their solution(), each written as \boxed{action} (tool use: the solution's
//     responses as written, after the tool-use opening, each call answered by a tool turn, exactly
//     as rollout/episode.h plays an episode: rollout/agent_turn.h);
// (c) hint examples: the hint prompt on a seed program -> its hand-written hint (<name>.hint.txt;
//     tool use: the plan prompt).
// Loss: token-mean cross-entropy on the loss-masked (assistant) tokens. Time-boxed.
#pragma once
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "envsandbox/game.h"
#include "envsandbox/sandbox.h"
#include "rollout/policy_ref.h"
#include "rollout/sample.h"
#include "trainer/config.h"
#include "trainer/corpus.h"
#include "trainer/seed_envs.h"

namespace spade::trainer {

/// Builds a designer example for `env`: prompt (designer system + user prompt grounded in `doc`, or
/// ungrounded when nullopt, with `reference` shown as a memory reference when non-empty) ->
/// "```python\n<code>```" + EOS.
rollout::Sample designer_example(const rollout::PolicyRef& policy, const SeedEnv& env,
                                 const std::optional<std::string>& doc, const std::string& reference,
                                 int max_turns);

/// Builds a hint-writing example for `env` (requires env.hint): designer system + hint prompt on the
/// program -> the hint + EOS (paper §4.2: the hint writer sees the code).
rollout::Sample hint_example(const rollout::PolicyRef& policy, const SeedEnv& env);

/// The designer targets of the cold start: the `per_skill` shortest programs of each skill, or all
/// seeds when per_skill is 0. Sorted by path.
std::vector<const SeedEnv*> designer_targets(const std::vector<SeedEnv>& seeds, int per_skill);

/// Plays `env` with its own solution() for reset seeds [0, n) in the sandbox and returns one
/// demonstration per winning episode (assistant turns "\boxed{a}" + EOS, mask 1; observations 0).
/// A tool-use seed (its skill a tool-use skill) opens with its tools (policy::tool_use_opening), its
/// replies are the solution's responses as written (Llama 3.1: a call without its <tool_call> tags)
/// and carry Sample::tool_segments.
/// Episodes whose solution does not win are dropped (counted in *dropped when non-null).
std::vector<rollout::Sample> agent_demonstrations(const rollout::PolicyRef& policy,
                                                  envsandbox::EnvServer& server, const SeedEnv& env,
                                                  int n, int max_turns, int* dropped = nullptr);

struct WarmStartStats {
  int steps = 0;
  double seconds = 0;
  double first_loss = 0, last_loss = 0;  // mean token cross-entropy (nats) of the first/last step
  int64_t tokens = 0;
  int designer_examples = 0, agent_examples = 0, hint_examples = 0;
  std::string stopped_by;  // "max_steps" (the step cap) or "max_seconds" (the time box)
};

/// One optimizer step of the cold start, numbered from 1 (the n-th step): what warm_start.jsonl and
/// TensorBoard record.
struct WarmStartStep {
  int step = 0;
  double loss = 0;     // mean token cross-entropy (nats) of the step's batch
  double lr = 0;       // the learning rate the step used
  int64_t tokens = 0;  // tokens in the step's batch
  double seconds = 0;  // since the cold start began (demonstrations included)
};

/// Runs the cold start: agent demonstrations are built once; designer examples are drawn fresh
/// each step (random designer target, random corpus document, a same-skill reference with
/// probability warm_start.reference_fraction); the mixture is designer_fraction designer examples,
/// hint_fraction hint examples, the rest agent demonstrations.
/// Stops at warm_start.max_seconds or max_steps (WarmStartStats::stopped_by says which). `log`
/// receives one line per progress report; `on_step` (when set) every step, in order.
WarmStartStats run_warm_start(rollout::PolicyRef policy, envsandbox::EnvServer& server,
                              const std::vector<SeedEnv>& seeds, Corpus& corpus, const Config& config,
                              const std::function<void(const std::string&)>& log,
                              const std::function<void(const WarmStartStep&)>& on_step = {});

}  // namespace spade::trainer
