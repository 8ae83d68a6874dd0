// The rollout side of SelfPlay (selfplay.h): designer rounds, admission, seed fill-ins, hints, hinted
// and live plays. The only part of the loop that touches the EnvServer, the corpus, the designer,
// hints and episodes; it hands plain samples and results to the bookkeeping and learner sides.
#include <chrono>
#include <cstdio>
#include <optional>

#include "common/strings.h"
#include "rollout/designer.h"
#include "rollout/prompts.h"
#include "trainer/config_bridge.h"
#include "trainer/heldout_eval.h"
#include "trainer/reset_seeds.h"
#include "trainer/run_envs.h"
#include "trainer/selfplay.h"
#include "trainer/selfplay_dp.h"

namespace spade::trainer {

namespace {

int64_t sampled_tokens(const std::vector<rollout::EpisodeResult>& plays) {
  int64_t n = 0;
  for (const rollout::EpisodeResult& r : plays) n += r.sample.num_trainable();
  return n;
}

}  // namespace

SelfPlay::Generation SelfPlay::new_generation(int64_t t) {
  if (mode_ == SelfPlayMode::kFixedPool) return pool_generation(t);
  const SelfPlayConfig& sp = config_.selfplay;
  const auto start = std::chrono::steady_clock::now();
  live_.clear();  // each generation lives exactly k steps (reference §1)
  // Skills of the setting rotate (reference §1); environment i gets skills[i mod n].
  std::vector<int> enabled;
  for (const std::string& slug : sp.skills) enabled.push_back(rollout::skill_index(slug, setting_));
  const std::vector<int> skills = rollout::active_skills(t, sp.k, sp.skills_per_regen, enabled);
  std::vector<std::string> slot_skills;
  for (int i = 0; i < sp.envs_per_regen; ++i)
    slot_skills.push_back(rollout::skills_of(setting_)[skills[i % skills.size()]].slug);
  std::vector<rollout::DesignAttempt> attempts = design(t, slot_skills);
  Generation g;
  admit(t, attempts, g.record);
  const size_t designed = live_.size();
  if (sp.fill_with_seeds) fill_empty_slots(t, slot_skills, attempts);
  g.record.from_seeds = static_cast<int64_t>(live_.size() - designed);
  write_hints();
  if (dist_->active()) restore(broadcast_state(*dist_, snapshot(t)));  // rank 0's generation is the authority
  g.hinted = play_hinted();  // every rank: r_hint of the new generation
  g.record.hint_reward = record_hinted(live_, play_outcomes(g.hinted), summary_);
  g.record.regen_tokens += sampled_tokens(g.hinted);
  g.record.regen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return g;
}

SelfPlay::Generation SelfPlay::pool_generation(int64_t t) {
  const auto start = std::chrono::steady_clock::now();
  live_.clear();
  const std::vector<size_t> picks =
      draw_pool(pool_.size(), config_.selfplay.envs_per_regen, config_.selfplay.pool_replacement, rng_);
  char name[160];
  for (size_t slot = 0; slot < picks.size(); ++slot) {
    const SeedEnv& e = pool_[picks[slot]];
    std::snprintf(name, sizeof name, "pool_%05lld_%03zu_%s_%s", static_cast<long long>(t + 1), slot, e.skill.c_str(),
                  e.name.c_str());
    LiveEnv env;
    env.id = name;
    env.skill = e.skill;
    env.code = e.code;
    env.path = e.path;
    env.born = t + 1;
    env.from_seed = true;
    live_.push_back(std::move(env));
  }
  if (dist_->active()) restore(broadcast_state(*dist_, snapshot(t)));  // rank 0's draw is the authority
  Generation g;
  g.record.from_seeds = static_cast<int64_t>(live_.size());
  g.record.regen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return g;
}

std::vector<rollout::DesignAttempt> SelfPlay::design(int64_t t, const std::vector<std::string>& slot_skills) {
  const SelfPlayConfig& sp = config_.selfplay;
  // Designer: fresh corpus document per attempt (none when corpus.enabled is false), memory
  // references (when memory.enabled), up to max_attempts; tool use: a task variant drawn per attempt
  // in the reference's 3:2:1:1 mix.
  const bool tool_use = setting_ == rollout::Setting::kToolUse;
  auto make_prompt = [&](const std::string& skill, std::string* doc_id) {
    std::optional<std::string> text;
    if (config_.corpus.enabled) {
      const Document& doc = corpus_.sample();
      *doc_id = doc.id;
      text = doc.text;
    }
    std::vector<rollout::ReferenceEnv> refs;
    if (config_.memory.enabled) refs = memory_.references(skill, config_.memory.positive_seeds, rng_);
    const rollout::Skill& s = rollout::find_skill(skill, setting_);
    if (!tool_use) return rollout::designer_user_prompt(s, text, refs, sp.max_turns);
    const std::string& variant = rollout::draw_tooluse_variant(std::uniform_real_distribution<double>(0, 1)(rng_));
    return rollout::designer_tool_user_prompt(s, text, refs, sp.max_turns, variant);
  };
  rollout::DesignerOptions dopt;
  dopt.sampling = sampling(sp.designer);
  dopt.sampling.max_tokens_in_flight = sp.max_tokens_in_flight;
  dopt.max_attempts = sp.max_attempts;
  dopt.max_batch = sp.max_batch;
  dopt.validate.tool_use = tool_use;
  dopt.validate.deterministic_reset = t > 0;  // the reference skips the reset gate at rollout 0
  dopt.self_validate = sp.self_validate;
  dopt.validator_sampling = sampling(sp.hint);
  dopt.validator_sampling.max_tokens_in_flight = sp.max_tokens_in_flight;
  // Each round's requests are sampled and validated split across the data-parallel ranks.
  const auto design_round = [&](const std::vector<rollout::DesignRequest>& requests, uint64_t seed) {
    return design_round_split(*dist_, requests, seed, [&](const std::vector<rollout::DesignRequest>& mine, uint64_t s) {
      return rollout::attempt_designs(policy_, server_, mine, dopt, s);
    });
  };
  return rollout::design_environments(slot_skills, make_prompt, dopt.max_attempts, rng_(), design_round);
}

void SelfPlay::admit(int64_t t, std::vector<rollout::DesignAttempt>& attempts, GenerationRecord& g) {
  // Every program is saved: admitted to envs/, rejected to rejected/ with its reason (reference §8).
  char name[96];
  for (rollout::DesignAttempt& a : attempts) {
    g.regen_tokens += a.sample.num_trainable();
    std::snprintf(name, sizeof name, "game_%05lld_%03d_%s", static_cast<long long>(t + 1), a.slot, a.skill.c_str());
    if (dist_->is_main()) write_design_attempt(run_, name, a, t + 1);  // files: rank 0 only
    if (a.self_validation != rollout::SelfValidation::kNotRun)
      ++g.self_validation[rollout::self_validation_name(a.self_validation)];
    if (!a.admitted()) {
      ++g.rejected_by_reason[a.report.reason];
      ++summary_.rejected_by_reason[a.report.reason];
      continue;
    }
    LiveEnv env;
    env.id = name;
    env.skill = a.skill;
    env.code = a.code;
    env.path = env_program_path(run_, name);
    env.born = t + 1;
    a.sample.env_id = env.id;
    a.sample.rollout_id = t + 1;
    designer_buffer_.push_back(std::move(a.sample));
    live_.push_back(std::move(env));
  }
  const size_t designed = live_.size();
  summary_.attempts += static_cast<int64_t>(attempts.size());
  summary_.admitted += static_cast<int64_t>(designed);
  summary_.rejected += static_cast<int64_t>(attempts.size() - designed);
  valid_rate_ = attempts.empty() ? 0.0 : static_cast<double>(designed) / attempts.size();
  g.attempts = static_cast<int64_t>(attempts.size());
  g.admitted = static_cast<int64_t>(designed);
  int64_t copies = 0;  // admitted programs that are verbatim seed programs
  for (const LiveEnv& env : live_)
    for (const SeedEnv& seed : seeds_)
      if (trim(env.code) == trim(seed.code)) {
        ++copies;
        break;
      }
  g.seed_copy_rate = designed ? static_cast<double>(copies) / designed : 0.0;
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

void SelfPlay::write_hints() {
  // Hints from the program (paper §4.2), split across ranks.
  const SelfPlayConfig& sp = config_.selfplay;
  std::vector<std::string> codes;
  for (const LiveEnv& env : live_) codes.push_back(env.code);
  rollout::SamplingParams hint_params = sampling(sp.hint);
  hint_params.max_tokens_in_flight = sp.max_tokens_in_flight;
  const auto hint_writer = [&](const std::vector<std::string>& mine, uint64_t seed) {
    return rollout::write_hints(policy_, mine, hint_params, seed, sp.max_batch, setting_ == rollout::Setting::kToolUse);
  };
  const std::vector<std::string> hints =
      codes.empty() ? std::vector<std::string>{} : write_hints_split(*dist_, codes, rng_(), hint_writer);
  for (size_t i = 0; i < live_.size(); ++i) {
    live_[i].hint = hints[i];
    if (dist_->is_main()) write_env_hint(run_, live_[i].id, hints[i]);
  }
}

std::vector<rollout::EpisodeResult> SelfPlay::play_hinted() {
  const SelfPlayConfig& sp = config_.selfplay;
  std::vector<rollout::EpisodeSpec> hinted;
  for (const LiveEnv& env : live_) {
    if (env.hint.empty()) continue;  // failed hint: r_hint = 0
    for (int j = 0; j < sp.hint_plays; ++j)
      hinted.push_back({env.id, env.skill, env.code, training_reset_seed(env.id + ":hint:" + std::to_string(j)), env.hint,
                        rollout::is_tooluse_skill(env.skill)});
  }
  const uint64_t seed = rng_();
  // Data parallel: split by environment, then all-gathered.
  return hinted.empty() ? std::vector<rollout::EpisodeResult>{}
                        : play_groups_split(*dist_, policy_, server_, hinted, sp.hint_plays, episode_options(config_), seed);
}

std::vector<rollout::EpisodeResult> SelfPlay::play_live(int64_t t) {
  const SelfPlayConfig& sp = config_.selfplay;
  std::vector<rollout::EpisodeSpec> specs;
  for (const LiveEnv& env : live_)
    for (int g = 0; g < sp.plays_per_env; ++g)
      specs.push_back({env.id, env.skill, env.code,
                       training_reset_seed(env.id + ":" + std::to_string(t) + ":" + std::to_string(g)), "",
                       rollout::is_tooluse_skill(env.skill)});
  // Data parallel: split by environment, then all-gathered.
  return play_groups_split(*dist_, policy_, server_, specs, sp.plays_per_env, episode_options(config_), rng_());
}

std::map<std::string, double> SelfPlay::evaluate_heldout() {
  std::map<std::string, double> metrics;
  if (!dist_->is_main() || eval_sets_.empty()) return metrics;
  const auto start = std::chrono::steady_clock::now();
  EvalOptions o;
  o.episode = episode_options(config_);
  o.episode.sampling.temperature = config_.eval.temperature;
  o.plays = config_.eval.plays;
  o.seeds = parse_eval_seeds(config_.eval.reset_seeds);
  o.seed = config_.run.seed;
  std::string line = "eval:";
  for (const auto& [name, envs] : eval_sets_) {
    const SetEval set = evaluate_set(policy_, server_, name, envs, o);
    const std::map<std::string, double> m = eval_metrics(name, set);
    metrics.insert(m.begin(), m.end());
    char part[160];
    std::snprintf(part, sizeof part, " %s %.3f [%.3f, %.3f]", name.c_str(), set.overall.success, set.overall.low,
                  set.overall.high);
    line += part;
  }
  metrics["time/eval_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_(line);
  return metrics;
}

}  // namespace spade::trainer
