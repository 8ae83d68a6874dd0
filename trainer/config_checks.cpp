#include "trainer/config_checks.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <type_traits>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "policy/model_config.h"
#include "policy/model_shapes.h"
#include "rollout/prompts.h"
#include "trainer/config_keys.h"

namespace spade::trainer {

namespace {

using Locations = std::map<std::string, std::string>;
using config_keys::Rule;

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

// "[0, 1)", ">= 1", "> 0".
std::string describe(const Rule& r) {
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  std::string s;
  if (has_min && has_max)
    s = "in " + std::string(r.min_open ? "(" : "[") + number(r.min) + ", " + number(r.max) + (r.max_open ? ")" : "]");
  else if (has_min)
    s = (r.min_open ? "> " : ">= ") + number(r.min);
  else if (has_max)
    s = (r.max_open ? "< " : "<= ") + number(r.max);
  return r.note.empty() ? s : s + " (" + r.note + ")";
}

bool admits(const Rule& r, double x) {
  if (r.min_open ? !(x > r.min) : !(x >= r.min)) return false;
  if (r.max_open ? !(x < r.max) : !(x <= r.max)) return false;
  return true;
}

class Checker {
 public:
  Checker(const std::string& source, const Locations& locations) : source_(source), locations_(locations) {}

  // Where `key` was set: "FILE:LINE" / "--set K=V", or the config's name for a default.
  std::string at(const std::string& key) const {
    auto it = locations_.find(key);
    return it == locations_.end() ? source_ : it->second;
  }

  template <class T>
  void key(const std::string& key, const T& value, const Rule& rule) const {
    if constexpr (std::is_same_v<T, std::string>) {
      if (rule.check) rule.check(value, key, at(key));
    } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const double x = static_cast<double>(value);
      if (std::is_floating_point_v<T> && !std::isfinite(x))
        throw Error(at(key) + ": " + key + " must be a finite number" +
                    (describe(rule).empty() ? "" : " " + describe(rule)) + ", got " + number(x));
      if (!admits(rule, x)) throw Error(at(key) + ": " + key + " must be " + describe(rule) + ", got " + number(x));
    }
  }

  // A constraint between keys: "AT: KEYS: WHAT (KEY = VALUE at AT, ...)".
  void require(bool ok, const std::vector<std::pair<std::string, double>>& keys, const std::string& what) const {
    if (ok) return;
    std::string values;
    for (const auto& [k, v] : keys) {
      values += values.empty() ? "" : ", ";
      values += k + " = " + number(v) + " at " + at(k);
    }
    throw Error(at(keys.front().first) + ": " + what + " (" + values + ")");
  }

 private:
  const std::string& source_;
  const Locations& locations_;
};

void check_cross_keys(const Config& c, const Checker& ck) {
  const ModelConfigYaml& m = c.model;
  ck.require(m.hidden_size % m.num_attention_heads == 0,
             {{"model.hidden_size", m.hidden_size}, {"model.num_attention_heads", m.num_attention_heads}},
             "model.hidden_size must be a multiple of model.num_attention_heads (head size = hidden / heads)");
  ck.require(m.num_attention_heads % m.num_key_value_heads == 0,
             {{"model.num_attention_heads", m.num_attention_heads}, {"model.num_key_value_heads", m.num_key_value_heads}},
             "model.num_attention_heads must be a multiple of model.num_key_value_heads (grouped-query attention)");
  ck.require((m.hidden_size / m.num_attention_heads) % 2 == 0,
             {{"model.hidden_size", m.hidden_size}, {"model.num_attention_heads", m.num_attention_heads}},
             "the head size model.hidden_size / model.num_attention_heads must be even (RoPE rotates pairs)");
  const WarmStartConfig& w = c.warm_start;
  ck.require(w.designer_fraction + w.hint_fraction <= 1,
             {{"warm_start.designer_fraction", w.designer_fraction}, {"warm_start.hint_fraction", w.hint_fraction}},
             "warm_start.designer_fraction + warm_start.hint_fraction must be <= 1 (the rest are agent demos)");
  ck.require(c.corpus.min_words <= c.corpus.max_words,
             {{"corpus.min_words", c.corpus.min_words}, {"corpus.max_words", c.corpus.max_words}},
             "corpus.min_words must be <= corpus.max_words");
  const SelfPlayConfig& sp = c.selfplay;
  ck.require(sp.envs_per_regen >= sp.skills_per_regen,
             {{"selfplay.envs_per_regen", sp.envs_per_regen}, {"selfplay.skills_per_regen", sp.skills_per_regen}},
             "selfplay.envs_per_regen must be >= selfplay.skills_per_regen (each active skill gets environments)");
  ck.require(sp.designer_delay <= sp.k, {{"selfplay.designer_delay", sp.designer_delay}, {"selfplay.k", sp.k}},
             "selfplay.designer_delay must be <= selfplay.k (a generation's window is its k steps; 0 means k)");
  const bool uses_regret = (c.reward.designer_reward == "blend" && c.reward.w_regret > 0) ||
                           c.reward.designer_reward == "regret_based";
  ck.require(!uses_regret || sp.hint_plays >= 1, {{"selfplay.hint_plays", sp.hint_plays}},
             "selfplay.hint_plays must be >= 1 when reward.designer_reward = " + c.reward.designer_reward +
                 (c.reward.designer_reward == "blend" ? " with reward.w_regret > 0" : "") +
                 " (the regret is the hinted plays' return minus the no-hint plays')");
  ck.require(sp.agent.max_new_tokens <= sp.context_tokens,
             {{"selfplay.agent.max_new_tokens", sp.agent.max_new_tokens}, {"selfplay.context_tokens", sp.context_tokens}},
             "selfplay.agent.max_new_tokens must be <= selfplay.context_tokens (one turn fits the episode's context)");
  for (auto [name, s] : {std::pair{"designer", &sp.designer}, std::pair{"agent", &sp.agent}, std::pair{"hint", &sp.hint}}) {
    const std::string key = std::string("selfplay.") + name + ".temperature";
    ck.require(s->temperature == 0 || s->temperature >= 1e-5, {{key, s->temperature}},
               key + " must be 0 (greedy) or >= 1e-5 (rollout/sampler.h SamplingParams)");
  }
  // ZeRO-3 gathers a layer's weights for its forward and again for its recomputation in backward; a
  // stored-activation graph would keep every layer's gathered weights (trainer/parameter_shards.h).
  ck.require(c.distributed.sharding != "full" || c.train.activation_checkpointing,
             {{"train.activation_checkpointing", c.train.activation_checkpointing ? 1.0 : 0.0}},
             "distributed.sharding full needs train.activation_checkpointing: true (each layer's weights are "
             "gathered again to recompute it in backward)");
  if (c.distributed.inference_dtype != "fp32" && c.distributed.sharding != "full")
    throw Error(ck.at("distributed.inference_dtype") + ": distributed.inference_dtype " + c.distributed.inference_dtype +
                " needs distributed.sharding full, not " + c.distributed.sharding + " (only ZeRO-3 samples from a "
                "separate inference copy; the other modes sample from the trained fp32 weights themselves)");
  ck.require(c.reward.plateau_low <= c.reward.plateau_high,
             {{"reward.plateau_low", c.reward.plateau_low}, {"reward.plateau_high", c.reward.plateau_high}},
             "reward.plateau_low must be <= reward.plateau_high");
  ck.require(c.memory.band_low <= c.memory.band_high,
             {{"memory.band_low", c.memory.band_low}, {"memory.band_high", c.memory.band_high}},
             "memory.band_low must be <= memory.band_high");
  ck.require(!c.loss.tis || c.loss.tis_low < c.loss.tis_cap,
             {{"loss.tis_low", c.loss.tis_low}, {"loss.tis_cap", c.loss.tis_cap}},
             "loss.tis_low must be < loss.tis_cap (the TIS weight is clamped to [tis_low, tis_cap])");
  ck.require(c.loss.dual_clip_c == 0 || c.loss.dual_clip_c > 1, {{"loss.dual_clip_c", c.loss.dual_clip_c}},
             "loss.dual_clip_c must be 0 (off) or > 1 (dual clip: the loss of a negative advantage is capped at c |A|)");
  std::set<std::string> listed;
  const rollout::Setting setting = rollout::parse_setting(sp.setting);  // checked by its key's rule
  for (const std::string& s : sp.skills) {
    try {
      rollout::find_skill(s, setting);
    } catch (const Error& e) {
      throw Error(ck.at("selfplay.skills") + ": selfplay.skills (selfplay.setting " + sp.setting + "): " + e.what());
    }
    if (!listed.insert(rollout::find_skill(s, setting).slug).second)
      throw Error(ck.at("selfplay.skills") + ": selfplay.skills lists '" + s + "' twice");
  }
  ck.require(sp.skills.empty() || static_cast<int>(sp.skills.size()) >= sp.skills_per_regen,
             {{"selfplay.skills_per_regen", sp.skills_per_regen}},
             "selfplay.skills must list at least selfplay.skills_per_regen skills (" + std::to_string(sp.skills.size()) +
                 " listed)");
  if (sp.self_validate && setting != rollout::Setting::kToolUse)
    throw Error(ck.at("selfplay.self_validate") +
                ": selfplay.self_validate is the tool-use self-validator: it needs selfplay.setting: tool_use (is " +
                sp.setting + ")");
  ck.require(c.eval.every == 0 || !c.eval.sets.empty(), {{"eval.every", c.eval.every}},
             "eval.sets must name at least one environment folder when eval.every > 0");
  ck.require(c.eval.temperature == 0 || c.eval.temperature >= 1e-5, {{"eval.temperature", c.eval.temperature}},
             "eval.temperature must be 0 (greedy) or >= 1e-5");
  const DuelYaml& d = c.duel;
  ck.require(d.every == 0 || d.every % c.checkpoint.every == 0,
             {{"duel.every", d.every}, {"checkpoint.every", c.checkpoint.every}},
             "duel.every must be a multiple of checkpoint.every (the watcher scores saved checkpoints)");
  ck.require(d.every == 0 || !d.arena.empty(), {{"duel.every", d.every}},
             "duel.arena must name an arena file (e.g. configs/duel/arena-tiny.yaml) when duel.every > 0");
  ck.require(d.every == 0 || !d.opponents.empty(), {{"duel.every", d.every}},
             "duel.opponents must list at least one participant when duel.every > 0 (the first incumbents)");
  for (const std::string& o : d.opponents) {
    const size_t eq = o.find('=');
    const bool model = eq == std::string::npos && o.rfind("checkpoint:", 0) != 0;
    if (o.empty() || eq == 0 || (eq != std::string::npos && eq + 1 == o.size()))
      throw Error(ck.at("duel.opponents") + ": duel.opponents: '" + o +
                  "' is not ID=SCRIPT.json, checkpoint:DIR or a model id");
    if (model && d.endpoints.empty())
      throw Error(ck.at("duel.opponents") + ": duel.opponents: '" + o +
                  "' is a model id, so duel.endpoints must name the endpoints file that says how to call it");
  }
  // The KL penalty is to a frozen reference policy loaded from disk (so a resumed run has the same).
  // A named model.shape stands for the init checkpoint still to be filled in (train requires it).
  if (c.loss.kl_coef != 0 && c.loss.kl_reference.empty() && c.model.init_checkpoint.empty() && c.model.shape.empty())
    throw Error(ck.at("loss.kl_coef") + ": loss.kl_reference must be set (an HF checkpoint directory) when "
                "loss.kl_coef > 0 and model.init_checkpoint is empty");
  // model.shape names a checkpoint's architecture: the random-init keys would be ignored, so changing
  // them beside it is a mistake to report, not to ignore. (Compared with the defaults, not by where they
  // were set: a saved config.yaml lists every key.)
  if (!c.model.shape.empty()) {
    const ModelConfigYaml d;
    const std::pair<const char*, bool> changed[] = {
        {"model.hidden_size", m.hidden_size != d.hidden_size},
        {"model.intermediate_size", m.intermediate_size != d.intermediate_size},
        {"model.num_hidden_layers", m.num_hidden_layers != d.num_hidden_layers},
        {"model.num_attention_heads", m.num_attention_heads != d.num_attention_heads},
        {"model.num_key_value_heads", m.num_key_value_heads != d.num_key_value_heads},
        {"model.max_position_embeddings", m.max_position_embeddings != d.max_position_embeddings},
        {"model.rope_theta", m.rope_theta != d.rope_theta},
        {"model.rms_norm_eps", m.rms_norm_eps != d.rms_norm_eps},
        {"model.tie_word_embeddings", m.tie_word_embeddings != d.tie_word_embeddings},
        {"model.init_std", m.init_std != d.init_std}};
    for (const auto& [key, differs] : changed)
      if (differs)
        throw Error(ck.at(key) + ": " + key + " shapes a randomly initialised model, but model.shape = " +
                    c.model.shape + " (at " + ck.at("model.shape") +
                    ") names a checkpoint's architecture; drop one of them");
  }
}

// "" when `file` (a config.json) has the tensor shapes of checkpoint shape `name`, else what differs.
std::string shape_mismatch(const policy::ModelConfig& file, const std::string& name) {
  const policy::ModelConfig want = policy::checkpoint_shape(name);
  std::string out;
  auto cmp = [&](const char* field, int64_t got, int64_t expected) {
    if (got != expected)
      out += (out.empty() ? "" : ", ") + std::string(field) + " " + std::to_string(got) + " (" + name + ": " +
             std::to_string(expected) + ")";
  };
  cmp("vocab_size", file.vocab_size, want.vocab_size);
  cmp("hidden_size", file.hidden_size, want.hidden_size);
  cmp("num_hidden_layers", file.num_hidden_layers, want.num_hidden_layers);
  cmp("num_attention_heads", file.num_attention_heads, want.num_attention_heads);
  cmp("num_key_value_heads", file.kv_heads(), want.kv_heads());
  cmp("head_dim", file.head_size(), want.head_size());
  cmp("num_experts", file.num_experts, want.num_experts);
  if (want.num_experts > 0) {
    cmp("num_experts_per_tok", file.num_experts_per_tok, want.num_experts_per_tok);
    cmp("moe_intermediate_size", file.moe_intermediate_size, want.moe_intermediate_size);
  } else {
    cmp("intermediate_size", file.intermediate_size, want.intermediate_size);
  }
  cmp("tie_word_embeddings", file.tie_word_embeddings, want.tie_word_embeddings);
  return out;
}

void require_path(const std::string& source, const std::string& key, const std::string& path, bool directory,
                  const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool ok = directory ? fs::is_directory(path, ec) : fs::exists(path, ec);
  if (!ok)
    throw Error(source + ": " + key + ": " + path + " does not exist" +
                (directory && fs::exists(path, ec) ? " as a directory" : "") + " (" + what + ")");
}

}  // namespace

void check_config(const Config& config, const std::string& source_name, const Locations& locations) {
  const Checker ck(source_name, locations);
  config_keys::visit(config, [&](const std::string& key, const auto& value, const Rule& rule) {
    ck.key(key, value, rule);
  });
  check_cross_keys(config, ck);
}

void check_inputs(const Config& c, const std::string& source) {
  if (!c.corpus.path.empty()) require_path(source, "corpus.path", c.corpus.path, false, "a JSONL corpus");
  for (const std::string& p : c.corpus.build_from)
    require_path(source, "corpus.build_from", p, false, "a file or directory to build the corpus from");
  if (!c.tokenizer.path.empty())
    require_path(source, "tokenizer.path", c.tokenizer.path, false, "a trained tokenizer.model");
  require_path(source, "seed_envs.dir", c.seed_envs.dir, true, "the seed environments, <skill>/<name>.py");
  if (!c.selfplay.pool_dir.empty())
    require_path(source, "selfplay.pool_dir", c.selfplay.pool_dir, true, "a fixed pool, <skill>/<name>.py");
  for (const std::string& p : c.eval.sets)
    require_path(source, "eval.sets", p, true, "an environment set, <skill>/<name>.py");
  if (c.duel.every > 0) {
    require_path(source, "duel.arena", c.duel.arena, false, "an arena file, configs/duel/arena*.yaml");
    if (!c.duel.endpoints.empty())
      require_path(source, "duel.endpoints", c.duel.endpoints, false, "an endpoints file, configs/duel/endpoints.yaml");
    for (const std::string& o : c.duel.opponents) {
      const size_t eq = o.find('=');
      if (eq != std::string::npos)
        require_path(source, "duel.opponents", o.substr(eq + 1), false, "a replay script, {session key: [commands]}");
      else if (o.rfind("checkpoint:", 0) == 0)
        require_path(source, "duel.opponents", o.substr(11) + "/config.json", false,
                     "an HF checkpoint directory holds config.json");
    }
  }
  if (!c.model.init_checkpoint.empty()) {
    const std::string file = c.model.init_checkpoint + "/config.json";
    require_path(source, "model.init_checkpoint", file, false, "an HF checkpoint directory holds config.json");
    if (!c.model.shape.empty()) {
      const std::string diff = shape_mismatch(
          policy::ModelConfig::from_json(nlohmann::json::parse(read_file(file)), file), c.model.shape);
      if (!diff.empty())
        throw Error(source + ": model.init_checkpoint: " + file + " is not a " + c.model.shape +
                    " (model.shape): " + diff + "; fix model.shape or the checkpoint path");
    }
  }
  if (c.loss.kl_coef != 0 && !c.loss.kl_reference.empty())
    require_path(source, "loss.kl_reference", c.loss.kl_reference + "/config.json", false,
                 "an HF checkpoint directory holds config.json");
}

void check_trainable(const Config& c, const std::string& source) {
  if (!c.model.shape.empty() && c.model.init_checkpoint.empty())
    throw Error(source + ": model.init_checkpoint is empty: model.shape = " + c.model.shape +
                " names the architecture of a pretrained checkpoint, which this config trains from; set "
                "model.init_checkpoint to its Hugging Face directory (e.g. --set model.init_checkpoint=DIR), "
                "or clear model.shape to train a randomly initialised model.* shape");
}

}  // namespace spade::trainer
