// Run configuration: one struct tree, its defaults in the member initialisers (each with its source),
// loaded from YAML with unknown keys rejected, overridden with --set a.b=value, saved resolved. Each key
// is listed once, with the values it admits, in trainer/config_keys.h.
// Defaults are the paper-scale values of docs/sources.md, reference §5 where one exists;
// configs/games-tiny.yaml scales them down for a 2-core CPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "envsandbox/sandbox.h"
#include "policy/model_config.h"
#include "policy/sampling_defaults.h"
#include "reward/designer_reward.h"
#include "rollout/episode_defaults.h"

namespace spade::trainer {

struct RunConfig {
  std::string name = "spade";     // run directory name under out_dir
  std::string out_dir = "runs";
  uint64_t seed = 1234;
  int threads = 0;                // intra-op threads; 0 = all cores
  bool deterministic = false;     // bitwise-reproducible CPU runs (exact resume checks): one intra-op
                                  // thread and deterministic ATen algorithms; slower
};

struct CorpusConfig {
  std::string path;                         // JSONL corpus; "" -> built into the run dir from build_from
  std::vector<std::string> build_from;      // files/dirs; empty -> Python stdlib (+ sympy if installed)
  int max_words = 6000;                     // word cap per document (reference §5 table: games 6000)
  int min_words = 20;                       // shorter documents are skipped as empty
  uint64_t sample_seed = 42;                // uniform sampling seed (reference §6)
  bool enabled = true;                      // false: designer prompts carry no document (the
                                            // no-grounding control, SPADE §7 Table 3); the corpus is
                                            // still read to train the tokenizer
};

struct TokenizerConfig {
  std::string path;         // existing tokenizer.model; "" -> train one on corpus + seed environments
  int vocab_size = 6000;    // issue 2: "vocab ~4-8k"
};

struct ModelConfigYaml {
  std::string init_checkpoint;       // HF directory to start from; "" -> random init with the shape below
  // The architecture of init_checkpoint by name (policy/model_shapes.h checkpoint_shape_names(): e.g.
  // qwen3-8b), for a config written before the checkpoint is on disk (the paper configs): the dry-run's
  // plan and memory estimate use it while init_checkpoint is empty or absent; check_inputs checks a
  // present checkpoint's config.json against it; `spade train` refuses to start while init_checkpoint
  // is empty (a named shape is never randomly initialised). "" = no named shape.
  std::string shape;
  int hidden_size = 256;
  int intermediate_size = 688;
  int num_hidden_layers = 4;
  int num_attention_heads = 4;
  int num_key_value_heads = 2;
  int max_position_embeddings = static_cast<int>(policy::ModelConfig{}.max_position_embeddings);
  double rope_theta = policy::ModelConfig{}.rope_theta;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = true;
  double init_std = 0.02;
};

struct SeedEnvConfig {
  std::string dir = "data/seed_envs";   // <skill>/<name>.py
};

struct WarmStartConfig {
  bool enabled = true;
  double max_seconds = 240;       // time box (issue 2: "Time-boxed by config")
  int max_steps = 100000;
  double lr = 2e-3;               // peak; linear warmup, then cosine decay to 10% over the time box
  double warmup_steps = 20;
  int batch_tokens = 4096;        // tokens per optimizer step
  double designer_fraction = 0.5; // share of designer examples in the mixture (rest: agent demos)
  double reference_fraction = 0.5;  // designer examples showing a same-skill memory reference
  double hint_fraction = 0.1;       // share of hint-writing examples (seed program -> its .hint.txt)
  int designer_seeds_per_skill = 0; // designer targets: the N shortest seeds of each skill (0 = all)
  int demos_per_env = 4;          // agent demonstrations per seed environment (seeds 0..n-1)
};

// One role's sampling (selfplay.designer / agent / hint): policy/sampling_defaults.h (reference §5).
struct SamplingYaml {
  double temperature = policy::sampling_defaults::kTemperature;
  double top_p = policy::sampling_defaults::kTopP;
  int top_k = policy::sampling_defaults::kTopK;
  double min_p = policy::sampling_defaults::kMinP;
  int max_new_tokens = 8192;
  std::string decode_graph = "auto";  // auto | off | on: decode steps as a CUDA graph (SamplingParams::decode_graph)
};

/// The reference sampling of a role with its token cap (and temperature, when not the default).
inline SamplingYaml role_sampling(int max_new_tokens,
                                  double temperature = policy::sampling_defaults::kTemperature) {
  SamplingYaml s;
  s.max_new_tokens = max_new_tokens;
  s.temperature = temperature;
  return s;
}

struct SelfPlayConfig {
  int steps = 400;                 // rollouts (reference §5 table)
  int k = 4;                       // regenerate every k steps
  int designer_delay = 0;          // the designer update of a generation comes designer_delay steps after
                                   // it, scored on the plays of those steps; 0 = k, its whole window (SPADE §4.1)
  bool designer_train = true;      // false: the frozen-designer control (SPADE §7): designer samples are
                                   // generated, scored and logged (trained = 0), never trained
  int envs_per_regen = 24;         // environments per regeneration
  // games | tool_use (SPADE §5.1 / §5.2; reference §7): which skills rotate, which designer and hint
  // prompts, the tool-use gates (tool_schemas; deterministic_reset from rollout 1 on, as the
  // reference), and tool-use episodes (the agent sees the tools through the chat template)
  std::string setting = "games";
  // tool_use: the self-validator (SPADE App. F.2): the policy judges whether every success criterion
  // can be met by some tool; the first \boxed{} decides, no verdict admits (fails open); sampled with
  // selfplay.hint's settings (the reference's validator and hint temperature are both 0.3)
  bool self_validate = false;
  int skills_per_regen = 3;        // active skills (3 of 6, rotating)
  std::vector<std::string> skills; // skill slugs of the setting the rotation runs over (e.g. a two-skill run); empty = all six
  int plays_per_env = 8;           // no-hint plays per environment per step (G)
  int hint_plays = 16;             // hinted plays per environment at regeneration
  int max_attempts = 5;            // designer generation attempts per environment (reference §4)
  int max_turns = rollout::episode_defaults::kMaxTurns;            // turn cap per episode
  int context_tokens = rollout::episode_defaults::kContextTokens;  // per-episode context
  SamplingYaml designer = role_sampling(16384);  // reference §5: designer max tokens 16384
  SamplingYaml agent = role_sampling(8192);      // reference §5: agent max tokens 8192
  SamplingYaml hint = role_sampling(4096, policy::sampling_defaults::kHintTemperature);  // reference §5: hint max tokens 4096
  int max_batch = rollout::episode_defaults::kMaxBatch;  // sequences decoded together
  int max_tokens_in_flight = 0;    // KV tokens the sampler's running batch may reserve (each row: its
                                   // history + max new tokens); 0 = unlimited (SamplingParams::max_tokens_in_flight)
  // selfplay: the designer writes each generation (SPADE). fixed_pool: each generation is
  // envs_per_regen programs drawn from pool_dir (the Fixed-env GRPO / static-pool baseline of SPADE
  // §7, Table 3): no designer call, no hints, no hinted plays, no designer update (trainer/env_pool.h).
  std::string mode = "selfplay";   // selfplay | fixed_pool
  std::string pool_dir;            // fixed_pool: <skill>/<name>.py folder; "" = seed_envs.dir
  bool pool_replacement = false;   // fixed_pool: draws with replacement (else distinct within a generation)
  bool fill_with_seeds = false;    // slots the designer failed to fill get a seed environment of the
                                   // slot's skill (a fixed-pool fallback; no designer sample is trained)
};

struct RewardYaml {
  std::string designer_reward = "blend";   // blend | regret_based | learning_potential | solve_rate
  // The blend's parameters: reward::BlendConfig's defaults (reward/designer_reward.h, reference §5):
  // regret_n = clip(regret / regret_scale, 0, 1); plateau band [low, high] with linear ramps; weights.
  double regret_scale = reward::BlendConfig{}.regret_scale;
  double plateau_low = reward::PlateauConfig{}.low, plateau_high = reward::PlateauConfig{}.high;
  double plateau_ramp = reward::PlateauConfig{}.ramp;
  double w_regret = reward::BlendConfig{}.regret_weight, w_anchor = reward::BlendConfig{}.plateau_weight;
  double actor_std_eps = 1e-8;     // actor z-score epsilon (reference §5)
  bool scale_by_std = true;        // actor advantage (r - mean) / (std + eps) (SPADE, reference §5);
                                   // false: Dr.GRPO's r - mean (trainer-anchors §1)
  bool filter_zero_std_groups = false;  // drop the plays of environments whose rewards this step are all
                                        // equal from the optimizer batch (DAPO dynamic sampling; SPADE
                                        // keeps them: advantage 0, counted in normalisers). trainer/batch_filters.h
  bool mask_truncated = false;     // drop truncated agent plays from the optimizer batch (DAPO overlong
                                   // filtering; trainer-anchors §2). trainer/batch_filters.h
  double designer_scale_cap = 50;  // S = min(N_actor / N_env * k, 50)
  double ema_fast = 0.98, ema_slow = 0.85;
  // Auxiliary designer terms, off in every paper run (SPADE App. F.2): the blend's frontier term
  // frontier_weight * -(w - 0.5)^2 / frontier_scale, and the learning_potential variant's solver-variance
  // bonus exp(-(var - 0.25)^2 / 0.02) (reward/designer_reward.h).
  double frontier_weight = reward::BlendConfig{}.frontier_weight;
  double frontier_scale = reward::BlendConfig{}.frontier_scale;
  bool lp_variance_bonus = false;
};

struct LossYaml {
  double eps_low = 0.2, eps_high = 0.28;   // reference §5
  double dual_clip_c = 0.0;                // 0 = off
  std::string agg_mode = "seq_mean_token_mean";  // slime default; token_mean | seq_mean_token_sum | dr_grpo
  int max_len = 0;                         // dr_grpo's L in sum / (sequences x L) (Dr.GRPO; verl passes its
                                           // max response length): 0 = the longest row of the rollout batch
                                           // (all ranks agree on it by MAX); >= 0
  bool tis = true;
  double tis_cap = 2.0, tis_low = 0.0;     // reference §5
  std::string tis_level = "token";         // token | sequence | geometric: one TIS weight per token
                                           // (slime/verl default), per sequence exp(sum of the token
                                           // log-ratios), or their geometric mean exp(masked mean) (verl
                                           // rollout-IS levels; policy_loss.h TisLevel)
  double entropy_coef = 0.0, kl_coef = 0.0;   // reference §5: KL coefficient 0 (or 0.005)
  std::string kl_type = "low_var_kl";          // k1 | k2 | k3 | low_var_kl (verl default; policy_loss.h)
  std::string kl_reference;                    // frozen reference policy (HF dir) for kl_coef > 0;
                                               // "" = model.init_checkpoint. Loaded only when used.
};

struct OptimConfig {
  double lr = 1e-6;                 // reference §5: Adam lr 1e-6 constant
  double weight_decay = 0.1;
  double beta1 = 0.9, beta2 = 0.98;
  double adam_eps = 1e-8;
  double grad_clip = 1.0;           // trainer-anchors §4 defaults
  int micro_batch_tokens = 8192;    // token budget per micro-batch (gradient accumulation)
  int mini_batches = 1;             // PPO mini-batches (optimizer steps) per rollout batch, >= 1 (verl
                                    // ppo_mini_batch_size as a count, slime num_steps_per_rollout). 1 = one
                                    // on-policy step (PPO ratio 1). M > 1: old logprobs computed once, the
                                    // batch split in order (designer samples first) into M contiguous
                                    // mini-batches, one step each at the rollout's LR (grpo_update.h)
  std::string lr_schedule = "constant";  // constant | linear_warmup | cosine (trainer/lr_schedule.h)
  int warmup_steps = 0;             // linear warmup steps (any schedule)
  double min_lr_ratio = 0.0;        // cosine floor; cosine decays over selfplay.steps
  int logprob_chunk_rows = 2048;    // lm_head rows per chunk: full-vocabulary logits of a micro-batch
                                    // are never materialised at once (0 = off; grpo_update.h)
};

// Environment sandbox: the defaults are envsandbox/sandbox.h SandboxOptions', which documents each
// field and its source (sizes there in bytes, here in MiB).
struct SandboxYaml {
  double load_timeout_s = envsandbox::SandboxOptions{}.load_timeout_s;  // reference §4: env step/load 30 s
  double call_timeout_s = envsandbox::SandboxOptions{}.call_timeout_s;
  double episode_timeout_s = 300;   // one play's wall clock, 300 s (reference); 0 = none (EpisodeOptions)
  int memory_limit_mb = static_cast<int>(envsandbox::SandboxOptions{}.memory_limit_bytes >> 20);
  int cpu_limit_s = envsandbox::SandboxOptions{}.cpu_limit_s;
  std::string namespaces = envsandbox::SandboxOptions{}.namespaces;  // auto | require | off (bubblewrap)
  bool seccomp = envsandbox::SandboxOptions{}.seccomp;
  bool cgroups = envsandbox::SandboxOptions{}.cgroups;
  int pool_memory_mb = static_cast<int>(envsandbox::SandboxOptions{}.pool_memory_bytes >> 20);  // 0 = half of MemTotal
  int spare_children = envsandbox::SandboxOptions{}.spare_children;
  int preload_spares = envsandbox::SandboxOptions{}.preload_spares;
  int spin_us = envsandbox::SandboxOptions{}.spin_us;
  int max_obs_chars = static_cast<int>(envsandbox::SandboxOptions{}.max_obs_chars);
};

// In-loop held-out evaluation (trainer/heldout_eval.h; docs/design.md step 5): every `every` self-play
// steps, before the first step and after the last, rank 0 plays each set's environments `plays` times
// and logs eval/<set>/success and eval/<set>/<skill>/success with their 95% interval bounds (_low,
// _high), <set> the folder's name. Off by default (every: 0).
struct EvalYaml {
  int every = 0;                   // self-play steps between evaluations; 0 = off
  std::vector<std::string> sets;   // environment folders (<skill>/<name>.py), e.g. data/heldout_envs
  int plays = 8;                   // plays per environment, each on its own instance (avg@N)
  double temperature = 0.6;        // reference §5 sampling temperature; 0 = greedy
  std::string reset_seeds = "heldout";  // heldout | training (trainer/heldout_eval.h EvalSeeds)
};

struct MemoryYaml {
  int size = 200;            // FIFO capacity (reference §6)
  int positive_seeds = 2;    // reference environments shown per designer prompt
  double band_low = 0.15, band_high = 0.85;
  bool enabled = true;       // show memory references in designer prompts (records are kept either way)
};

struct CheckpointYaml {
  int every = 16;        // reference §5: checkpoint every 16 rollouts
  int keep_last = 2;
  std::string dtype = "fp32";   // fp32 | bf16
};

// Duel scoring of the run's checkpoints (issue 20; DESIGN.md step 5). A separate process, `spade duel watch
// RUN_DIR` (apps/cmd_duel_watch.cpp), scores each checkpoint whose step is a multiple of `every` in
// SWE-Duel matches and never blocks a training step: the trainer only keeps those checkpoints (pruning
// skips them) and, with spawn_watcher, starts the watcher and waits for it when training ends.
struct DuelYaml {
  int every = 0;                        // self-play steps between scored checkpoints (a multiple of
                                        // checkpoint.every); 0 = off
  std::string arena;                    // arena file (evaldual/arena.h), e.g. configs/duel/arena-tiny.yaml
  std::vector<std::string> opponents;   // the leaderboard's first incumbents: "ID=SCRIPT.json" (a replay
                                        // participant, `duel tournament --script`'s form), "checkpoint:DIR",
                                        // or a model id of duel.endpoints
  std::string endpoints;                // endpoints file for model opponents (evaldual/model_endpoints.h)
  bool serve = false;                   // play the checkpoints through a `spade serve` the watcher starts
                                        // (HTTP) instead of in the watcher's own process
  bool spawn_watcher = true;            // `spade train` starts the watcher and waits for it at the end;
                                        // false: run `spade duel watch RUN_DIR` yourself (another node)
  std::string device = "cpu";           // where the watcher runs the checkpoints (cpu | cuda | cuda:N):
                                        // on a GPU run, a device the trainer does not use
  int max_new_tokens = 1024;            // a checkpoint's reply cap per harness step (the reference's
                                        // hosted models get 32768: evaldual/model_client.h)
};

struct DistributedYaml {
  std::string backend = "auto";   // gloo | nccl | auto (nccl when train.device is a GPU on a CUDA build, else gloo)
  double bucket_mb = 25;          // gradient all-reduce bucket size: torch DDP's bucket_cap_mb default
  double timeout_s = 1800;        // rendezvous + collective timeout: torch's default_pg_timeout (30 min);
                                  // the cold start runs on rank 0 alone while the others wait
  std::string sharding = "none";  // none | optimizer | gradients | full: ZeRO-1 / 2 / 3 over the data-parallel
                                  // ranks (trainer/sharding.h; Rajbhandari et al. 2020 §5.1); none: plain DDP;
                                  // full needs train.activation_checkpointing
  std::string inference_dtype = "fp32";  // fp32 | bf16: the rollouts' whole copy of the weights under sharding
                                  // full (trainer/parameter_shards.h), all-gathered after each update and
                                  // cast; bf16 halves it (4 -> 2 bytes per parameter) and samples in bf16
                                  // as the reference's SGLang rollouts do (loss.tis corrects the mismatch);
                                  // bf16 needs sharding full (the other modes sample from the trained weights)
  int world_size = 0;             // ranks the run is meant for: > 0: `spade train` refuses another launched
                                  // WORLD_SIZE, and the dry-run's plan deals plays over this many ranks;
                                  // 0: whatever the launcher starts (the dry-run assumes WORLD_SIZE, else 1)
};

// Where and how the policy trains (issue 5: device selection, activation checkpointing, bf16 autocast).
struct TrainYaml {
  std::string device = "auto";          // auto | cpu | cuda | cuda:N (trainer/device.h resolve_train_device:
                                        // auto = cuda:LOCAL_RANK when CUDA is available, else cpu)
  bool activation_checkpointing = false;  // recompute each decoder layer in backward (policy/transformer.h)
  std::string autocast = "none";        // none | bf16: fp32 master weights, matmuls in bf16 (trainer/autocast.h)
  std::string attention = "auto";       // auto | matmul | sdpa: causal attention of training forwards
                                        // (policy/transformer.h AttentionBackend; auto = sdpa on CUDA)
  double peak_tflops = 0;               // > 0: log perf/mfu against this per-device peak (e.g. 989 for an
                                        // H100/H200 SXM in dense bf16); 0: not logged
  double gpu_memory_gb = 80;            // per-GPU memory (GiB, 2^30 bytes) the dry-run's memory estimate
                                        // checks a CUDA run against when no GPU is visible to the dry-run
                                        // (a visible GPU's own total is used instead); 80: an A100/H100
                                        // 80GB. The paper does not name its GPUs (trainer/memory_estimate.h)
};

struct Config {
  RunConfig run;
  TrainYaml train;
  CorpusConfig corpus;
  TokenizerConfig tokenizer;
  ModelConfigYaml model;
  SeedEnvConfig seed_envs;
  WarmStartConfig warm_start;
  SelfPlayConfig selfplay;
  RewardYaml reward;
  LossYaml loss;
  OptimConfig optim;
  SandboxYaml sandbox;
  MemoryYaml memory;
  EvalYaml eval;
  CheckpointYaml checkpoint;
  DuelYaml duel;
  DistributedYaml distributed;   // used only when launched with several ranks (trainer/distributed.h)
};

/// Loads `path` (YAML) over the defaults. Throws spade::Error naming the file and line for unparseable
/// YAML; for an unknown key, the key and the closest valid key or section when one is near
/// ("x.yaml:3: unknown config key 'selfplay.stpes'; did you mean 'selfplay.steps'?", by
/// common/edit_distance.h); for a value of the wrong type, the key and what it expects
/// ("x.yaml:3: selfplay.steps expects an integer, got 'abc'"); for a value outside what its key admits
/// (trainer/config_keys.h: ranges, enums by their library's parser, listing the allowed names) or a
/// violated constraint between keys (config_checks.h), the key, where it was set and the rule
/// ("x.yaml:9: loss.tis_cap must be > 0, got -1"). `overrides` are "a.b=value" strings (--set), applied
/// after the file; their errors start "--set a.b=value: " instead of FILE:LINE. Reads only `path`:
/// the input files a config names are checked by check_inputs (config_checks.h).
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// Same, from YAML text (`source_name` is used in error messages).
Config parse_config(const std::string& yaml_text, const std::string& source_name,
                    const std::vector<std::string>& overrides = {});

/// One YAML document of a layered config: its text and the name errors give it (a path).
struct ConfigLayer {
  std::string yaml_text, source_name;
};

/// The defaults, then each layer in order (a later layer's keys replace an earlier one's: a base config
/// and its overlays, e.g. configs/ablations/*.yaml), then `overrides`; checked once at the end, each
/// error naming the layer and line that set the key. At least one layer.
Config parse_config_layers(const std::vector<ConfigLayer>& layers, const std::vector<std::string>& overrides = {});

/// The resolved config as YAML (every key, defaults included); parse_config(to_yaml(c)) == c.
std::string to_yaml(const Config& config);

/// Checks every key and the constraints between keys (config_checks.h check_config; parse_config runs
/// it). For a config changed after loading; errors start "SOURCE_NAME: KEY ...". Throws spade::Error.
void validate(const Config& config, const std::string& source_name = "config");

}  // namespace spade::trainer
