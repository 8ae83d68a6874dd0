// The one list of config keys: each key's path, its member of Config (whose initialiser in config.h is
// the default, with its source) and the values it admits. Loading, --set, validation and saving all
// walk this list (config.cpp). Internal to trainer/config*.cpp; torch-free.
#pragma once
#include <limits>
#include <string>
#include <utility>

#include "trainer/config.h"
#include "trainer/config_enums.h"

namespace spade::trainer::config_keys {

/// What a key admits. Numbers: the interval [min, max] (an open end when min_open / max_open), finite;
/// `note` says what a boundary value means ("0: unlimited"). Strings: `check` (a library parser from
/// config_enums.h) when the key is an enum. Booleans and free strings: anything of the right type.
struct Rule {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  std::string note;
  void (*check)(const std::string& value, const std::string& key, const std::string& at) = nullptr;
};

inline Rule any() { return {}; }
inline Rule at_least(double lo, std::string note = "") { return {lo, Rule{}.max, false, false, std::move(note)}; }
inline Rule above(double lo, std::string note = "") { return {lo, Rule{}.max, true, false, std::move(note)}; }
inline Rule in(double lo, double hi, std::string note = "") { return {lo, hi, false, false, std::move(note)}; }
/// [lo, hi): e.g. a clip epsilon, a momentum.
inline Rule in_right_open(double lo, double hi, std::string note = "") {
  return {lo, hi, false, true, std::move(note)};
}
/// (lo, hi]: e.g. a nucleus mass.
inline Rule in_left_open(double lo, double hi, std::string note = "") {
  return {lo, hi, true, false, std::move(note)};
}
inline Rule probability() { return in(0, 1); }
inline Rule one_of(void (*check)(const std::string&, const std::string&, const std::string&)) {
  Rule r;
  r.check = check;
  return r;
}

/// Calls f(key, member, rule) for every key, in the order `spade config show` prints them.
template <class C, class F>
void visit(C& c, F&& f) {
  namespace e = config_enums;
  f("run.name", c.run.name, any());
  f("run.out_dir", c.run.out_dir, any());
  f("run.seed", c.run.seed, any());
  f("run.threads", c.run.threads, at_least(0, "0: all cores"));
  f("run.deterministic", c.run.deterministic, any());
  f("train.device", c.train.device, one_of(e::device));
  f("train.activation_checkpointing", c.train.activation_checkpointing, any());
  f("train.autocast", c.train.autocast, one_of(e::autocast));
  f("train.attention", c.train.attention, one_of(e::attention));
  f("train.peak_tflops", c.train.peak_tflops, at_least(0, "0: perf/mfu not logged"));
  f("train.gpu_memory_gb", c.train.gpu_memory_gb, above(0, "GiB per GPU, for the dry-run's memory estimate"));
  f("corpus.path", c.corpus.path, any());            // must exist when set (check_inputs)
  f("corpus.build_from", c.corpus.build_from, any());  // each must exist (check_inputs)
  f("corpus.max_words", c.corpus.max_words, at_least(1));
  f("corpus.min_words", c.corpus.min_words, at_least(0));
  f("corpus.sample_seed", c.corpus.sample_seed, any());
  f("corpus.enabled", c.corpus.enabled, any());
  f("tokenizer.path", c.tokenizer.path, any());      // must exist when set (check_inputs)
  f("tokenizer.vocab_size", c.tokenizer.vocab_size, at_least(256, "the 256 byte pieces"));
  f("model.init_checkpoint", c.model.init_checkpoint, any());  // an HF directory when set (check_inputs)
  f("model.shape", c.model.shape, one_of(e::model_shape));      // "" or a checkpoint shape name
  f("model.hidden_size", c.model.hidden_size, at_least(1));
  f("model.intermediate_size", c.model.intermediate_size, at_least(1));
  f("model.num_hidden_layers", c.model.num_hidden_layers, at_least(1));
  f("model.num_attention_heads", c.model.num_attention_heads, at_least(1));
  f("model.num_key_value_heads", c.model.num_key_value_heads, at_least(1));
  f("model.max_position_embeddings", c.model.max_position_embeddings, at_least(1));
  f("model.rope_theta", c.model.rope_theta, above(0));
  f("model.rms_norm_eps", c.model.rms_norm_eps, above(0));
  f("model.tie_word_embeddings", c.model.tie_word_embeddings, any());
  f("model.init_std", c.model.init_std, above(0));
  f("seed_envs.dir", c.seed_envs.dir, any());  // must be a directory (check_inputs)
  f("warm_start.enabled", c.warm_start.enabled, any());
  f("warm_start.max_seconds", c.warm_start.max_seconds, at_least(0));
  f("warm_start.max_steps", c.warm_start.max_steps, at_least(0));
  f("warm_start.lr", c.warm_start.lr, above(0));
  f("warm_start.warmup_steps", c.warm_start.warmup_steps, at_least(0));
  f("warm_start.batch_tokens", c.warm_start.batch_tokens, at_least(1));
  f("warm_start.designer_fraction", c.warm_start.designer_fraction, probability());
  f("warm_start.demos_per_env", c.warm_start.demos_per_env, at_least(0));
  f("warm_start.reference_fraction", c.warm_start.reference_fraction, probability());
  f("warm_start.hint_fraction", c.warm_start.hint_fraction, probability());
  f("warm_start.designer_seeds_per_skill", c.warm_start.designer_seeds_per_skill, at_least(0, "0: all seeds"));
  f("selfplay.steps", c.selfplay.steps, at_least(0));
  f("selfplay.k", c.selfplay.k, at_least(1));
  f("selfplay.designer_delay", c.selfplay.designer_delay, at_least(0, "0: k"));  // <= k (config_checks)
  f("selfplay.designer_train", c.selfplay.designer_train, any());
  f("selfplay.envs_per_regen", c.selfplay.envs_per_regen, at_least(1));
  f("selfplay.setting", c.selfplay.setting, one_of(e::setting));
  f("selfplay.self_validate", c.selfplay.self_validate, any());  // tool_use only (config_checks)
  f("selfplay.skills_per_regen", c.selfplay.skills_per_regen, in(1, 6, "of the 6 skills"));
  f("selfplay.skills", c.selfplay.skills, any());  // each a skill slug; at least skills_per_regen (config_checks)
  f("selfplay.plays_per_env", c.selfplay.plays_per_env, at_least(1));
  f("selfplay.hint_plays", c.selfplay.hint_plays, at_least(0));
  f("selfplay.max_attempts", c.selfplay.max_attempts, at_least(1));
  f("selfplay.max_turns", c.selfplay.max_turns, at_least(1));
  f("selfplay.context_tokens", c.selfplay.context_tokens, at_least(1));
  f("selfplay.max_batch", c.selfplay.max_batch, at_least(1));
  f("selfplay.max_tokens_in_flight", c.selfplay.max_tokens_in_flight, at_least(0, "0: unlimited"));
  f("selfplay.mode", c.selfplay.mode, one_of(e::selfplay_mode));
  f("selfplay.pool_dir", c.selfplay.pool_dir, any());  // a directory when set (check_inputs)
  f("selfplay.pool_replacement", c.selfplay.pool_replacement, any());
  f("selfplay.fill_with_seeds", c.selfplay.fill_with_seeds, any());
  for (auto [name, s] : {std::pair{"designer", &c.selfplay.designer}, std::pair{"agent", &c.selfplay.agent},
                         std::pair{"hint", &c.selfplay.hint}}) {
    const std::string p = std::string("selfplay.") + name + ".";
    f(p + "temperature", s->temperature, at_least(0, "0: greedy"));
    f(p + "top_p", s->top_p, in_left_open(0, 1, "1: off"));
    f(p + "top_k", s->top_k, at_least(0, "0: off"));
    f(p + "min_p", s->min_p, probability());
    f(p + "max_new_tokens", s->max_new_tokens, at_least(1));
    f(p + "decode_graph", s->decode_graph, one_of(e::decode_graph));
  }
  f("reward.designer_reward", c.reward.designer_reward, one_of(e::designer_reward));
  f("reward.regret_scale", c.reward.regret_scale, above(0));
  f("reward.plateau_low", c.reward.plateau_low, probability());
  f("reward.plateau_high", c.reward.plateau_high, probability());
  f("reward.plateau_ramp", c.reward.plateau_ramp, above(0));
  f("reward.w_regret", c.reward.w_regret, at_least(0));
  f("reward.w_anchor", c.reward.w_anchor, at_least(0));
  f("reward.actor_std_eps", c.reward.actor_std_eps, above(0));
  f("reward.scale_by_std", c.reward.scale_by_std, any());
  f("reward.filter_zero_std_groups", c.reward.filter_zero_std_groups, any());
  f("reward.mask_truncated", c.reward.mask_truncated, any());
  f("reward.designer_scale_cap", c.reward.designer_scale_cap, above(0));
  f("reward.ema_fast", c.reward.ema_fast, probability());
  f("reward.ema_slow", c.reward.ema_slow, probability());
  f("reward.frontier_weight", c.reward.frontier_weight, at_least(0, "0: off, as in the paper"));
  f("reward.frontier_scale", c.reward.frontier_scale, above(0));
  f("reward.lp_variance_bonus", c.reward.lp_variance_bonus, any());
  f("loss.eps_low", c.loss.eps_low, in_right_open(0, 1));
  f("loss.eps_high", c.loss.eps_high, at_least(0));
  f("loss.dual_clip_c", c.loss.dual_clip_c, at_least(0, "0: off; else > 1"));
  f("loss.agg_mode", c.loss.agg_mode, one_of(e::agg_mode));
  f("loss.max_len", c.loss.max_len, at_least(0, "0: the longest row of the batch"));
  f("loss.tis", c.loss.tis, any());
  f("loss.tis_cap", c.loss.tis_cap, above(0));
  f("loss.tis_low", c.loss.tis_low, at_least(0));
  f("loss.tis_level", c.loss.tis_level, one_of(e::tis_level));
  f("loss.entropy_coef", c.loss.entropy_coef, at_least(0));
  f("loss.kl_coef", c.loss.kl_coef, at_least(0));
  f("loss.kl_type", c.loss.kl_type, one_of(e::kl_type));
  f("loss.kl_reference", c.loss.kl_reference, any());  // an HF directory when used (check_inputs)
  f("optim.lr", c.optim.lr, above(0));
  f("optim.weight_decay", c.optim.weight_decay, at_least(0));
  f("optim.beta1", c.optim.beta1, in_right_open(0, 1));
  f("optim.beta2", c.optim.beta2, in_right_open(0, 1));
  f("optim.adam_eps", c.optim.adam_eps, above(0));
  f("optim.grad_clip", c.optim.grad_clip, at_least(0, "0: no clipping"));
  f("optim.micro_batch_tokens", c.optim.micro_batch_tokens, at_least(64));
  f("optim.mini_batches", c.optim.mini_batches, at_least(1, "1: one optimizer step per rollout"));
  f("optim.lr_schedule", c.optim.lr_schedule, one_of(e::lr_schedule));
  f("optim.warmup_steps", c.optim.warmup_steps, at_least(0));
  f("optim.min_lr_ratio", c.optim.min_lr_ratio, in(0, 1));
  f("optim.logprob_chunk_rows", c.optim.logprob_chunk_rows, at_least(0, "0: off"));
  f("sandbox.load_timeout_s", c.sandbox.load_timeout_s, above(0));
  f("sandbox.call_timeout_s", c.sandbox.call_timeout_s, above(0));
  f("sandbox.episode_timeout_s", c.sandbox.episode_timeout_s, at_least(0, "seconds; 0: no limit"));
  f("sandbox.memory_limit_mb", c.sandbox.memory_limit_mb, at_least(16));
  f("sandbox.cpu_limit_s", c.sandbox.cpu_limit_s, at_least(1));
  f("sandbox.namespaces", c.sandbox.namespaces, one_of(e::sandbox_namespaces));
  f("sandbox.seccomp", c.sandbox.seccomp, any());
  f("sandbox.cgroups", c.sandbox.cgroups, any());
  f("sandbox.pool_memory_mb", c.sandbox.pool_memory_mb, at_least(0, "0: half of MemTotal"));
  f("sandbox.spare_children", c.sandbox.spare_children, in(0, 64));
  f("sandbox.preload_spares", c.sandbox.preload_spares, in(0, 64));
  f("sandbox.spin_us", c.sandbox.spin_us, in(0, 10000, "microseconds"));
  f("sandbox.max_obs_chars", c.sandbox.max_obs_chars, at_least(256));
  f("memory.size", c.memory.size, at_least(1));
  f("memory.positive_seeds", c.memory.positive_seeds, at_least(0));
  f("memory.band_low", c.memory.band_low, probability());
  f("memory.band_high", c.memory.band_high, probability());
  f("memory.enabled", c.memory.enabled, any());
  f("eval.every", c.eval.every, at_least(0, "0: off"));
  f("eval.sets", c.eval.sets, any());  // each must be a directory (check_inputs)
  f("eval.plays", c.eval.plays, at_least(1));
  f("eval.temperature", c.eval.temperature, at_least(0, "0: greedy"));
  f("eval.reset_seeds", c.eval.reset_seeds, one_of(e::eval_seeds));
  f("checkpoint.every", c.checkpoint.every, at_least(1, "rollouts"));
  f("checkpoint.keep_last", c.checkpoint.keep_last, at_least(1));
  f("checkpoint.dtype", c.checkpoint.dtype, one_of(e::checkpoint_dtype));
  f("duel.every", c.duel.every, at_least(0, "0: off"));
  f("duel.arena", c.duel.arena, any());          // must exist when duel.every > 0 (check_inputs)
  f("duel.opponents", c.duel.opponents, any());  // forms checked in check_cross_keys, scripts in check_inputs
  f("duel.endpoints", c.duel.endpoints, any());  // must exist when set (check_inputs)
  f("duel.serve", c.duel.serve, any());
  f("duel.spawn_watcher", c.duel.spawn_watcher, any());
  f("duel.device", c.duel.device, one_of(e::device));
  f("duel.max_new_tokens", c.duel.max_new_tokens, at_least(1));
  f("distributed.backend", c.distributed.backend, one_of(e::distributed_backend));
  f("distributed.bucket_mb", c.distributed.bucket_mb, above(0));
  f("distributed.timeout_s", c.distributed.timeout_s, above(0));
  f("distributed.sharding", c.distributed.sharding, one_of(e::sharding));
  f("distributed.inference_dtype", c.distributed.inference_dtype, one_of(e::inference_dtype));
  f("distributed.world_size", c.distributed.world_size, at_least(0, "0: whatever the launcher starts"));
}

}  // namespace spade::trainer::config_keys
