#include "trainer/heldout_eval.h"

#include <cstdio>
#include <tuple>

#include "common/error.h"
#include "common/stats.h"
#include "rollout/prompts.h"
#include "trainer/reset_seeds.h"

namespace spade::trainer {

EvalSeeds parse_eval_seeds(const std::string& name) {
  if (name == "heldout") return EvalSeeds::kHeldout;
  if (name == "training") return EvalSeeds::kTraining;
  throw Error("reset seeds must be heldout or training, not '" + name + "'");
}

const char* eval_seeds_name(EvalSeeds seeds) { return seeds == EvalSeeds::kHeldout ? "heldout" : "training"; }

std::vector<int64_t> eval_reset_seeds(EvalSeeds seeds, int plays) {
  std::vector<int64_t> out;
  for (int j = 0; j < plays; ++j) out.push_back(seeds == EvalSeeds::kHeldout ? heldout_reset_seed(j) : j);
  return out;
}

namespace {

// The k of the printed pass@k columns: 1, 2, 4, ... below N, and N.
std::vector<int> shown_ks(int plays) {
  std::vector<int> ks;
  for (int k = 1; k < plays; k *= 2) ks.push_back(k);
  ks.push_back(plays);
  return ks;
}

GroupEval group_of(const std::string& name, const std::vector<const EnvEval*>& envs, const EvalOptions& o) {
  GroupEval g;
  g.name = name;
  g.environments = static_cast<int>(envs.size());
  std::vector<double> rates;
  for (const EnvEval* e : envs) rates.push_back(e->success);
  const MeanInterval m = bootstrap_mean_interval(rates, o.bootstrap_resamples, o.bootstrap_seed);
  g.success = m.mean;
  g.low = m.low;
  g.high = m.high;
  g.pass_at_k.assign(o.plays, 0.0);
  for (const EnvEval* e : envs)
    for (int k = 0; k < o.plays; ++k) g.pass_at_k[k] += e->pass_at_k[k] / envs.size();
  return g;
}

nlohmann::json group_json(const GroupEval& g) {
  return {{"name", g.name},  {"environments", g.environments}, {"success", g.success},
          {"ci95", {g.low, g.high}}, {"pass_at_k", g.pass_at_k}};
}

}  // namespace

SetEval summarize_plays(const std::string& name, const std::vector<SeedEnv>& envs,
                        const std::vector<std::vector<rollout::EpisodeResult>>& plays, const EvalOptions& options) {
  if (envs.empty()) throw Error("eval " + name + ": no environment");
  if (plays.size() != envs.size())
    throw Error("eval " + name + ": " + std::to_string(plays.size()) + " play lists for " + std::to_string(envs.size()) +
                " environments");
  SetEval set;
  set.name = name;
  set.temperature = options.episode.sampling.temperature;
  set.plays = options.plays;
  set.seeds = options.seeds;
  std::map<std::string, std::vector<const EnvEval*>> by_skill;
  set.environments.reserve(envs.size());
  for (size_t i = 0; i < envs.size(); ++i) {
    if (static_cast<int>(plays[i].size()) != options.plays)
      throw Error("eval " + name + ": " + envs[i].path + " has " + std::to_string(plays[i].size()) + " plays, not " +
                  std::to_string(options.plays));
    EnvEval e;
    e.skill = envs[i].skill;
    e.name = envs[i].name;
    e.path = envs[i].path;
    e.plays = options.plays;
    for (const rollout::EpisodeResult& r : plays[i]) {
      if (r.reward > 0) ++e.wins;
      if (!r.failure.empty()) ++e.failures[r.failure];
    }
    e.success = static_cast<double>(e.wins) / e.plays;
    std::tie(e.low, e.high) = wilson_interval(e.wins, e.plays);
    for (int k = 1; k <= e.plays; ++k) e.pass_at_k.push_back(pass_at_k(e.plays, e.wins, k));
    set.environments.push_back(std::move(e));
  }
  std::vector<const EnvEval*> all;
  for (const EnvEval& e : set.environments) {
    by_skill[e.skill].push_back(&e);
    all.push_back(&e);
  }
  for (const auto& [skill, members] : by_skill) set.skills.push_back(group_of(skill, members, options));
  set.overall = group_of("overall", all, options);
  return set;
}

SetEval evaluate_set(const rollout::PolicyRef& policy, envsandbox::EnvServer& server, const std::string& name,
                     const std::vector<SeedEnv>& envs, const EvalOptions& options) {
  if (options.plays < 1) throw Error("eval: plays must be >= 1, got " + std::to_string(options.plays));
  if (envs.empty()) throw Error("eval " + name + ": no environment");
  const std::vector<int64_t> seeds = eval_reset_seeds(options.seeds, options.plays);
  std::vector<rollout::EpisodeSpec> specs;
  for (const SeedEnv& e : envs)
    for (int j = 0; j < options.plays; ++j)
      specs.push_back({e.skill + "/" + e.name, e.skill, e.code, seeds[j], "", rollout::is_tooluse_skill(e.skill)});
  std::vector<rollout::EpisodeResult> results = rollout::play_episodes(policy, server, specs, options.episode, options.seed);
  std::vector<std::vector<rollout::EpisodeResult>> plays(envs.size());
  for (size_t i = 0; i < results.size(); ++i) plays[i / options.plays].push_back(std::move(results[i]));
  return summarize_plays(name, envs, plays, options);
}

nlohmann::json SetEval::to_json() const {
  nlohmann::json envs = nlohmann::json::array(), skills_j = nlohmann::json::array();
  for (const EnvEval& e : environments)
    envs.push_back({{"skill", e.skill}, {"name", e.name}, {"path", e.path}, {"plays", e.plays}, {"wins", e.wins},
                    {"success", e.success}, {"ci95", {e.low, e.high}}, {"pass_at_k", e.pass_at_k},
                    {"failures", e.failures}});
  for (const GroupEval& g : skills) skills_j.push_back(group_json(g));
  return {{"set", name},
          {"temperature", temperature},
          {"plays", plays},
          {"reset_seeds", eval_seeds_name(seeds)},
          {"intervals", "95%: Wilson score per environment; percentile bootstrap over environments for skills and "
                        "overall (mean of the environments' success rates)"},
          {"environments", envs},
          {"skills", skills_j},
          {"overall", group_json(overall)}};
}

std::map<std::string, double> eval_metrics(const std::string& set_name, const SetEval& set) {
  std::map<std::string, double> m;
  auto put = [&](const std::string& stem, const GroupEval& g) {
    m[stem + "/success"] = g.success;
    m[stem + "/success_low"] = g.low;
    m[stem + "/success_high"] = g.high;
  };
  put("eval/" + set_name, set.overall);
  for (const GroupEval& g : set.skills) put("eval/" + set_name + "/" + g.name, g);
  return m;
}

std::string format_set_eval(const SetEval& set) {
  const std::vector<int> ks = shown_ks(set.plays);
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "%s: %zu environments x %d plays, temperature %g%s, %s reset seeds\n",
                set.name.c_str(), set.environments.size(), set.plays, set.temperature,
                set.temperature == 0 ? " (greedy)" : "", eval_seeds_name(set.seeds));
  out += line;
  out += "95% intervals: Wilson per environment; bootstrap over environments for skills and overall\n";
  std::string head;
  for (int k : ks) head += "   pass@" + std::to_string(k);
  std::snprintf(line, sizeof line, "%-34s %7s  %-15s%s\n", "environment", "success", "95% interval", head.c_str());
  out += line;
  auto row = [&](const std::string& label, double s, double lo, double hi, const std::vector<double>& pk,
                 const std::string& extra) {
    std::string cols;
    for (int k : ks) {
      char c[32];
      std::snprintf(c, sizeof c, " %*.3f", static_cast<int>(6 + std::to_string(k).size()), pk[k - 1]);
      cols += c;
    }
    std::snprintf(line, sizeof line, "%-34s %7.3f  [%.3f, %.3f]%s%s\n", label.c_str(), s, lo, hi, cols.c_str(), extra.c_str());
    out += line;
  };
  for (const EnvEval& e : set.environments) {
    std::string extra;
    for (const auto& [id, n] : e.failures) extra += "  " + id + " x" + std::to_string(n);
    row(e.skill + "/" + e.name + " (" + std::to_string(e.wins) + "/" + std::to_string(e.plays) + ")", e.success, e.low,
        e.high, e.pass_at_k, extra);
  }
  for (const GroupEval& g : set.skills)
    row("skill " + g.name + " (" + std::to_string(g.environments) + " envs)", g.success, g.low, g.high, g.pass_at_k, "");
  row("overall (" + std::to_string(set.overall.environments) + " envs)", set.overall.success, set.overall.low,
      set.overall.high, set.overall.pass_at_k, "");
  return out;
}

}  // namespace spade::trainer
