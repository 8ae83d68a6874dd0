#include "trainer/config.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "common/atomic_file.h"
#include "common/edit_distance.h"
#include "common/error.h"
#include "trainer/device.h"

namespace spade::trainer {

namespace {

// The single list of configurable fields: key path -> member. Used for loading, --set and saving.
template <class F>
void visit_fields(Config& c, F&& f) {
  f("run.name", c.run.name);
  f("run.out_dir", c.run.out_dir);
  f("run.seed", c.run.seed);
  f("run.threads", c.run.threads);
  f("run.deterministic", c.run.deterministic);
  f("train.device", c.train.device);
  f("train.activation_checkpointing", c.train.activation_checkpointing);
  f("train.autocast", c.train.autocast);
  f("train.attention", c.train.attention);
  f("train.peak_tflops", c.train.peak_tflops);
  f("corpus.path", c.corpus.path);
  f("corpus.build_from", c.corpus.build_from);
  f("corpus.max_words", c.corpus.max_words);
  f("corpus.min_words", c.corpus.min_words);
  f("corpus.sample_seed", c.corpus.sample_seed);
  f("tokenizer.path", c.tokenizer.path);
  f("tokenizer.vocab_size", c.tokenizer.vocab_size);
  f("model.init_checkpoint", c.model.init_checkpoint);
  f("model.hidden_size", c.model.hidden_size);
  f("model.intermediate_size", c.model.intermediate_size);
  f("model.num_hidden_layers", c.model.num_hidden_layers);
  f("model.num_attention_heads", c.model.num_attention_heads);
  f("model.num_key_value_heads", c.model.num_key_value_heads);
  f("model.max_position_embeddings", c.model.max_position_embeddings);
  f("model.rope_theta", c.model.rope_theta);
  f("model.rms_norm_eps", c.model.rms_norm_eps);
  f("model.tie_word_embeddings", c.model.tie_word_embeddings);
  f("model.init_std", c.model.init_std);
  f("seed_envs.dir", c.seed_envs.dir);
  f("warm_start.enabled", c.warm_start.enabled);
  f("warm_start.max_seconds", c.warm_start.max_seconds);
  f("warm_start.max_steps", c.warm_start.max_steps);
  f("warm_start.lr", c.warm_start.lr);
  f("warm_start.warmup_steps", c.warm_start.warmup_steps);
  f("warm_start.batch_tokens", c.warm_start.batch_tokens);
  f("warm_start.designer_fraction", c.warm_start.designer_fraction);
  f("warm_start.demos_per_env", c.warm_start.demos_per_env);
  f("warm_start.reference_fraction", c.warm_start.reference_fraction);
  f("warm_start.hint_fraction", c.warm_start.hint_fraction);
  f("warm_start.designer_seeds_per_skill", c.warm_start.designer_seeds_per_skill);
  f("selfplay.steps", c.selfplay.steps);
  f("selfplay.k", c.selfplay.k);
  f("selfplay.envs_per_regen", c.selfplay.envs_per_regen);
  f("selfplay.skills_per_regen", c.selfplay.skills_per_regen);
  f("selfplay.plays_per_env", c.selfplay.plays_per_env);
  f("selfplay.hint_plays", c.selfplay.hint_plays);
  f("selfplay.max_attempts", c.selfplay.max_attempts);
  f("selfplay.max_turns", c.selfplay.max_turns);
  f("selfplay.context_tokens", c.selfplay.context_tokens);
  f("selfplay.hint_max_tokens", c.selfplay.hint_max_tokens);
  f("selfplay.max_batch", c.selfplay.max_batch);
  f("selfplay.max_tokens_in_flight", c.selfplay.max_tokens_in_flight);
  f("selfplay.fill_with_seeds", c.selfplay.fill_with_seeds);
  for (auto [name, s] : {std::pair<const char*, SamplingYaml*>{"designer", &c.selfplay.designer},
                         {"agent", &c.selfplay.agent},
                         {"hint", &c.selfplay.hint}}) {
    const std::string p = std::string("selfplay.") + name + ".";
    f(p + "temperature", s->temperature);
    f(p + "top_p", s->top_p);
    f(p + "top_k", s->top_k);
    f(p + "min_p", s->min_p);
    f(p + "max_new_tokens", s->max_new_tokens);
    f(p + "decode_graph", s->decode_graph);
  }
  f("reward.designer_reward", c.reward.designer_reward);
  f("reward.regret_scale", c.reward.regret_scale);
  f("reward.plateau_low", c.reward.plateau_low);
  f("reward.plateau_high", c.reward.plateau_high);
  f("reward.plateau_ramp", c.reward.plateau_ramp);
  f("reward.w_regret", c.reward.w_regret);
  f("reward.w_anchor", c.reward.w_anchor);
  f("reward.actor_std_eps", c.reward.actor_std_eps);
  f("reward.scale_by_std", c.reward.scale_by_std);
  f("reward.filter_zero_std_groups", c.reward.filter_zero_std_groups);
  f("reward.mask_truncated", c.reward.mask_truncated);
  f("reward.designer_scale_cap", c.reward.designer_scale_cap);
  f("reward.ema_fast", c.reward.ema_fast);
  f("reward.ema_slow", c.reward.ema_slow);
  f("reward.frontier_weight", c.reward.frontier_weight);
  f("reward.frontier_scale", c.reward.frontier_scale);
  f("reward.lp_variance_bonus", c.reward.lp_variance_bonus);
  f("loss.eps_low", c.loss.eps_low);
  f("loss.eps_high", c.loss.eps_high);
  f("loss.dual_clip_c", c.loss.dual_clip_c);
  f("loss.agg_mode", c.loss.agg_mode);
  f("loss.max_len", c.loss.max_len);
  f("loss.tis", c.loss.tis);
  f("loss.tis_cap", c.loss.tis_cap);
  f("loss.tis_low", c.loss.tis_low);
  f("loss.tis_level", c.loss.tis_level);
  f("loss.entropy_coef", c.loss.entropy_coef);
  f("loss.kl_coef", c.loss.kl_coef);
  f("loss.kl_type", c.loss.kl_type);
  f("loss.kl_reference", c.loss.kl_reference);
  f("optim.lr", c.optim.lr);
  f("optim.weight_decay", c.optim.weight_decay);
  f("optim.beta1", c.optim.beta1);
  f("optim.beta2", c.optim.beta2);
  f("optim.adam_eps", c.optim.adam_eps);
  f("optim.grad_clip", c.optim.grad_clip);
  f("optim.micro_batch_tokens", c.optim.micro_batch_tokens);
  f("optim.mini_batches", c.optim.mini_batches);
  f("optim.lr_schedule", c.optim.lr_schedule);
  f("optim.warmup_steps", c.optim.warmup_steps);
  f("optim.min_lr_ratio", c.optim.min_lr_ratio);
  f("optim.logprob_chunk_rows", c.optim.logprob_chunk_rows);
  f("sandbox.load_timeout_s", c.sandbox.load_timeout_s);
  f("sandbox.call_timeout_s", c.sandbox.call_timeout_s);
  f("sandbox.episode_timeout_s", c.sandbox.episode_timeout_s);
  f("sandbox.memory_limit_mb", c.sandbox.memory_limit_mb);
  f("sandbox.cpu_limit_s", c.sandbox.cpu_limit_s);
  f("sandbox.namespaces", c.sandbox.namespaces);
  f("sandbox.seccomp", c.sandbox.seccomp);
  f("sandbox.cgroups", c.sandbox.cgroups);
  f("sandbox.pool_memory_mb", c.sandbox.pool_memory_mb);
  f("sandbox.spare_children", c.sandbox.spare_children);
  f("sandbox.preload_spares", c.sandbox.preload_spares);
  f("sandbox.spin_us", c.sandbox.spin_us);
  f("sandbox.max_obs_chars", c.sandbox.max_obs_chars);
  f("memory.size", c.memory.size);
  f("memory.positive_seeds", c.memory.positive_seeds);
  f("memory.band_low", c.memory.band_low);
  f("memory.band_high", c.memory.band_high);
  f("memory.enabled", c.memory.enabled);
  f("checkpoint.every", c.checkpoint.every);
  f("checkpoint.keep_last", c.checkpoint.keep_last);
  f("checkpoint.dtype", c.checkpoint.dtype);
  f("distributed.backend", c.distributed.backend);
  f("distributed.bucket_mb", c.distributed.bucket_mb);
  f("distributed.timeout_s", c.distributed.timeout_s);
}

// Sets one field from a node; `where` ("FILE:LINE" or "--set KEY=VALUE") starts its error messages.
using Setter = std::function<void(const YAML::Node&, const std::string& where)>;

// What a field of type T accepts, as the error for a value of the wrong type words it.
template <class T>
const char* expected_type() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true or false)";
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return "a non-negative integer";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else return "a list of strings, e.g. [a, b]";
}

// What `node` holds, for an error message: 'text' for a scalar, else its kind.
std::string describe_value(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "an empty value";
}

// "FILE:LINE" of a node read from FILE (yaml-cpp's marks are 0-based, -1 when unknown).
std::string at(const std::string& file, const YAML::Mark& mark) {
  return mark.line >= 0 ? file + ":" + std::to_string(mark.line + 1) : file;
}

template <class T>
Setter make_setter(T& field, const std::string& key) {
  return [&field, key](const YAML::Node& node, const std::string& where) {
    bool ok = false;
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (node.IsNull()) {
        field.clear();
        return;
      }
      if (node.IsSequence()) {
        ok = true;
        for (const YAML::Node& item : node) ok &= item.IsScalar();
      }
    } else {
      ok = node.IsScalar();
    }
    if (ok) {
      try {
        field = node.as<T>();
        return;
      } catch (const YAML::Exception&) {
      }
    }
    throw Error(where + ": " + key + " expects " + expected_type<T>() + ", got " +
                describe_value(node));
  };
}

std::map<std::string, Setter> setters(Config& c) {
  std::map<std::string, Setter> out;
  visit_fields(c, [&](const std::string& key, auto& field) { out[key] = make_setter(field, key); });
  return out;
}

// Every section ("selfplay", "selfplay.agent", ...) that holds a key of `set`.
std::set<std::string> sections_of(const std::map<std::string, Setter>& set) {
  std::set<std::string> out;
  for (const auto& [key, _] : set)
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      out.insert(key.substr(0, dot));
  return out;
}

// The error for `key`, which is no key of `set`: a section named as a key, or an unknown name with the
// closest valid one (keys, and in a file sections too, since a file can misspell a section's name).
Error unknown_key(const std::string& where, const std::string& key, const std::map<std::string, Setter>& set,
                  bool sections_allowed) {
  const std::set<std::string> sections = sections_of(set);
  if (sections.count(key))
    return Error(where + ": '" + key + "' is a section, not a key: set one of its keys, e.g. " + key + "." +
                 set.lower_bound(key + ".")->first.substr(key.size() + 1) +
                 " (`spade config show` lists every key)");
  std::vector<std::string> names;
  for (const auto& [k, _] : set) names.push_back(k);
  if (sections_allowed) names.insert(names.end(), sections.begin(), sections.end());
  const std::string hint = did_you_mean(key, names);
  return Error(where + ": unknown config key '" + key + "'" +
               (hint.empty() ? " (`spade config show` lists every valid key)" : hint));
}

void apply_node(const YAML::Node& node, const std::string& prefix, std::map<std::string, Setter>& set,
                const std::string& where) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix.empty() ? it->first.as<std::string>()
                                           : prefix + "." + it->first.as<std::string>();
    const YAML::Node& value = it->second;
    auto found = set.find(key);
    if (found != set.end()) {
      found->second(value, at(where, value.Mark()));
      continue;
    }
    const auto first_inside = set.lower_bound(key + ".");
    const bool is_section = first_inside != set.end() && first_inside->first.rfind(key + ".", 0) == 0;
    if (is_section && value.IsMap()) {
      apply_node(value, key, set, where);
      continue;
    }
    if (is_section)
      throw Error(at(where, it->first.Mark()) + ": '" + key + "' is a section: it holds keys (e.g. " +
                  first_inside->first + "), got " + describe_value(value));
    throw unknown_key(at(where, it->first.Mark()), key, set, /*sections_allowed=*/true);
  }
}

void apply_overrides(const std::vector<std::string>& overrides, std::map<std::string, Setter>& set) {
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--set " + o + ": expected KEY=VALUE, e.g. --set selfplay.steps=8");
    const std::string key = o.substr(0, eq);
    auto found = set.find(key);
    if (found == set.end()) throw unknown_key("--set " + o, key, set, /*sections_allowed=*/false);
    YAML::Node value;
    try {
      value = YAML::Load(o.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw Error("--set " + o + ": cannot parse value: " + e.msg);
    }
    found->second(value, "--set " + o);
  }
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides) {
  Config config;
  auto set = setters(config);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(source_name + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (root && !root.IsNull()) {
    if (!root.IsMap()) throw Error(source_name + ": the top level must be a mapping of sections");
    apply_node(root, "", set, source_name);
  }
  apply_overrides(overrides, set);
  validate(config);
  return config;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_file(path), path, overrides);
}

std::string to_yaml(const Config& config) {
  Config& c = const_cast<Config&>(config);  // visit_fields only reads here
  YAML::Node root(YAML::NodeType::Map);
  visit_fields(c, [&](const std::string& key, auto& field) {
    std::vector<std::string> parts;
    std::stringstream ss(key);
    for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
    // yaml-cpp nodes are handles: `a = b` copies the value, reset() rebinds the handle.
    YAML::Node node;
    node.reset(root);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = node[parts[i]];
      node.reset(child);
    }
    node[parts.back()] = field;
  });
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return std::string(out.c_str()) + "\n";
}

void validate(const Config& c) {
  auto require = [](bool ok, const std::string& key, const std::string& rule) {
    if (!ok) throw Error("config: " + key + " must be " + rule);
  };
  require(valid_device_spec(c.train.device), "train.device",
          "auto, cpu, cuda or cuda:N (N a GPU index), not '" + c.train.device + "'");
  require(c.train.autocast == "none" || c.train.autocast == "bf16", "train.autocast", "none or bf16");
  require(c.train.attention == "auto" || c.train.attention == "matmul" || c.train.attention == "sdpa",
          "train.attention", "auto, matmul or sdpa, not '" + c.train.attention + "'");
  for (auto [name, s] : {std::pair<const char*, const SamplingYaml*>{"designer", &c.selfplay.designer},
                         {"agent", &c.selfplay.agent},
                         {"hint", &c.selfplay.hint}})
    require(s->decode_graph == "auto" || s->decode_graph == "off" || s->decode_graph == "on",
            std::string("selfplay.") + name + ".decode_graph", "auto, off or on, not '" + s->decode_graph + "'");
  require(c.train.peak_tflops >= 0, "train.peak_tflops", ">= 0 (0: perf/mfu not logged)");
  require(c.selfplay.k >= 1, "selfplay.k", ">= 1");
  require(c.selfplay.steps >= 0, "selfplay.steps", ">= 0");
  require(c.selfplay.envs_per_regen >= 1, "selfplay.envs_per_regen", ">= 1");
  require(c.selfplay.skills_per_regen >= 1 && c.selfplay.skills_per_regen <= 6,
          "selfplay.skills_per_regen", "in [1, 6]");
  require(c.selfplay.plays_per_env >= 1, "selfplay.plays_per_env", ">= 1");
  require(c.selfplay.hint_plays >= 0, "selfplay.hint_plays", ">= 0");
  require(c.selfplay.max_attempts >= 1, "selfplay.max_attempts", ">= 1");
  require(c.selfplay.max_turns >= 1, "selfplay.max_turns", ">= 1");
  require(c.selfplay.max_tokens_in_flight >= 0, "selfplay.max_tokens_in_flight", ">= 0 (0: unlimited)");
  require(c.tokenizer.vocab_size >= 256, "tokenizer.vocab_size", ">= 256");
  require(c.model.num_attention_heads % c.model.num_key_value_heads == 0,
          "model.num_attention_heads", "a multiple of model.num_key_value_heads");
  require(c.model.hidden_size % c.model.num_attention_heads == 0, "model.hidden_size",
          "a multiple of model.num_attention_heads");
  require(c.warm_start.designer_fraction >= 0 && c.warm_start.hint_fraction >= 0 &&
              c.warm_start.designer_fraction + c.warm_start.hint_fraction <= 1,
          "warm_start.designer_fraction + warm_start.hint_fraction", "in [0, 1]");
  require(c.warm_start.designer_seeds_per_skill >= 0, "warm_start.designer_seeds_per_skill", ">= 0");
  require(c.optim.lr_schedule == "constant" || c.optim.lr_schedule == "linear_warmup" ||
              c.optim.lr_schedule == "cosine",
          "optim.lr_schedule", "constant, linear_warmup or cosine");
  require(c.optim.warmup_steps >= 0, "optim.warmup_steps", ">= 0");
  require(c.optim.min_lr_ratio >= 0 && c.optim.min_lr_ratio <= 1, "optim.min_lr_ratio", "in [0, 1]");
  require(c.optim.micro_batch_tokens >= 64, "optim.micro_batch_tokens", ">= 64");
  require(c.optim.mini_batches >= 1, "optim.mini_batches", ">= 1 (1: one optimizer step per rollout)");
  require(c.checkpoint.dtype == "fp32" || c.checkpoint.dtype == "bf16", "checkpoint.dtype",
          "fp32 or bf16");
  require(c.distributed.backend == "auto" || c.distributed.backend == "gloo" || c.distributed.backend == "nccl",
          "distributed.backend", "auto, gloo or nccl");
  require(c.distributed.bucket_mb > 0, "distributed.bucket_mb", "> 0");
  require(c.distributed.timeout_s > 0, "distributed.timeout_s", "> 0");
  require(c.sandbox.namespaces == "auto" || c.sandbox.namespaces == "require" || c.sandbox.namespaces == "off",
          "sandbox.namespaces", "auto, require or off");
  require(c.sandbox.memory_limit_mb >= 16, "sandbox.memory_limit_mb", ">= 16");
  require(c.sandbox.cpu_limit_s >= 1, "sandbox.cpu_limit_s", ">= 1");
  require(c.sandbox.episode_timeout_s >= 0, "sandbox.episode_timeout_s", ">= 0 seconds (0: no limit)");
  require(c.sandbox.pool_memory_mb >= 0, "sandbox.pool_memory_mb", ">= 0 (0: half of MemTotal)");
  require(c.sandbox.spare_children >= 0 && c.sandbox.spare_children <= 64, "sandbox.spare_children", "in [0, 64]");
  require(c.sandbox.preload_spares >= 0 && c.sandbox.preload_spares <= 64, "sandbox.preload_spares", "in [0, 64]");
  require(c.sandbox.spin_us >= 0 && c.sandbox.spin_us <= 10000, "sandbox.spin_us", "in [0, 10000] microseconds");
  require(c.sandbox.max_obs_chars >= 256, "sandbox.max_obs_chars", ">= 256");
  require(c.reward.regret_scale > 0, "reward.regret_scale", "> 0");
  require(c.reward.frontier_weight >= 0, "reward.frontier_weight", ">= 0 (0: off, as in the paper)");
  require(c.reward.frontier_scale > 0, "reward.frontier_scale", "> 0");
  require(c.corpus.max_words >= 1, "corpus.max_words", ">= 1");
  require(c.loss.kl_coef >= 0.0, "loss.kl_coef", ">= 0");
  require(c.loss.max_len >= 0, "loss.max_len", ">= 0 (0: the longest row of the batch)");
  require(c.loss.tis_level == "token" || c.loss.tis_level == "sequence" || c.loss.tis_level == "geometric",
          "loss.tis_level", "token, sequence or geometric, not '" + c.loss.tis_level + "'");
  require(c.loss.kl_type == "k1" || c.loss.kl_type == "k2" || c.loss.kl_type == "k3" ||
              c.loss.kl_type == "low_var_kl",
          "loss.kl_type", "k1, k2, k3 or low_var_kl");
  // The KL penalty is to a frozen reference policy loaded from disk (so a resumed run has the same).
  require(c.loss.kl_coef == 0.0 || !c.loss.kl_reference.empty() || !c.model.init_checkpoint.empty(),
          "loss.kl_reference", "set (an HF checkpoint directory) when loss.kl_coef > 0 and model.init_checkpoint is empty");
}

}  // namespace spade::trainer
