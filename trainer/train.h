// `spade train` and `spade sft` end to end: run directory, corpus, seed environments, tokenizer,
// policy, sandbox, cold start, self-play, final checkpoint and summary.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policy/chat_template.h"
#include "policy/tokenizer.h"
#include "policy/transformer.h"
#include "rollout/policy_ref.h"
#include "trainer/config.h"
#include "trainer/corpus.h"
#include "trainer/run_dir.h"
#include "trainer/seed_envs.h"

namespace spade::trainer {

using LogFn = std::function<void(const std::string&)>;

/// The policy a run owns: tokenizer, chat template over it, model.
struct OwnedPolicy {
  policy::Tokenizer tokenizer;
  std::unique_ptr<policy::ChatTemplate> chat;
  policy::Transformer model{nullptr};
  rollout::PolicyRef ref() { return {model, tokenizer, *chat}; }
};

/// Loads corpus.path, or builds the corpus into the run directory from corpus.build_from (default:
/// default_corpus_sources()) when corpus.path is empty; reuses a corpus already built there.
Corpus prepare_corpus(const Config& config, const RunDir& run, const LogFn& log);

/// Tokenizer: tokenizer.path, else model.init_checkpoint's tokenizer.model, else one trained
/// into the run directory on corpus documents, seed programs and the prompt templates (reused if
/// already there). Model: `resume_checkpoint` when given (checkpointing.h load_training_policy),
/// else model.init_checkpoint (HF directory), else a random Llama-style decoder of the configured
/// shape. Throws spade::Error naming the file on bad input.
OwnedPolicy prepare_policy(const Config& config, const RunDir& run, const Corpus& corpus,
                           const std::vector<SeedEnv>& seeds, const LogFn& log,
                           const std::string& resume_checkpoint = "");

struct TrainOptions {
  bool selfplay = true;   // false: cold start only (`spade sft`)
  bool resume = false;    // continue the run directory of `config` from its newest checkpoint with
                          // trainer state (no warm start; metrics.jsonl cut back to that step)
  bool overwrite = false; // replace the run in the run directory (run_open.h); excludes resume
  std::vector<std::string> inputs = {};  // files read before the call (the --config file): never replaced
  /// Called on the main rank once the run directory is open (new, resumed or replaced), before any
  /// training: e.g. `spade train` starts its duel watcher there (apps/duel_watch.h).
  std::function<void(const RunDir& run)> on_run_open = nullptr;
};

/// The saved resolved config of an existing run directory (RUN_DIR/config.yaml) with `overrides`
/// applied, and run.out_dir / run.name pointing at `run_dir` wherever it now lives.
/// Throws spade::Error when RUN_DIR/config.yaml is missing or invalid.
Config load_run_config(const std::string& run_dir, const std::vector<std::string>& overrides = {});

/// Runs the whole job described by `config` and returns the final checkpoint directory.
/// The run directory <run.out_dir>/<run.name> is opened first (run_open.h): a new run needs it absent
/// or empty, options.resume continues the run there (refusing a config that changes its tokenizer,
/// model shape or corpus), options.overwrite replaces a run; run.out_dir must exist, except the
/// default runs/, which is created. Writes config.yaml (the config that made the files beside it),
/// the cold start's record (warm_start.jsonl, warm_start/* in TensorBoard) and summary.json (after the
/// cold start and at the end, atomically; a resumed run carries the cold start's record over).
/// Prints progress through `log`: a line per step and a closing summary. With options.resume, the
/// run continues exactly where its newest checkpoint left off: with run.deterministic set, the
/// metrics of the following steps equal those of an uninterrupted run (tests/trainer/test_resume.cpp).
/// Throws spade::Error when resuming a run without a resumable checkpoint, and (before writing
/// anything) when the run directory may not be opened so or train.device asks for CUDA that is not
/// available (trainer/device.h).
///
/// Device and precision: the policy (and the KL reference) live on train.device; every training tensor
/// follows the model's device; train.activation_checkpointing and train.autocast apply to the training
/// forward passes of the cold start and of self-play (the sampler runs the fp32 weights as they are).
///
/// Data parallel: when the process was launched as one rank of several (torchrun, srun, `spade train
/// --nproc N`; trainer/distributed.h reads the environment), the ranks join a process group
/// (config distributed.*). Rank 0 prepares the corpus and tokenizer and runs the cold start; the
/// others then load them from the run directory (which must be one shared directory, as on a
/// cluster file system) and receive rank 0's weights. Self-play splits as selfplay_dp.h says. Only
/// rank 0 logs through `log` and writes files; run.threads = 0 gives each rank cores / LOCAL_WORLD_SIZE
/// intra-op threads. Every rank returns the final checkpoint directory.
std::string run_train(const Config& config, const TrainOptions& options, const LogFn& log);

}  // namespace spade::trainer
