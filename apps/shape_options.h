// Model-shape overrides shared by `spade bench trainer` and `spade bench step`: --layers, --hidden,
// --heads, --kv-heads, --head-dim, --intermediate, --vocab; 0 (the default) keeps the preset's value.
#pragma once
#include <CLI/CLI.hpp>

#include "policy/model_config.h"

namespace spade::apps {

struct ShapeOverrides {
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;

  /// Registers the seven options on `cmd`, bound to this object (which must outlive the parse).
  void add_to(CLI::App* cmd) {
    cmd->add_option("--layers", layers, "override: decoder layers");
    cmd->add_option("--hidden", hidden, "override: hidden size");
    cmd->add_option("--heads", heads, "override: attention (query) heads");
    cmd->add_option("--kv-heads", kv_heads, "override: key/value heads");
    cmd->add_option("--head-dim", head_dim, "override: head dimension");
    cmd->add_option("--intermediate", intermediate, "override: MLP width");
    cmd->add_option("--vocab", vocab, "override: vocabulary size");
  }

  /// Writes every non-zero override into `c`.
  void apply(policy::ModelConfig& c) const {
    if (layers > 0) c.num_hidden_layers = layers;
    if (hidden > 0) c.hidden_size = hidden;
    if (heads > 0) c.num_attention_heads = heads;
    if (kv_heads > 0) c.num_key_value_heads = kv_heads;
    if (head_dim > 0) c.head_dim = head_dim;
    if (intermediate > 0) c.intermediate_size = intermediate;
    if (vocab > 0) c.vocab_size = vocab;
  }
};

}  // namespace spade::apps
