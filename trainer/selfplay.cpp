#include "trainer/selfplay.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.h"
#include "common/strings.h"
#include "common/error.h"
#include "common/fnv1a.h"
#include "common/splitmix64.h"
#include "reward/advantages.h"
#include "common/process_stats.h"
#include "reward/designer_reward.h"
#include "rollout/designer.h"
#include "rollout/episode.h"
#include "rollout/prompts.h"
#include "trainer/batch_filters.h"
#include "trainer/checkpointing.h"
#include "trainer/device_memory.h"
#include "trainer/lr_schedule.h"
#include "trainer/selfplay_dp.h"
#include "trainer/step_bench.h"

namespace spade::trainer {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Reset seeds (reference §5: hinted plays reset with seed hash(path + i) mod 2^31; Python's hash is
// salted, so we fix our own). The key is the environment's id (its generation, slot and skill), not its
// file path: a path holds the run or checkout directory, which made a run's outcomes depend on where
// it was started from. Hash: FNV-1a, then splitmix64 (common/splitmix64.h). FNV-1a alone leaves the low bits
// poorly mixed (the parity of "path:t:g" alternated with g, and one environment's seeds mod 3 took
// only two values), which games that pick their instance by seed % n would show as identical plays.
int64_t reset_seed(const std::string& key) { return static_cast<int64_t>(splitmix64(fnv1a64(key)) % (1ULL << 31)); }

double mean(const std::vector<double>& v) { return reward::mean_or_zero(v); }

const DistributedContext& single_process() {
  static const DistributedContext single;
  return single;
}

}  // namespace

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
  if (!dist_->is_main()) return;  // only rank 0 writes files
  tb_ = tb;
  if (!tb_) {
    own_tb_ = std::make_unique<TbWriter>(run.tb_dir());
    tb_ = own_tb_.get();
  }
  rollouts_ = std::make_unique<RolloutLog>(run.rollouts_path());
}

SelfPlaySummary SelfPlay::run(int64_t first) {
  const auto t0 = Clock::now();
  for (int64_t t = first; t < config_.selfplay.steps; ++t) {
    std::map<std::string, double> m = step(t);
    if (!dist_->is_main()) continue;
    run_.log_metrics(t + 1, m);  // step numbers: the n-th step is n (selfplay.h)
    tb_->add_scalars(t + 1, m);
    char line[320];
    std::snprintf(line, sizeof line,
                  "step %3lld/%d | reward %.3f | envs %d valid %.2f | regret %+.3f | blend %.3f | "
                  "grad_norm %.3f | entropy %.3f | tis %.3f | %5.0f tok/s | %.1f s",
                  static_cast<long long>(t + 1), config_.selfplay.steps, m["reward/mean"],
                  static_cast<int>(live_.size()), m["designer/valid_rate"], m["designer/regret"],
                  m["designer/blend"], m["actor/grad_norm"], m["actor/entropy"], m["train/tis"],
                  m["perf/tokens_per_s"], m["time/step_s"]);
    log_(line);
  }
  summary_.seconds += seconds_since(t0);
  return summary_;
}

std::map<std::string, double> SelfPlay::step(int64_t t) {
  const auto step_start = Clock::now();
  const c10::Device device = policy_.model->parameters().front().device();
  reset_device_memory_peaks(device);  // the GPU peaks below are this step's
  const SelfPlayConfig& sp = config_.selfplay;
  const bool regeneration = t % sp.k == 0;
  const bool last = t + 1 == sp.steps;
  std::map<std::string, double> m;
  int64_t sampled_tokens = 0;

  // 1. Every k steps: score the closing generation's designer samples (their window is complete),
  //    then replace the environments with a freshly designed, validated and hinted generation.
  std::vector<rollout::Sample> designer_batch;
  if (regeneration && t > 0) designer_batch = delayed_designer_batch(m);
  std::map<std::string, uint64_t> hash_of;  // environment id -> program hash, for rollouts.h5
  for (const LiveEnv& env : live_) hash_of[env.id] = source_hash(env.code);
  hinted_plays_.clear();
  const auto rollout_start = Clock::now();
  if (regeneration) {
    regenerate(t, m);  // designer, gates, hints: every rank, the work split (selfplay_dp.h)
    if (dist_->active()) restore(broadcast_state(*dist_, snapshot(t)));  // rank 0's generation is the authority
    play_hinted(m);  // every rank: r_hint of the new generation
  }
  for (const LiveEnv& env : live_) hash_of[env.id] = source_hash(env.code);
  m["designer/valid_rate"] = last_valid_rate_;

  // 2. Play every live environment G times without the hint.
  std::vector<rollout::EpisodeSpec> specs;
  for (const LiveEnv& env : live_)
    for (int g = 0; g < sp.plays_per_env; ++g)
      specs.push_back({env.id, env.skill, env.code,
                       reset_seed(env.id + ":" + std::to_string(t) + ":" + std::to_string(g)), ""});
  std::vector<rollout::EpisodeResult> plays =  // data parallel: split by environment, then all-gathered
      play_groups_split(*dist_, policy_, server_, specs, sp.plays_per_env, episode_options(config_), rng_());
  const double rollout_s = seconds_since(rollout_start);

  // 3. Agent rewards -> per-environment z-score advantages (reference §5; reward.scale_by_std = false:
  //    Dr.GRPO's r - mean). The optional filters (trainer/batch_filters.h) decide which plays train;
  //    every play is still logged and counted in rewards, windows, regret and memory.
  std::vector<double> rewards;
  std::vector<std::string> groups;
  std::vector<bool> truncated;
  for (const rollout::EpisodeResult& r : plays) {
    rewards.push_back(r.reward);
    groups.push_back(r.sample.env_id);
    truncated.push_back(r.truncated);
  }
  const std::vector<double> adv =
      reward::actor_advantages(rewards, groups, config_.reward.actor_std_eps, config_.reward.scale_by_std);
  const BatchFilterResult filter = filter_agent_plays(
      rewards, groups, truncated, {config_.reward.filter_zero_std_groups, config_.reward.mask_truncated});
  std::vector<int64_t> env_wins(live_.size(), 0);  // this step's won plays per live environment
  std::vector<rollout::Sample> agent_batch;
  std::vector<EpisodeRow> agent_rows;  // episode facts for rollouts.h5, aligned with agent_batch
  int64_t turns = 0, successes = 0;
  for (size_t i = 0; i < plays.size(); ++i) {
    rollout::EpisodeResult& r = plays[i];
    LiveEnv& env = live_[i / sp.plays_per_env];
    env.window_rewards.push_back(r.reward);
    if (r.failure == "timeout") env.step_timeout = true;
    if (regeneration) {
      env.r_nohint += r.reward / sp.plays_per_env;
      summary_.nohint_success_sum += r.reward > 0;
      ++summary_.nohint_plays;
    }
    turns += r.turns;
    successes += r.reward > 0;
    env_wins[i / sp.plays_per_env] += r.reward > 0;
    sampled_tokens += r.sample.num_trainable();
    r.sample.advantage = adv[i];
    r.sample.rollout_id = t + 1;
    EpisodeRow row;
    row.step = t + 1;
    row.terminated = r.terminated;
    row.truncated = r.truncated;
    row.turns = r.turns;
    row.trained = filter.keep[i];
    agent_rows.push_back(row);
    agent_batch.push_back(std::move(r.sample));
  }

  // Regeneration step: hint regret and memory records from this step's plays (reference §5, §6).
  if (regeneration) {
    for (LiveEnv& env : live_) {
      env.regret = reward::hint_regret({env.r_hint}, {env.r_nohint}, !env.hint.empty()).regret;
      if (env.from_seed) continue;  // memory holds designed environments only
      double wins = 0;
      for (double r : env.window_rewards) wins += r > 0;
      memory_.add({env.path, env.skill, env.code, wins / std::max<size_t>(1, env.window_rewards.size()),
                   env.regret, t + 1});
    }
    if (dist_->is_main()) memory_.save(run_.memory_path());
    std::vector<double> regrets;
    for (const LiveEnv& env : live_) regrets.push_back(env.regret);
    last_regret_ = mean(regrets);
  }
  m["designer/regret"] = last_regret_;

  // 4. The delayed designer update is flushed at the last rollout (reference §5).
  if (last && !designer_buffer_.empty()) {
    std::vector<rollout::Sample> flushed = delayed_designer_batch(m);
    designer_batch.insert(designer_batch.end(), flushed.begin(), flushed.end());
  }

  // 5. One optimizer step on the mixed batch, designer samples first (reference §1).
  std::vector<rollout::Sample> batch = std::move(designer_batch);
  const int64_t n_designer = static_cast<int64_t>(batch.size());
  for (rollout::Sample& s : agent_batch) batch.push_back(std::move(s));
  const double lr = learning_rate(lr_schedule(config_), t);
  for (torch::optim::OptimizerParamGroup& group : optimizer_.param_groups()) group.options().set_lr(lr);
  m["actor/lr"] = lr;
  const UpdateOptions update = update_options(config_, kl_reference_);
  // Data parallel: each rank trains the environments it played (and its deal of designer samples).
  // Filtered plays stay in `batch` (rollouts.h5 logs them with trained = 0) but not in what is trained.
  // batch_share deals the agent part by position in whole groups of plays_per_env (the groups each rank
  // played), so removing plays before the deal would shift the later ones to other ranks and cut groups
  // apart (mask_truncated drops single plays). So the dropped plays are blanked in place (no tokens),
  // the deal is unchanged, and each rank removes the blanks from its own share: every rank trains what
  // is left of exactly the groups it played, and grpo_update's all-reduced normaliser counts kept
  // samples only. An empty share (or all groups filtered) is fine: grpo_update then returns zeros.
  const bool filtered = filter.dropped > 0;
  std::vector<rollout::Sample> share;
  if (filtered) {
    share = blank_dropped(batch, static_cast<size_t>(n_designer), filter.keep);
    if (dist_->active()) share = batch_share(*dist_, share, n_designer, sp.plays_per_env);
    remove_empty(share);
  } else if (dist_->active()) {
    share = batch_share(*dist_, batch, n_designer, sp.plays_per_env);
  }
  const std::vector<rollout::Sample>& trained = filtered || dist_->active() ? share : batch;
  const UpdateStats u = grpo_update(policy_.model, optimizer_, trained, update, dist_->active() ? dist_ : nullptr);

  // 6. Metrics (names of DESIGN.md) and checkpoint on schedule.
  m["actor/pg_loss"] = u.pg_loss;
  m["actor/pg_clipfrac"] = u.pg_clipfrac;
  m["actor/pg_clipfrac_lower"] = u.pg_clipfrac_lower;  // dual clip active (verl's name; 0 without it)
  m["actor/optimizer_steps"] = static_cast<double>(u.num_optimizer_steps);  // optim.mini_batches, less empty ones
  m["actor/ppo_kl"] = u.ppo_kl;
  m["actor/entropy"] = u.entropy;
  if (config_.loss.kl_coef != 0.0) m["actor/kl_loss"] = u.kl;  // verl's name; before kl_coef
  m["actor/grad_norm"] = u.grad_norm;
  m["train/tis"] = u.tis_mean;
  m["train/tis_clipfrac"] = u.tis_clipfrac;
  m["train/rollout_logp_abs_diff"] = u.rollout_logp_abs_diff;
  m["train/tokens"] = static_cast<double>(u.num_tokens);
  m["batch/designer_samples"] = static_cast<double>(n_designer);
  m["batch/agent_samples"] = static_cast<double>(filter.kept.size());  // agent plays in the optimizer batch
  m["batch/agent_filtered"] = static_cast<double>(filter.dropped);     // left out by the reward.* filters
  // TRL's frac_reward_zero_std (trainer-anchors §3) under our reward/ prefix: the share of this
  // step's environments (groups) whose plays all got the same reward, logged whether or not they
  // are filtered.
  m["reward/frac_reward_zero_std"] = filter.frac_zero_std();
  // Share of agent plays truncated (turn cap, context budget, response without EOS: rollout/episode.h);
  // verl's response_length/clip_ratio counts only the length cap.
  m["episode/truncated_frac"] = filter.truncated_frac();
  {
    // designer/learnable_share (DESIGN.md; SPADE paper Fig. 8): designed environments (seed fill-ins
    // excluded) whose no-hint plays of this step were won 20% to 80% of the time.
    std::vector<double> rates;
    for (size_t e = 0; e < live_.size(); ++e)
      if (!live_[e].from_seed) rates.push_back(static_cast<double>(env_wins[e]) / sp.plays_per_env);
    m["designer/learnable_share"] = learnable_share(rates);
  }
  m["reward/mean"] = mean(rewards);
  m["reward/success_rate"] = rewards.empty() ? 0.0 : static_cast<double>(successes) / rewards.size();
  m["episode/turns_mean"] = plays.empty() ? 0.0 : static_cast<double>(turns) / plays.size();
  m["envs/live"] = static_cast<double>(live_.size());
  if (!m.count("designer/blend")) {
    // Window-to-date estimate for the live generation (the trained value appears at t + k).
    std::vector<double> blends;
    for (const LiveEnv& env : live_)
      blends.push_back(reward::blend_reward(env.regret, mean(env.window_rewards), blend_config(config_.reward)));
    m["designer/blend"] = mean(blends);
  }
  // Sampled tokens per second of rollout (designer, hint and agent generation + environment steps).
  m["perf/tokens_per_s"] = (sampled_tokens + m["rollout/regen_tokens"]) / std::max(1e-9, rollout_s);
  m["time/rollout_s"] = rollout_s;
  m["time/update_s"] = u.seconds;
  m["perf/train_tokens_per_s"] = u.seconds > 0 ? static_cast<double>(u.num_tokens) / u.seconds : 0.0;
  if (config_.train.peak_tflops > 0 && u.seconds > 0)  // this rank's update (trainer/step_bench.h)
    m["perf/mfu"] = update_mfu(policy_.model->config(), trained, u.seconds, config_.train.peak_tflops);
  // Every episode of the step into rollouts.h5: the trained batch (designer first) and the hinted plays.
  std::vector<EpisodeRow> rows;
  std::vector<EnvironmentRow> new_envs;
  for (size_t i = 0; i < batch.size(); ++i) {
    EpisodeRow row = i < static_cast<size_t>(n_designer) ? EpisodeRow{} : agent_rows[i - n_designer];
    row.sample = &batch[i];
    row.step = t + 1;
    row.env_source_hash = hash_of.count(batch[i].env_id) ? hash_of[batch[i].env_id] : 0;
    rows.push_back(row);
  }
  for (const rollout::EpisodeResult& r : hinted_plays_) {
    EpisodeRow row;
    row.sample = &r.sample;
    row.step = t + 1;
    row.hinted = true;
    row.trained = false;
    row.terminated = r.terminated;
    row.truncated = r.truncated;
    row.turns = r.turns;
    row.env_source_hash = hash_of.count(r.sample.env_id) ? hash_of[r.sample.env_id] : 0;
    rows.push_back(row);
  }
  if (regeneration)
    for (const LiveEnv& env : live_) new_envs.push_back({env.id, env.skill, env.code, env.hint, env.born, env.from_seed});
  const auto log_start = Clock::now();
  if (dist_->is_main()) rollouts_->append(rows, new_envs);
  m["time/rollouts_h5_s"] = seconds_since(log_start);
  hinted_plays_.clear();

  m["perf/max_rss_gb"] = static_cast<double>(peak_rss_bytes()) / (1 << 30);
  if (const std::optional<DeviceMemoryPeaks> gpu = device_memory_peaks(device)) {  // verl's names
    m["perf/max_memory_allocated_gb"] = static_cast<double>(gpu->max_allocated_bytes) / (1 << 30);
    m["perf/max_memory_reserved_gb"] = static_cast<double>(gpu->max_reserved_bytes) / (1 << 30);
  }
  m["time/step_s"] = seconds_since(step_start);

  ++summary_.steps;
  if (dist_->is_main() && ((t + 1) % config_.checkpoint.every == 0 || last)) {
    const SelfPlayState state = snapshot(t + 1);
    const TrainerStateRefs refs{state, optimizer_, memory_};
    save_training_checkpoint(run_, t + 1, policy_, config_.checkpoint.dtype, &refs);
    run_.prune_checkpoints(config_.checkpoint.keep_last);
  }
  return m;
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
  s.last_valid_rate = last_valid_rate_;
  s.last_regret = last_regret_;
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
  last_valid_rate_ = s.last_valid_rate;
  last_regret_ = s.last_regret;
}

void SelfPlay::regenerate(int64_t t, std::map<std::string, double>& m) {
  const SelfPlayConfig& sp = config_.selfplay;
  const auto regen_start = Clock::now();
  live_.clear();  // each generation lives exactly k steps (reference §1)

  // Skills rotate (reference §1); environment i gets skills[i mod n].
  const std::vector<int> skills = rollout::active_skills(t, sp.k, sp.skills_per_regen);
  std::vector<std::string> slot_skills;
  for (int i = 0; i < sp.envs_per_regen; ++i)
    slot_skills.push_back(rollout::game_skills()[skills[i % skills.size()]].slug);

  // Designer: fresh corpus document per attempt, memory references, up to max_attempts.
  auto make_prompt = [&](const std::string& skill, std::string* doc_id) {
    const Document& doc = corpus_.sample();
    *doc_id = doc.id;
    std::vector<rollout::ReferenceEnv> refs;
    if (config_.memory.enabled) refs = memory_.references(skill, config_.memory.positive_seeds, rng_);
    return rollout::designer_user_prompt(rollout::find_skill(skill), doc.text, refs, sp.max_turns);
  };
  rollout::DesignerOptions dopt;
  dopt.sampling = sampling(sp.designer);
  dopt.sampling.max_tokens_in_flight = sp.max_tokens_in_flight;
  dopt.max_attempts = sp.max_attempts;
  dopt.max_batch = sp.max_batch;
  // Each round's requests are sampled and validated split across the data-parallel ranks.
  const auto design_round = [&](const std::vector<rollout::DesignRequest>& requests, uint64_t seed) {
    return design_round_split(*dist_, requests, seed, [&](const std::vector<rollout::DesignRequest>& mine, uint64_t s) {
      return rollout::attempt_designs(policy_, server_, mine, dopt, s);
    });
  };
  std::vector<rollout::DesignAttempt> attempts =
      rollout::design_environments(slot_skills, make_prompt, dopt.max_attempts, rng_(), design_round);
  const bool writes = dist_->is_main();  // files: rank 0 only

  // Save every program: admitted to envs/, rejected to rejected/ with its reason (reference §8).
  char name[96];
  int64_t sampled_tokens = 0;
  std::map<std::string, int64_t> rejected_now;
  for (rollout::DesignAttempt& a : attempts) {
    sampled_tokens += a.sample.num_trainable();
    std::snprintf(name, sizeof name, "game_%05lld_%03d_%s", static_cast<long long>(t + 1), a.slot, a.skill.c_str());
    nlohmann::json meta = a.report.to_json();
    meta["skill"] = a.skill;
    meta["doc_id"] = a.doc_id;
    meta["step"] = t + 1;
    meta["attempt"] = a.attempt;
    if (a.admitted()) {
      LiveEnv env;
      env.id = name;
      env.skill = a.skill;
      env.code = a.code;
      env.path = run_.envs_dir() + "/" + name + ".py";
      env.born = t + 1;
      if (writes) {
        write_file_atomic(env.path, a.code);
        write_file_atomic(run_.envs_dir() + "/" + name + ".json", meta.dump(2));
      }
      a.sample.env_id = env.id;
      a.sample.rollout_id = t + 1;
      designer_buffer_.push_back(std::move(a.sample));
      live_.push_back(std::move(env));
    } else {
      const std::string base = run_.rejected_dir() + "/" + name + "_try" + std::to_string(a.attempt);
      if (writes) {
        write_file_atomic(base + ".py", a.code);
        write_file_atomic(base + ".reason.txt", a.report.reason + "\n" + a.report.detail + "\n");
        write_file_atomic(base + ".json", meta.dump(2));
      }
      ++rejected_now[a.report.reason];
      ++summary_.rejected_by_reason[a.report.reason];
    }
  }
  const size_t designed = live_.size();
  summary_.attempts += static_cast<int64_t>(attempts.size());
  summary_.admitted += static_cast<int64_t>(designed);
  summary_.rejected += static_cast<int64_t>(attempts.size() - designed);
  last_valid_rate_ = attempts.empty() ? 0.0 : static_cast<double>(designed) / attempts.size();
  m["designer/attempts"] = static_cast<double>(attempts.size());
  m["designer/admitted"] = static_cast<double>(designed);
  // How many admitted programs are verbatim copies of a seed program (a small policy fresh from the
  // cold start reproduces its targets; novelty is what designer training should raise).
  int64_t copies = 0;
  for (const LiveEnv& env : live_)
    for (const SeedEnv& seed : seeds_)
      if (trim(env.code) == trim(seed.code)) {
        ++copies;
        break;
      }
  m["designer/seed_copy_rate"] = designed ? static_cast<double>(copies) / designed : 0.0;
  if (sp.fill_with_seeds) fill_empty_slots(t, slot_skills, attempts);
  m["envs/from_seeds"] = static_cast<double>(live_.size() - designed);
  for (const auto& [reason, n] : rejected_now) m["designer/rejected_by_reason/" + reason] = static_cast<double>(n);

  // Hints from the program (paper §4.2) and hinted plays: r_hint (reference §5).
  std::vector<std::string> codes;
  for (const LiveEnv& env : live_) codes.push_back(env.code);
  rollout::SamplingParams hint_params = sampling(sp.hint);
  hint_params.max_new_tokens = sp.hint_max_tokens;
  hint_params.max_tokens_in_flight = sp.max_tokens_in_flight;
  const auto hint_writer = [&](const std::vector<std::string>& mine, uint64_t seed) {
    return rollout::write_hints(policy_, mine, hint_params, seed, sp.max_batch);
  };
  const std::vector<std::string> hints =
      codes.empty() ? std::vector<std::string>{} : write_hints_split(*dist_, codes, rng_(), hint_writer);
  for (size_t i = 0; i < live_.size(); ++i) {
    live_[i].hint = hints[i];
    if (writes) write_file_atomic(run_.envs_dir() + "/" + live_[i].id + ".hint.txt", hints[i] + "\n");
  }
  m["time/regen_s"] = seconds_since(regen_start);
  m["rollout/regen_tokens"] = static_cast<double>(sampled_tokens);
}

void SelfPlay::play_hinted(std::map<std::string, double>& m) {
  const SelfPlayConfig& sp = config_.selfplay;
  const auto start = Clock::now();
  std::vector<rollout::EpisodeSpec> hinted;
  for (const LiveEnv& env : live_) {
    if (env.hint.empty()) continue;  // failed hint: r_hint = 0
    for (int j = 0; j < sp.hint_plays; ++j)
      hinted.push_back({env.id, env.skill, env.code, reset_seed(env.id + ":hint:" + std::to_string(j)), env.hint});
  }
  const uint64_t seed = rng_();
  std::vector<rollout::EpisodeResult> hinted_plays =  // data parallel: split by environment, then all-gathered
      hinted.empty() ? std::vector<rollout::EpisodeResult>{}
                     : play_groups_split(*dist_, policy_, server_, hinted, sp.hint_plays, episode_options(config_), seed);
  std::map<std::string, std::vector<double>> by_env;
  int64_t sampled_tokens = 0;
  for (const rollout::EpisodeResult& r : hinted_plays) {
    by_env[r.sample.env_id].push_back(r.reward);
    sampled_tokens += r.sample.num_trainable();
    summary_.hint_success_sum += r.reward > 0;
    ++summary_.hint_plays;
  }
  hinted_plays_ = std::move(hinted_plays);  // logged to rollouts.h5 at the end of the step
  for (LiveEnv& env : live_) env.r_hint = mean(by_env[env.id]);
  std::vector<double> r_hints;
  for (const LiveEnv& env : live_) r_hints.push_back(env.r_hint);
  m["designer/hint_reward"] = mean(r_hints);
  m["time/regen_s"] += seconds_since(start);
  m["rollout/regen_tokens"] += static_cast<double>(sampled_tokens);
}

void SelfPlay::fill_empty_slots(int64_t t, const std::vector<std::string>& slot_skills,
                                const std::vector<rollout::DesignAttempt>& attempts) {
  // Fixed-pool fallback: each slot without an admitted program gets a random seed environment of its
  // skill, so the agent always has environments to play. No designer sample is trained for it.
  std::vector<bool> filled(slot_skills.size(), false);
  for (const rollout::DesignAttempt& a : attempts) filled[a.slot] = filled[a.slot] || a.admitted();
  for (size_t slot = 0; slot < slot_skills.size(); ++slot) {
    if (filled[slot]) continue;
    std::vector<const SeedEnv*> same_skill;
    for (const SeedEnv& s : seeds_)
      if (s.skill == slot_skills[slot]) same_skill.push_back(&s);
    if (same_skill.empty()) continue;
    const SeedEnv& seed = *same_skill[std::uniform_int_distribution<size_t>(0, same_skill.size() - 1)(rng_)];
    char name[128];
    std::snprintf(name, sizeof name, "seed_%05lld_%03zu_%s_%s", static_cast<long long>(t + 1), slot,
                  seed.skill.c_str(), seed.name.c_str());
    LiveEnv env;
    env.id = name;
    env.skill = seed.skill;
    env.code = seed.code;
    env.path = seed.path;
    env.born = t + 1;
    env.from_seed = true;
    live_.push_back(std::move(env));
  }
}

std::vector<rollout::Sample> SelfPlay::delayed_designer_batch(std::map<std::string, double>& m) {
  // Blend (or variant) reward over each environment's k-step window, per-skill centring, scale S,
  // trained now with truncated IS against the rollout logprobs of step t - k (reference §5).
  reward::DesignerRewardConfig rc = designer_reward_config(config_.reward);
  std::vector<reward::DesignerSample> ds;
  std::vector<double> blends;
  for (const rollout::Sample& s : designer_buffer_) {
    const LiveEnv* env = nullptr;
    for (const LiveEnv& e : live_)
      if (e.id == s.env_id) env = &e;
    reward::DesignerWindowStats w;
    if (env) {
      w.r_hint = env->r_hint;
      w.r_nohint = env->r_nohint;
      w.window_rewards = env->window_rewards;
      w.step_timeout = env->step_timeout;
    }
    w.skill_mu_slow = skill_ema_.baseline(s.skill);
    const double r = reward::designer_raw_reward(w, rc);
    ds.push_back({s.skill, r});
    blends.push_back(r);
  }
  std::vector<std::pair<std::string, double>> env_means;  // one EMA step per skill per round (Sec. 7.2)
  for (const LiveEnv& env : live_) env_means.emplace_back(env.skill, mean(env.window_rewards));
  skill_ema_.update_round(env_means);
  for (const auto& [skill, ema] : skill_ema_.skills()) m["designer/lp_gap/" + skill] = ema.learning_potential();
  const int64_t n_actor = static_cast<int64_t>(live_.size()) * config_.selfplay.plays_per_env;
  const double scale = reward::designer_reward_scale(n_actor, static_cast<int64_t>(ds.size()),
                                                     config_.selfplay.k, config_.reward.designer_scale_cap);
  const std::vector<double> adv = reward::designer_advantages(ds, scale);
  std::vector<rollout::Sample> out = std::move(designer_buffer_);
  designer_buffer_.clear();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].reward = ds[i].reward;
    out[i].advantage = adv[i];
  }
  m["designer/blend"] = mean(blends);
  m["designer/scale"] = scale;
  m["designer/trained_samples"] = static_cast<double>(out.size());
  return out;
}

}  // namespace spade::trainer
