#include "trainer/ablation.h"

#include <cstdio>
#include <set>

namespace spade::trainer {

namespace {

// The mean of `key` over the steps that log it (and, when `only_with` is set, also log that key).
std::optional<double> mean_over_steps(const RunMetrics& run, const std::string& key, const char* only_with = nullptr) {
  double sum = 0;
  int n = 0;
  for (const nlohmann::json& s : run.steps) {
    if (!s.contains(key) || !s[key].is_number() || (only_with && !s.contains(only_with))) continue;
    sum += s[key].get<double>();
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

std::optional<RateInterval> rate_at(const nlohmann::json& step, const std::string& key) {
  if (!step.contains(key) || !step.contains(key + "_low") || !step.contains(key + "_high")) return std::nullopt;
  return RateInterval{step[key].get<double>(), step[key + "_low"].get<double>(), step[key + "_high"].get<double>()};
}

std::string cell(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

std::string cell(const std::optional<RateInterval>& r) {
  if (!r) return "-";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f%% [%.1f, %.1f]", 100 * r->value, 100 * r->low, 100 * r->high);
  return buf;
}

nlohmann::json to_json(const std::optional<RateInterval>& r) {
  if (!r) return nullptr;
  return {{"success", r->value}, {"low", r->low}, {"high", r->high}};
}

nlohmann::json to_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::set<std::string> eval_sets(const std::vector<AblationRow>& rows) {
  std::set<std::string> sets;
  for (const AblationRow& r : rows)
    for (const auto& [name, _] : r.eval) sets.insert(name);
  return sets;
}

}  // namespace

AblationRow ablation_row(const std::string& variant, const RunMetrics& run) {
  AblationRow row;
  row.variant = variant;
  row.run = run.name;
  for (const nlohmann::json& s : run.steps) row.steps = std::max(row.steps, s.value("step", int64_t{0}));
  // Eval sets: every key eval/<set>/success (per-skill keys have one more path part).
  for (const nlohmann::json& s : run.steps)
    for (const auto& [key, _] : s.items()) {
      if (key.rfind("eval/", 0) != 0 || key.size() < 13 || key.compare(key.size() - 8, 8, "/success") != 0) continue;
      const std::string set = key.substr(5, key.size() - 13);
      if (set.find('/') != std::string::npos) continue;
      EvalBeforeAfter& e = row.eval[set];
      const int64_t step = s.value("step", int64_t{0});
      if (step == 0) e.before = rate_at(s, key);
      if (step > 0 && step >= e.after_step) {
        e.after = rate_at(s, key);
        e.after_step = step;
      }
    }
  row.learnable_share = mean_over_steps(run, "designer/learnable_share");
  row.valid_rate = mean_over_steps(run, "designer/valid_rate", "designer/attempts");
  row.regret = mean_over_steps(run, "designer/regret");
  if (run.summary.is_object() && run.summary.contains("wall_seconds")) row.wall_s = run.summary["wall_seconds"].get<double>();
  return row;
}

std::string ablation_markdown(const std::vector<AblationRow>& rows) {
  const std::set<std::string> sets = eval_sets(rows);
  std::string md = "| Variant | Run | Steps |";
  std::string rule = "|---|---|---:|";
  for (const std::string& set : sets) {
    md += " " + set + " before | " + set + " after |";
    rule += "---:|---:|";
  }
  md += " Learnable share | Valid rate | Regret | Wall time (s) |\n";
  rule += "---:|---:|---:|---:|\n";
  md += rule;
  for (const AblationRow& r : rows) {
    md += "| " + r.variant + " | " + r.run + " | " + std::to_string(r.steps) + " |";
    for (const std::string& set : sets) {
      const auto it = r.eval.find(set);
      md += " " + (it == r.eval.end() ? std::string("-") : cell(it->second.before)) + " | " +
            (it == r.eval.end() ? std::string("-") : cell(it->second.after)) + " |";
    }
    md += " " + cell(r.learnable_share, "%.3f") + " | " + cell(r.valid_rate, "%.3f") + " | " +
          cell(r.regret, "%+.3f") + " | " + cell(r.wall_s, "%.0f") + " |\n";
  }
  md += "\nEval: success on held-out environments, step 0 (before) and the last eval (after), with the 95% "
        "interval each run logged (percentile bootstrap over environments). Learnable share and regret: means "
        "over steps; valid rate: mean over regeneration steps.\n";
  return md;
}

nlohmann::json ablation_json(const std::vector<AblationRow>& rows) {
  nlohmann::json out = {{"rows", nlohmann::json::array()}};
  for (const AblationRow& r : rows) {
    nlohmann::json eval = nlohmann::json::object();
    for (const auto& [set, e] : r.eval)
      eval[set] = {{"before", to_json(e.before)}, {"after", to_json(e.after)}, {"after_step", e.after_step}};
    out["rows"].push_back({{"variant", r.variant},
                           {"run", r.run},
                           {"steps", r.steps},
                           {"eval", eval},
                           {"learnable_share", to_json(r.learnable_share)},
                           {"valid_rate", to_json(r.valid_rate)},
                           {"regret", to_json(r.regret)},
                           {"wall_s", to_json(r.wall_s)}});
  }
  return out;
}

}  // namespace spade::trainer
