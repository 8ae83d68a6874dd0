#include "trainer/selfplay.h"

#include <chrono>
#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "common/process_stats.h"
#include "trainer/checkpointing.h"
#include "trainer/config_bridge.h"
#include "trainer/device_memory.h"
#include "trainer/generation_stats.h"
#include "trainer/selfplay_dp.h"

namespace spade::trainer {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

const DistributedContext& single_process() {
  static const DistributedContext single;
  return single;
}

// environment id -> program hash (the env_source_hash of rollouts.h5), added to `out`.
void add_source_hashes(const std::vector<LiveEnv>& live, std::map<std::string, uint64_t>& out) {
  for (const LiveEnv& env : live) out[env.id] = source_hash(env.code);
}

// The rollouts.h5 facts of one play (the sample, step and hash are set when the row is logged).
EpisodeRow play_row(const rollout::EpisodeResult& r, bool trained) {
  EpisodeRow row;
  row.trained = trained;
  row.terminated = r.terminated;
  row.truncated = r.truncated;
  row.turns = r.turns;
  return row;
}

// Every episode of the step for rollouts.h5: the trained batch (designer first; `rows` holds its
// facts), a frozen designer's untrained samples and the hinted plays, each with its step and its
// environment's program hash.
std::vector<EpisodeRow> episode_rows(std::vector<EpisodeRow> rows, const std::vector<rollout::Sample>& batch,
                                     const std::vector<rollout::Sample>& frozen_designer,
                                     const std::vector<rollout::EpisodeResult>& hinted, int64_t step,
                                     const std::map<std::string, uint64_t>& hashes) {
  const auto hash = [&](const std::string& id) {
    const auto it = hashes.find(id);
    return it == hashes.end() ? uint64_t{0} : it->second;
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    rows[i].sample = &batch[i];
    rows[i].env_source_hash = hash(batch[i].env_id);
  }
  for (const rollout::Sample& d : frozen_designer) {
    rows.emplace_back();
    rows.back().trained = false;
    rows.back().sample = &d;
    rows.back().env_source_hash = hash(d.env_id);
  }
  for (const rollout::EpisodeResult& r : hinted) {
    rows.push_back(play_row(r, /*trained=*/false));
    rows.back().hinted = true;
    rows.back().sample = &r.sample;
    rows.back().env_source_hash = hash(r.sample.env_id);
  }
  for (EpisodeRow& row : rows) row.step = step;
  return rows;
}

// Each play's reset() observation, for designer/formula_in_first_obs (trainer/generation_stats.h).
std::vector<FirstObservation> first_observations(const std::vector<rollout::EpisodeResult>& plays) {
  std::vector<FirstObservation> out;
  for (const rollout::EpisodeResult& r : plays) out.push_back({r.sample.env_id, r.first_observation});
  return out;
}

void record_agent_scores(const AgentScores& s, StepRecord& rec) {
  rec.agent_samples = static_cast<int64_t>(s.filter.kept.size());
  rec.agent_filtered = s.filter.dropped;
  rec.frac_zero_std = s.filter.frac_zero_std();
  rec.truncated_frac = s.filter.truncated_frac();
  rec.learnable_share = s.learnable_share;
  rec.reward_mean = s.reward_mean;
  rec.success_rate = s.success_rate;
  rec.turns_mean = s.turns_mean;
  rec.agent_tokens = s.sampled_tokens;
}

// The tool calls of a step's no-hint `plays` and (regeneration steps) `hinted` plays.
ToolCallRecord tool_call_record(const std::vector<rollout::EpisodeResult>& plays,
                                const std::vector<rollout::EpisodeResult>* hinted) {
  ToolCallRecord out;
  int64_t calls = 0, malformed = 0, with_calls = 0;
  for (const rollout::EpisodeResult& r : plays) {
    calls += r.tool_calls;
    malformed += r.malformed_tool_calls;
    with_calls += r.tool_calls > 0;
  }
  const double n = static_cast<double>(std::max<size_t>(1, plays.size()));
  out.calls_per_play = static_cast<double>(calls) / n;
  out.plays_with_calls = static_cast<double>(with_calls) / n;
  out.malformed_share = calls ? static_cast<double>(malformed) / static_cast<double>(calls) : 0.0;
  if (hinted && !hinted->empty()) {
    int64_t h = 0;
    for (const rollout::EpisodeResult& r : *hinted) h += r.tool_calls;
    out.hinted_calls_per_play = static_cast<double>(h) / static_cast<double>(hinted->size());
  }
  return out;
}

}  // namespace

std::vector<PlayOutcome> play_outcomes(const std::vector<rollout::EpisodeResult>& plays) {
  std::vector<PlayOutcome> out;
  for (const rollout::EpisodeResult& r : plays)
    out.push_back({r.sample.env_id, r.reward, r.truncated, r.process == envsandbox::CallStatus::kTimeout, r.turns, r.sample.num_trainable()});
  return out;
}

SelfPlay::SelfPlay(const Config& config, const RunDir& run, rollout::PolicyRef policy,
                   envsandbox::EnvServer& server, Corpus& corpus, const std::vector<SeedEnv>& seeds,
                   torch::optim::Optimizer& optimizer, std::function<void(const std::string&)> log,
                   const DistributedContext* dist, policy::Transformer kl_reference, TbWriter* tb)
    : config_(config),
      run_(run),
      policy_(policy),
      server_(server),
      corpus_(corpus),
      seeds_(seeds),
      optimizer_(optimizer),
      log_(std::move(log)),
      dist_(dist ? dist : &single_process()),
      kl_reference_(std::move(kl_reference)),
      memory_(config.memory.size, config.memory.band_low, config.memory.band_high),
      skill_ema_(reward::LearningPotentialConfig{config.reward.ema_fast, config.reward.ema_slow}),
      rng_(config.run.seed) {
  memory_.load(run.memory_path());
  mode_ = parse_selfplay_mode(config.selfplay.mode);
  setting_ = rollout::parse_setting(config.selfplay.setting);
  if (mode_ == SelfPlayMode::kFixedPool) {
    pool_ = config.selfplay.pool_dir.empty() ? seeds : load_seed_envs(config.selfplay.pool_dir);
    check_seed_setting(pool_, config.selfplay.setting, config.selfplay.pool_dir.empty() ? "seed_envs.dir" : "selfplay.pool_dir");
  }
  if (!dist_->is_main()) return;  // only rank 0 writes files
  tb_ = tb;
  if (!tb_) {
    own_tb_ = std::make_unique<TbWriter>(run.tb_dir());
    tb_ = own_tb_.get();
  }
  rollouts_ = std::make_unique<RolloutLog>(run.rollouts_path());
  if (config.eval.every > 0)
    for (const std::string& dir : config.eval.sets)
      eval_sets_.emplace_back(std::filesystem::path(dir).lexically_normal().filename().string(), load_seed_envs(dir));
}

SelfPlaySummary SelfPlay::run(int64_t first) {
  const auto t0 = Clock::now();
  if (first == 0 && !eval_sets_.empty()) {  // the held-out baseline before the first self-play step
    const std::map<std::string, double> m = evaluate_heldout();
    run_.log_metrics(0, m);
    tb_->add_scalars(0, m);
  }
  for (int64_t t = first; t < config_.selfplay.steps; ++t) step(t);
  summary_.seconds += seconds_since(t0);
  return summary_;
}

void SelfPlay::step(int64_t t) {
  const auto step_start = Clock::now();
  const c10::Device device = policy_.model->parameters().front().device();
  reset_device_memory_peaks(device);  // the GPU peaks logged are this step's
  const bool regeneration = t % config_.selfplay.k == 0, last = t + 1 == config_.selfplay.steps;
  StepRecord rec;
  rec.step = t + 1;
  // 1. The designer samples whose delay is over (selfplay.designer_delay, default k: the generation's
  //    whole window), scored on the plays of those steps.
  std::vector<rollout::Sample> batch;
  const int delay = config_.selfplay.designer_delay > 0 ? config_.selfplay.designer_delay : config_.selfplay.k;
  if (t >= delay && t % config_.selfplay.k == delay % config_.selfplay.k) {
    DesignerBatch closing = close_designer_window();
    batch = std::move(closing.samples);
    rec.designer_scorings.push_back(closing.record);
  }
  const bool fixed_pool = mode_ == SelfPlayMode::kFixedPool;
  // The generation replaced at this step has closed its window: its reward levels and rollouts.h5 rows.
  if (regeneration && t > 0) rec.closed_generations.push_back(close_generation(live_, fixed_pool, rec.step));
  std::map<std::string, uint64_t> hashes;  // closing and new generation: environment id -> program hash
  add_source_hashes(live_, hashes);
  // 2. Every k steps: a new generation, its hints and its hinted plays (r_hint).
  const auto rollout_start = Clock::now();
  Generation generation;
  if (regeneration) {
    generation = new_generation(t);
    rec.generation = generation.record;
  }
  add_source_hashes(live_, hashes);
  // 3. Every live environment, plays_per_env times without the hint.
  std::vector<rollout::EpisodeResult> plays = play_live(t);
  if (regeneration) describe_generation(live_, fixed_pool, first_observations(plays), *rec.generation);
  rec.rollout_s = seconds_since(rollout_start);
  // 4. Rewards, windows, regret and memory, advantages, filters; the last step flushes the designer buffer.
  const AgentScores scores = score_plays(t, regeneration, plays);
  record_agent_scores(scores, rec);
  if (setting_ == rollout::Setting::kToolUse)
    rec.tool_calls = tool_call_record(plays, regeneration ? &generation.hinted : nullptr);
  rec.valid_rate = valid_rate_;
  rec.regret = mean_regret(live_);
  if (mode_ == SelfPlayMode::kSelfPlay) rec.window_blend = window_blend(live_, blend_config(config_.reward));
  rec.live_envs = static_cast<int64_t>(live_.size());
  if (last) rec.closed_generations.push_back(close_generation(live_, fixed_pool, rec.step));  // its window ends
  if (last && !designer_buffer_.empty()) {
    DesignerBatch flushed = close_designer_window();
    for (rollout::Sample& s : flushed.samples) batch.push_back(std::move(s));
    rec.designer_scorings.push_back(flushed.record);
  }
  // 5. One update on the mixed batch, designer samples first (reference §1). A frozen designer
  //    (selfplay.designer_train: false) keeps its scored samples out of the batch; they are logged untrained.
  std::vector<rollout::Sample> frozen;
  if (!config_.selfplay.designer_train) {
    std::swap(frozen, batch);
    for (DesignerScoringRecord& s : rec.designer_scorings) s.trained_samples = 0;
  }
  const size_t n_designer = batch.size();
  std::vector<EpisodeRow> rows(n_designer);
  for (size_t i = 0; i < plays.size(); ++i) {
    rows.push_back(play_row(plays[i], scores.filter.keep[i]));
    batch.push_back(std::move(plays[i].sample));
  }
  // ZeRO-3 (distributed.sharding full): the optimizer's model is the sharded one, and policy_ holds the
  // rollouts' whole inference copy, released for the update and all-gathered again after it.
  auto* full = dynamic_cast<ShardedAdamW*>(&optimizer_);
  if (full && !full->sharded_model()) full = nullptr;
  if (full) release_parameters(policy_.model->parameters());
  const TrainResult trained = train_step({config_, full ? full->sharded_model() : policy_.model, optimizer_, *dist_,
                                          kl_reference_},
                                         t, batch, n_designer, scores.filter);
  if (full) full->gather_parameters_into(policy_.model->parameters());
  rec.designer_samples = static_cast<int64_t>(n_designer);
  rec.lr = trained.lr;
  rec.update = trained.update;
  rec.log_kl = config_.loss.kl_coef != 0.0;
  rec.mfu = trained.mfu;
  // 6. Held-out evaluation on schedule (eval.every, and after the last step).
  if (config_.eval.every > 0 && ((t + 1) % config_.eval.every == 0 || last)) rec.eval = evaluate_heldout();
  // 7. Log the step record; 8. checkpoint on schedule.
  rec.episodes = episode_rows(std::move(rows), batch, frozen, generation.hinted, rec.step, hashes);
  log_step(rec, step_start, device);
  ++summary_.steps;
  checkpoint_on_schedule(t);
}

DesignerBatch SelfPlay::close_designer_window() {
  DesignerBatch out = score_designer_buffer(std::move(designer_buffer_), live_, skill_ema_, config_);
  designer_buffer_.clear();
  return out;
}

AgentScores SelfPlay::score_plays(int64_t t, bool regeneration, std::vector<rollout::EpisodeResult>& plays) {
  // Agent rewards -> per-environment z-score advantages (reference §5; reward.scale_by_std = false:
  // Dr.GRPO's r - mean). The optional filters (trainer/batch_filters.h) decide which plays train;
  // every play is still logged and counted in rewards, windows, regret and memory.
  const std::vector<PlayOutcome> outcomes = play_outcomes(plays);
  AgentScoring scoring;
  scoring.std_eps = config_.reward.actor_std_eps;
  scoring.scale_by_std = config_.reward.scale_by_std;
  scoring.filters = {config_.reward.filter_zero_std_groups, config_.reward.mask_truncated};
  const int group = config_.selfplay.plays_per_env;
  AgentScores scores = score_agent_plays(outcomes, live_, group, scoring);
  record_window(live_, outcomes, group, regeneration, summary_);
  for (size_t i = 0; i < plays.size(); ++i) {
    plays[i].sample.advantage = scores.advantages[i];
    plays[i].sample.rollout_id = t + 1;
  }
  if (regeneration && mode_ == SelfPlayMode::kSelfPlay) {  // hint regret and memory records (reference §5, §6)
    close_regret(live_, memory_, t + 1);
    if (dist_->is_main()) memory_.save(run_.memory_path());
  }
  return scores;
}

void SelfPlay::log_step(StepRecord& rec, std::chrono::steady_clock::time_point start, c10::Device device) {
  const auto log_start = Clock::now();
  std::vector<EnvironmentRow> environments;  // of the generations whose window closed
  for (const GenerationCloseRecord& c : rec.closed_generations)
    environments.insert(environments.end(), c.environments.begin(), c.environments.end());
  if (dist_->is_main()) rollouts_->append(rec.episodes, environments);
  rec.rollouts_h5_s = seconds_since(log_start);
  rec.max_rss_gb = static_cast<double>(peak_rss_bytes()) / (1 << 30);
  if (const std::optional<DeviceMemoryPeaks> gpu = device_memory_peaks(device)) {
    rec.gpu_max_allocated_gb = static_cast<double>(gpu->max_allocated_bytes) / (1 << 30);
    rec.gpu_max_reserved_gb = static_cast<double>(gpu->max_reserved_bytes) / (1 << 30);
  }
  rec.step_s = seconds_since(start);
  if (!dist_->is_main()) return;
  const std::map<std::string, double> m = step_metrics(rec);
  run_.log_metrics(rec.step, m);  // step numbers: the n-th step is n (selfplay.h)
  tb_->add_scalars(rec.step, m);
  log_(console_line(rec, config_.selfplay.steps, mode_ == SelfPlayMode::kFixedPool));
}

void SelfPlay::checkpoint_on_schedule(int64_t t) {
  const bool last = t + 1 == config_.selfplay.steps;
  if ((t + 1) % config_.checkpoint.every != 0 && !last) return;
  const auto* sharded = dynamic_cast<const ShardedAdamW*>(&optimizer_);
  if (sharded) {
    write_optimizer_shard(run_, t + 1, *sharded);  // every rank its shard, before rank 0 publishes them
    dist_->barrier();
  }
  // ZeRO-3: the weights are written from the master shards, gathered unit by unit (the inference copy
  // may be bf16); every rank takes part in the gathers, rank 0 writes.
  const bool full = sharded && sharded->sharded_model();
  const CheckpointWeights shards = full ? sharded_weights(*sharded) : CheckpointWeights{};
  if (!dist_->is_main()) {
    if (full) shards.for_each([](const std::string&, const torch::Tensor&) {});  // rank 0's gathers, unwritten
    return;
  }
  const SelfPlayState state = snapshot(t + 1);
  const TrainerStateRefs refs{state, optimizer_, memory_};
  save_training_checkpoint(run_, t + 1, policy_, config_.checkpoint.dtype, &refs, full ? &shards : nullptr);
  run_.prune_checkpoints(config_.checkpoint.keep_last, config_.duel.every);
}

SelfPlayState SelfPlay::snapshot(int64_t next_step) const {
  SelfPlayState s;
  s.next_step = next_step;
  std::ostringstream rng;
  rng << rng_;
  s.rng = rng.str();
  s.corpus_position = corpus_.position();
  s.live = live_;
  s.designer_buffer = designer_buffer_;
  for (const auto& [skill, ema] : skill_ema_.skills())
    s.skill_ema[skill] = {ema.initialised(), ema.mu_fast(), ema.mu_slow()};
  s.summary = summary_;
  s.last_valid_rate = valid_rate_;
  s.last_regret = mean_regret(live_);  // kept in the format; restore derives it from `live` again
  s.lr = optimizer_.param_groups().empty() ? 0.0 : optimizer_.param_groups()[0].options().get_lr();
  return s;
}

int64_t SelfPlay::resume(const std::string& checkpoint_dir) {
  SelfPlayState s = load_trainer_state(checkpoint_dir, optimizer_, memory_);
  const int64_t next = s.next_step;
  try {
    restore(std::move(s));
  } catch (const Error& e) {
    throw Error("checkpoint: " + std::string(e.what()) + " in " + checkpoint_dir);
  }
  if (!dist_->is_main()) return next;
  memory_.save(run_.memory_path());  // memory.json may be newer than the checkpoint: roll it back
  if (!rollouts_->truncate(next + 1))  // rows of steps next + 1, ... (step numbers) are redone
    log_("rollouts.h5 was torn by the interruption: kept as rollouts.h5.corrupt, a new file started");
  return next;
}

void SelfPlay::restore(SelfPlayState s) {
  std::istringstream rng(s.rng);
  rng >> rng_;
  if (rng.fail()) throw Error("malformed loop RNG state");
  corpus_.seek(s.corpus_position);
  live_ = std::move(s.live);
  designer_buffer_ = std::move(s.designer_buffer);
  skill_ema_ = reward::LearningPotentialTracker(
      reward::LearningPotentialConfig{config_.reward.ema_fast, config_.reward.ema_slow});
  for (const auto& [skill, ema] : s.skill_ema)
    if (ema.initialised) skill_ema_.at(skill).restore(ema.mu_fast, ema.mu_slow);
  summary_ = s.summary;
  valid_rate_ = s.last_valid_rate;
}

}  // namespace spade::trainer
