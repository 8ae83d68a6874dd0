#include "trainer/run_report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/html.h"
#include "common/strings.h"
#include "common/stats.h"

namespace spade::trainer {
namespace {

namespace fs = std::filesystem;

// The charts: (title, metric key drawn in it, fixed [0, 1] axis), in sections.
struct ChartSpec {
  const char* title;
  const char* key;
  bool unit_range;
};
struct ChartSection {
  const char* heading;
  std::vector<ChartSpec> charts;
};
const std::vector<ChartSection>& chart_sections() {
  static const std::vector<ChartSection> sections = {
      {"Agent and update",
       {{"Agent reward (mean over the step's plays)", "reward/mean", false},
        {"Agent success rate", "reward/success_rate", true},
        {"Policy-gradient loss", "actor/pg_loss", false},
        {"Clip fraction", "actor/pg_clipfrac", true},
        {"Truncated IS weight (mean)", "train/tis", false},
        {"Entropy", "actor/entropy", false},
        {"Gradient norm", "actor/grad_norm", false},
        {"Sampler tokens per second", "perf/tokens_per_s", false}}},
      // The environment supply (SPADE §6.2, Fig. 8 and 9, App. I.1): difficulty, then diversity and
      // quality per regeneration (trainer/generation_stats.h; fixed-pool runs log their draws here).
      {"Designer",
       {{"Learnable share of designed environments", "designer/learnable_share", true},
        {"Designer valid rate (admitted / attempts)", "designer/valid_rate", true},
        {"Hint regret", "designer/regret", false},
        {"Designer blend reward", "designer/blend", false},
        {"Seed-copy rate of admitted programs", "designer/seed_copy_rate", true},
        {"Vendi score of admitted programs (cosine of token 3-gram counts)", "designer/vendi_score", false},
        {"Vendi score / programs", "designer/vendi_score_per_env", true},
        {"Distinct reward levels per environment (over its window)", "designer/reward_levels", false},
        {"Partial reward levels (0 < r < 1) per environment", "designer/partial_reward_levels", false},
        {"Share of first observations stating a formula", "designer/formula_in_first_obs", true}}},
      // duel/* come from duel/metrics.jsonl (`spade duel watch`), at the step of the scored checkpoint.
      {"Duel scoring of checkpoints",
       {{"Red win rate (contested Red turns won)", "duel/red_win_rate", true},
        {"Blue win rate (contested Blue turns won)", "duel/blue_win_rate", true},
        {"Tasks admitted to the checkpoint's bank", "duel/admitted_tasks", false},
        {"Wall seconds per match", "duel/match_s", false}}}};
  return sections;
}

ChartSeries series_of(const RunMetrics& r, const std::string& key) {
  ChartSeries s{r.name, {}, {}};
  for (const nlohmann::json& m : r.steps)
    if (m.contains(key) && m[key].is_number()) s.points.emplace_back(m["step"].get<double>(), m[key].get<double>());
  return s;
}

// eval/<set>/success keys logged by any run, sorted.
std::vector<std::string> eval_keys(const std::vector<RunMetrics>& runs) {
  std::set<std::string> keys;
  for (const RunMetrics& r : runs)
    for (const nlohmann::json& m : r.steps)
      for (const auto& [k, v] : m.items())
        if (starts_with(k, "eval/") && ends_with(k, "/success")) keys.insert(k);
  // Each set's overall success (eval/<set>/success, three path parts) first, then its skills.
  const auto parts = [](const std::string& k) { return std::count(k.begin(), k.end(), '/'); };
  std::vector<std::string> out(keys.begin(), keys.end());
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    const std::string set_a = a.substr(5, a.find('/', 5) - 5), set_b = b.substr(5, b.find('/', 5) - 5);
    return set_a != set_b ? set_a < set_b : parts(a) < parts(b);
  });
  return out;
}

double summary_number(const nlohmann::json& s, const char* group, const char* key) {
  if (!s.is_object() || !s.contains(group) || !s[group].contains(key) || !s[group][key].is_number()) return NAN;
  return s[group][key].get<double>();
}

// "0.146 [0.072, 0.272] (48 plays)" from a success share and a play count; "–" without plays.
std::string rate_with_interval(double share, double plays) {
  if (!(plays > 0) || !std::isfinite(share)) return "\xE2\x80\x93";
  const auto [lo, hi] = wilson_interval(std::round(share * plays), plays);
  return format_number("%.3f", share) + " [" + format_number("%.3f", lo) + ", " + format_number("%.3f", hi) + "] (" + format_number("%.0f", plays) + " plays)";
}

struct Row {
  std::string name, steps, wall, designer, rejected, hint, nohint;
};

std::vector<Row> rows_of(const std::vector<RunMetrics>& runs) {
  std::vector<Row> rows;
  for (const RunMetrics& r : runs) {
    const nlohmann::json& s = r.summary;
    Row row;
    row.name = r.name;
    int64_t steps = 0;  // the last step number: a step-0 line (the eval before self-play) is no step
    for (const nlohmann::json& m : r.steps) steps = std::max(steps, m.value("step", int64_t{0}));
    row.steps = std::to_string(steps);
    const double wall = s.is_object() ? s.value("wall_seconds", NAN) : NAN;
    row.wall = std::isfinite(wall) ? format_number("%.0f s", wall) : "\xE2\x80\x93";
    const double attempts = summary_number(s, "selfplay", "attempts"), admitted = summary_number(s, "selfplay", "admitted");
    row.designer = std::isfinite(attempts) ? format_number("%.0f", admitted) + " of " + format_number("%.0f", attempts) + " admitted" : "\xE2\x80\x93";
    if (s.is_object() && s.contains("selfplay") && s["selfplay"].contains("rejected_by_reason"))
      for (const auto& [reason, n] : s["selfplay"]["rejected_by_reason"].items())
        row.rejected += (row.rejected.empty() ? "" : ", ") + reason + " " + n.dump();
    if (row.rejected.empty()) row.rejected = std::isfinite(attempts) ? "none" : "\xE2\x80\x93";
    row.hint = rate_with_interval(summary_number(s, "selfplay", "hint_success"), summary_number(s, "selfplay", "hint_plays"));
    row.nohint =
        rate_with_interval(summary_number(s, "selfplay", "nohint_success"), summary_number(s, "selfplay", "nohint_plays"));
    rows.push_back(row);
  }
  return rows;
}

const char* kHeader[] = {"Run", "Steps", "Wall time", "Designer", "Rejected (reason count)",
                         "Success with hint, 95% CI", "Success without hint, 95% CI"};

// The step records of a JSONL file (metrics.jsonl, duel/metrics.jsonl): one JSON object with a numeric
// "step" per non-empty line. Throws naming the file and line otherwise.
std::vector<nlohmann::json> read_step_lines(std::ifstream& in, const std::string& path) {
  std::vector<nlohmann::json> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number())
      throw Error(path + ":" + std::to_string(line_no) + ": expected a JSON object with a numeric \"step\"");
    out.push_back(std::move(j));
  }
  return out;
}

// Folds duel/metrics.jsonl (one line per scored checkpoint, written by `spade duel watch`) into the
// step records: its keys join the record of the same step, or a record of their own when the run has
// none (a checkpoint scored after the last logged step was cut). A missing file adds nothing.
void merge_duel_metrics(const std::string& run_dir, std::vector<nlohmann::json>* steps) {
  const fs::path duel = fs::path(run_dir) / "duel" / "metrics.jsonl";
  std::ifstream in(duel);
  if (!in) return;
  for (nlohmann::json& j : read_step_lines(in, duel.string())) {
    auto same = std::find_if(steps->begin(), steps->end(), [&](const nlohmann::json& s) { return s["step"] == j["step"]; });
    if (same == steps->end()) {
      steps->push_back(std::move(j));
      continue;
    }
    for (auto it = j.begin(); it != j.end(); ++it) (*same)[it.key()] = it.value();
  }
  std::stable_sort(steps->begin(), steps->end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["step"].get<double>() < b["step"].get<double>();
  });
}

}  // namespace

RunMetrics load_run_metrics(const std::string& run_dir) {
  RunMetrics r;
  r.dir = run_dir;
  r.name = fs::path(run_dir).filename().string();
  if (r.name.empty()) r.name = fs::path(run_dir).parent_path().filename().string();
  const fs::path metrics = fs::path(run_dir) / "metrics.jsonl";
  std::ifstream in(metrics);
  if (!in) throw Error(metrics.string() + ": cannot open (is " + run_dir + " a run directory of `spade train`?)");
  r.steps = read_step_lines(in, metrics.string());
  merge_duel_metrics(run_dir, &r.steps);
  const fs::path summary = fs::path(run_dir) / "summary.json";
  if (fs::exists(summary)) {
    std::ifstream s(summary);
    r.summary = nlohmann::json::parse(s, nullptr, false);
    if (r.summary.is_discarded()) throw Error(summary.string() + ": not valid JSON");
  }
  const fs::path config = fs::path(run_dir) / "config.yaml";
  if (fs::exists(config)) {
    try {
      YAML::Node c = YAML::LoadFile(config.string());
      if (c["run"] && c["run"]["name"] && fs::path(run_dir).filename() != c["run"]["name"].as<std::string>())
        r.name = fs::path(run_dir).filename().string() + " (" + c["run"]["name"].as<std::string>() + ")";
    } catch (const YAML::Exception& e) {
      throw Error(config.string() + ": " + e.what());
    }
  }
  return r;
}

std::string runs_report_html(const std::vector<RunMetrics>& runs) {
  if (runs.empty()) throw Error("report: no run given");
  std::string b = "<h1>Training runs</h1>\n<p class=\"meta\">" + std::to_string(runs.size()) + " run" +
                  (runs.size() == 1 ? "" : "s") + ": ";
  for (size_t i = 0; i < runs.size(); ++i) b += (i ? ", " : "") + html_escape(runs[i].name) + " (" + html_escape(runs[i].dir) + ")";
  b += ". Success rates carry 95% Wilson score intervals over the plays they count.</p>\n";
  b += "<table class=\"runs\">\n<thead><tr>";
  for (const char* h : kHeader) b += std::string("<th>") + h + "</th>";
  b += "</tr></thead>\n<tbody>\n";
  for (const Row& r : rows_of(runs))
    b += "<tr class=\"run\"><td class=\"name\">" + html_escape(r.name) + "</td><td>" + r.steps + "</td><td>" + r.wall +
         "</td><td>" + r.designer + "</td><td>" + html_escape(r.rejected) + "</td><td>" + r.hint + "</td><td>" + r.nohint +
         "</td></tr>\n";
  b += "</tbody>\n</table>\n";
  const std::vector<std::string> evals = eval_keys(runs);
  b += "<h2>Held-out evaluation</h2>\n";
  if (evals.empty()) b += "<p class=\"empty\">No run logged eval/&lt;set&gt;/success.</p>\n";
  for (const std::string& key : evals) {
    std::vector<ChartSeries> series;
    const std::string stem = key.substr(0, key.size() - 8);
    for (const RunMetrics& r : runs) {
      ChartSeries s = series_of(r, key);
      for (const nlohmann::json& m : r.steps)
        if (m.contains(stem + "/success_low") && m.contains(stem + "/success_high"))
          s.band.push_back({m["step"].get<double>(), {m[stem + "/success_low"].get<double>(), m[stem + "/success_high"].get<double>()}});
      series.push_back(std::move(s));
    }
    b += "<h3>" + html_escape(key) + "</h3>\n" + svg_line_chart("step", key, series, std::make_pair(0.0, 1.0));
  }
  b += "<h2>Duel rating of checkpoints</h2>\n";
  std::vector<ChartSeries> duel;
  bool any_duel = false;
  for (const RunMetrics& r : runs) {
    ChartSeries s = series_of(r, "duel/bt");
    for (const nlohmann::json& m : r.steps)
      if (m.contains("duel/bt_ci_low") && m.contains("duel/bt_ci_high") && m["duel/bt_ci_low"].is_number() &&
          m["duel/bt_ci_high"].is_number())
        s.band.push_back({m["step"].get<double>(), {m["duel/bt_ci_low"].get<double>(), m["duel/bt_ci_high"].get<double>()}});
    any_duel = any_duel || !s.points.empty();
    duel.push_back(std::move(s));
  }
  if (!any_duel)
    b += "<p class=\"empty\">No run logged duel/bt (set duel.every, or run `spade duel watch RUN_DIR`).</p>\n";
  else
    b += "<figure class=\"chart\" data-metric=\"duel/bt\"><figcaption>Bradley-Terry log-strength of each scored "
         "checkpoint on the run's leaderboard, 95% bootstrap interval (duel/bt)</figcaption>\n" +
         svg_line_chart("step", "duel/bt", duel, std::nullopt) + "</figure>\n";
  std::vector<std::string> missing;
  b += "<h2>Training curves</h2>\n";
  for (const ChartSection& section : chart_sections()) {
    b += "<h3>" + html_escape(section.heading) + "</h3>\n<div class=\"charts\">\n";
    for (const ChartSpec& c : section.charts) {
      std::vector<ChartSeries> series;
      bool any = false;
      for (const RunMetrics& r : runs) {
        series.push_back(series_of(r, c.key));
        any = any || !series.back().points.empty();
      }
      if (!any) {
        missing.push_back(c.key);
        continue;
      }
      b += "<figure class=\"chart\" data-metric=\"" + html_escape(c.key) + "\"><figcaption>" + html_escape(c.title) +
           " (" + html_escape(c.key) + ")</figcaption>\n" +
           svg_line_chart("step", c.key, series,
                          c.unit_range ? std::optional<std::pair<double, double>>(std::make_pair(0.0, 1.0)) : std::nullopt) +
           "</figure>\n";
    }
    b += "</div>\n";
  }
  if (!missing.empty()) {
    b += "<p class=\"empty\">Not logged by these runs: ";
    for (size_t i = 0; i < missing.size(); ++i) b += (i ? ", " : "") + html_escape(missing[i]);
    b += ".</p>\n";
  }
  return html_page("Training runs", R"(td.name, th:first-child { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; } figure { margin: 0; } figcaption { font-weight: bold; }
)", b);
}

std::string runs_report_markdown(const std::vector<RunMetrics>& runs) {
  if (runs.empty()) throw Error("report: no run given");
  std::string out = "|";
  std::string rule = "|";
  for (const char* h : kHeader) out += std::string(" ") + h + " |", rule += "---|";
  out += "\n" + rule + "\n";
  auto md = [](std::string s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  for (const Row& r : rows_of(runs))
    out += "| " + md(r.name) + " | " + r.steps + " | " + r.wall + " | " + r.designer + " | " + md(r.rejected) + " | " + r.hint +
           " | " + r.nohint + " |\n";
  return out + "\nSuccess rates: share of plays with reward > 0 at regeneration steps, with 95% Wilson score intervals.\n";
}

}  // namespace spade::trainer
