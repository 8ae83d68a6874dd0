// The load-time checks of a run config: every key against its rule (config_keys.h: ranges, enums
// through the owning library's parser) and the constraints between keys; and, separately, the input
// files and checkpoints a config names. Torch-free; thread-safe (pure functions of their arguments,
// check_inputs reads the filesystem).
#pragma once
#include <map>
#include <string>

#include "trainer/config.h"

namespace spade::trainer {

/// Checks every key of `config` against its rule, then the cross-key constraints (model heads divide
/// the hidden size and kv heads the heads, head size even; warm-start fractions; corpus word bounds;
/// environments per regeneration >= active skills; hinted plays when the designer reward uses the
/// regret; agent max_new_tokens <= context_tokens; sampling temperatures 0 or >= 1e-5; plateau and
/// memory bands ordered; TIS floor below its cap; dual clip off or > 1; a KL reference when kl_coef > 0
/// (model.init_checkpoint, or model.shape standing for it); no random-init model.* key set beside model.shape).
/// Throws spade::Error at the first violation, "AT: KEY must be RULE, got VALUE": AT is where the key
/// was set (`locations[key]`: "FILE:LINE" or "--set K=V"), else `source_name` (a default). Enum errors
/// list the allowed names. Cross-key errors name every key involved and where each was set.
void check_config(const Config& config, const std::string& source_name,
                  const std::map<std::string, std::string>& locations);

/// Checks that the inputs the config names exist, before anything is built: corpus.path (a file),
/// each corpus.build_from entry, tokenizer.path (a file), seed_envs.dir (a directory),
/// model.init_checkpoint and loss.kl_reference (HF directories: config.json inside; the KL reference
/// only when loss.kl_coef > 0). Relative paths are taken from the working directory, as the trainer
/// opens them. Throws spade::Error "SOURCE: KEY: PATH does not exist ..." at the first missing one.
/// With model.shape set and a checkpoint present, its config.json must have that shape's tensor sizes
/// (vocabulary, widths, layers, heads, head size, experts, tied embeddings; policy/model_shapes.h):
/// spade::Error naming each field that differs otherwise.
void check_inputs(const Config& config, const std::string& source_name);

/// What only a real run needs beyond check_inputs (the dry-run plans without it): a config whose
/// model.shape names a pretrained architecture must name the checkpoint (model.init_checkpoint), since
/// a named shape is never randomly initialised. Throws spade::Error "SOURCE: model.init_checkpoint is
/// empty: ..." saying what to set.
void check_trainable(const Config& config, const std::string& source_name);

}  // namespace spade::trainer
