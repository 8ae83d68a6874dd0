// `spade duel ...`: the SWE-Duel commands. This file creates the `duel` subcommand and its `rate` and
// `report` subcommands, plus `spade bench duel` (the ratings benchmark recorded in bench/RESULTS.md).
//
//   spade duel rate --matches FILE.json [--bootstrap N] [--seed S] [--out rankings.json [--overwrite]]
//       Rates any list of match records (evaldual/match_record.h: an array, or an object with a
//       "matches" array such as an exported rankings JSON) and writes the rankings JSON
//       (evaldual/rankings.h). Without --out the JSON goes to stdout; with it, a table does.
//   spade duel report --rankings rankings.json [--format md|latex|html] [--out FILE [--overwrite]]
//       The leaderboard as a Markdown or LaTeX table (evaldual/report.h) or a web page
//       (evaldual/leaderboard_page.h).
//   spade bench duel [--participants 11] [--matches 50] [--turns 30] [--bootstrap 1000] [--repeats 5]
//       Times one full rating (BT + 1000-draw match bootstrap + Elo + contested-turn BT with its own
//       bootstrap + per-role Elo) of a synthetic tournament: a round robin of N-1 participants plus a
//       late entrant scheduled by active sampling, as in the paper's 45 + 5 matches. Prints JSON.
//
// Adding more `duel` subcommands from another file: add_duel_commands() returns the `duel` App and
// may be called in any order with other registrars; a new file does
//     CLI::App* duel = spade::apps::add_duel_commands(app);  // finds or creates "duel" (+ "rate" once)
//     CLI::App* match = duel->add_subcommand("match", "...");
// or, to stay independent of this file, the same find-or-create: app.get_subcommand("duel") inside a
// try, catching CLI::OptionNotFound and calling app.add_subcommand("duel", ...) there.
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <thread>

#include "apps/commands.h"
#include "apps/machine_info.h"
#include "apps/error_text.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/output_path.h"
#include "evaldual/input_fields.h"
#include "evaldual/rankings.h"
#include "evaldual/leaderboard_page.h"
#include "evaldual/report.h"
#include "evaldual/schedule.h"

using nlohmann::json;

namespace spade::apps {
namespace {

CLI::App* find_or_add(CLI::App& parent, const std::string& name, const std::string& description) {
  try {
    return parent.get_subcommand(name);
  } catch (const CLI::OptionNotFound&) {
    CLI::App* sub = parent.add_subcommand(name, description);
    sub->require_subcommand(1);
    return sub;
  }
}

void add_rate_command(CLI::App* duel) {
  struct Args {
    std::string matches, out, tournament_id, format;
    int bootstrap = 1000;
    uint64_t seed = 42;
    bool overwrite = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* rate = duel->add_subcommand("rate", "rate match records: Bradley-Terry + bootstrap CIs, Elo, rankings JSON");
  rate->add_option("--matches", args->matches, "match records JSON: [ {match_id, model_a, model_b, outcome}, ... ]")
      ->required();
  rate->add_option("--bootstrap", args->bootstrap, "bootstrap resamples of matches (0 = none)")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()));
  rate->add_option("--seed", args->seed, "bootstrap seed");
  rate->add_option("--out", args->out,
                   "write the rankings JSON here (atomically; a new or empty file in an existing directory) and print "
                   "a table");
  rate->add_flag("--overwrite", args->overwrite, "replace a non-empty --out (never the --matches file)");
  rate->add_option("--tournament-id", args->tournament_id, "tournament_id (default: from the input, else its file name)");
  rate->add_option("--format", args->format, "format field (default: from the input, else \"imported\")");
  rate->callback([args] {
    set_action([args] {
      const Args& a = *args;
      OutputRule rule;
      rule.what = "duel rate --out";
      rule.overwrite = a.overwrite;
      rule.inputs = {a.matches};
      if (!a.out.empty()) check_output(a.out, OutputKind::file, rule);  // before the bootstrap runs
      const json doc = evaldual::read_json_document(a.matches);
      std::vector<evaldual::MatchRecord> ms = evaldual::matches_from_json(doc, a.matches);
      evaldual::RankingOptions o;
      o.bootstrap_samples = a.bootstrap;
      o.seed = a.seed;
      o.tournament_id = std::filesystem::path(a.matches).stem().string();
      o.format = "imported";
      if (doc.is_object()) {
        if (doc.contains("tournament_id") && doc["tournament_id"].is_string()) o.tournament_id = doc["tournament_id"];
        if (doc.contains("format") && doc["format"].is_string()) o.format = doc["format"];
        if (doc.contains("repos")) o.repos = doc["repos"];
        if (doc.contains("targets_per_repo") && doc["targets_per_repo"].is_number_integer()) {
          o.targets_per_repo = doc["targets_per_repo"].get<int>();
        }
      }
      if (!a.tournament_id.empty()) o.tournament_id = a.tournament_id;
      if (!a.format.empty()) o.format = a.format;
      evaldual::Rankings r = evaldual::compute_rankings(ms, o);
      std::string text = evaldual::rankings_to_json(r).dump(2) + "\n";
      if (a.out.empty()) {
        std::fputs(text.c_str(), stdout);
      } else {
        write_output_file(a.out, text, rule);
        std::fputs(evaldual::rankings_table(r).c_str(), stdout);
        std::printf("%zu matches, %zu participants, %d bootstrap draws (seed %llu) -> %s\n", ms.size(),
                    r.rankings.size(), r.bootstrap_samples, static_cast<unsigned long long>(r.seed), a.out.c_str());
      }
      if (a.out.empty()) {  // the table (which carries them) went nowhere: the notes go to stderr
        for (const std::string& n : evaldual::rankings_notes(r)) std::fprintf(stderr, "note: %s\n", n.c_str());
      }
      return 0;
    });
  });
}

// ------------------------------------------------------------------ spade bench duel

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

// One draw of a synthetic tournament: true log-strengths spread evenly over [-0.5, 0.5], the late
// entrant (the last id) in the middle of the field (a wider field lets the strongest win every match:
// over [-1.5, 1.5] with the late entrant strongest, as this generator had it, about 98% of draws had
// no finite match-level MLE; over [-0.5, 0.5] about 24%, in a simulation of this generator); each match has `turns` turns alternating Red/Blue; a turn's
// Blue repairs with probability sigma(1.5 + beta_blue - beta_red) (Blue wins ~88% of turns at equal
// strength, the paper's overall rate); 5% of turns are missing-task auto-wins. A round robin of n-1
// participants, then the last enters by active sampling until `matches` matches are played (or its
// budget is spent).
std::vector<evaldual::MatchRecord> synthetic_draw(int n, int matches, int turns, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::string> ids;
  std::vector<double> beta;
  for (int i = 0; i < n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%02d#mini-swe-agent", i);
    ids.push_back(buf);
    beta.push_back(n > 1 ? -0.5 + 1.0 * i / (n - 1) : 0.0);
  }
  std::swap(beta.back(), beta[n / 2]);  // the late entrant is mid-field, not the strongest
  std::vector<evaldual::MatchRecord> out;
  auto play = [&](const std::string& id, int a, int b) {
    evaldual::MatchRecord m;
    m.match_id = id;
    m.model_a = ids[a];
    m.model_b = ids[b];
    char ts[32];
    std::snprintf(ts, sizeof ts, "2026-05-01T00:%02d:%02dZ", static_cast<int>(out.size() / 60),
                  static_cast<int>(out.size() % 60));
    m.timestamp = ts;
    double qa = 0, qb = 0;
    for (int t = 0; t < turns; ++t) {
      int red = t % 2 == 0 ? a : b, blue = t % 2 == 0 ? b : a;
      evaldual::TurnRecord tr;
      tr.red = ids[red];
      tr.blue = ids[blue];
      tr.repo = "repo-" + std::to_string(t / 2);
      tr.auto_win = u(rng) < 0.05;
      double p_blue = 1.0 / (1.0 + std::exp(-(1.5 + beta[blue] - beta[red])));
      tr.blue_composite = tr.auto_win || u(rng) < p_blue ? 1.0 : 0.0;
      bool a_point = (tr.blue_wins() ? blue : red) == a;
      (a_point ? qa : qb) += 1;
      m.turns.push_back(tr);
    }
    m.score_a = qa;
    m.score_b = qb;
    m.outcome = qa > qb ? evaldual::Outcome::kAWins : qb > qa ? evaldual::Outcome::kBWins : evaldual::Outcome::kDraw;
    out.push_back(m);
  };
  std::vector<std::string> incumbents(ids.begin(), ids.end() - 1);
  std::map<std::string, int> index;
  for (int i = 0; i < n; ++i) index[ids[i]] = i;
  evaldual::TournamentState rr = evaldual::make_round_robin_state("bench", incumbents);
  for (const evaldual::ScheduledMatch& s : rr.schedule) {
    if (static_cast<int>(out.size()) >= matches) break;
    play(s.match_id, index[s.a], index[s.b]);
  }
  evaldual::TournamentState late = evaldual::make_late_entrant_state("bench", ids.back(), incumbents);
  evaldual::RankingOptions ro;
  ro.bootstrap_samples = 100;
  ro.exported_at = "bench";
  while (static_cast<int>(out.size()) < matches) {
    std::map<std::string, double> unc = evaldual::rating_uncertainty(evaldual::compute_rankings(out, ro));
    std::optional<evaldual::ScheduledMatch> next = evaldual::next_late_entrant_match(late, out, unc);
    if (!next) break;
    play(next->match_id, index[next->a], index[next->b]);
    evaldual::mark_done(late, next->match_id);
  }
  return out;
}

// A synthetic tournament whose match-level Bradley-Terry MLE exists (every rating identified: no group
// that never lost or never won against the rest, bradley_terry.h), so the benchmark times a well-posed
// fit: draws with seeds seed, seed+1, ... until one is (at most 100). Returns it and the seed used.
std::pair<std::vector<evaldual::MatchRecord>, uint64_t> synthetic_tournament(int n, int matches, int turns, uint64_t seed) {
  evaldual::RankingOptions ro;
  ro.bootstrap_samples = 0;
  ro.exported_at = "bench";
  for (uint64_t s = seed; s < seed + 100; ++s) {
    std::vector<evaldual::MatchRecord> ms = synthetic_draw(n, matches, turns, s);
    bool identified = true;
    for (const evaldual::RankingEntry& e : evaldual::compute_rankings(ms, ro).rankings)
      identified = identified && e.bradley_terry.status == evaldual::BtStatus::identified;
    if (identified) return {ms, s};
  }
  throw Error("bench duel: no synthetic tournament with every rating identified among seeds " + std::to_string(seed) +
              ".." + std::to_string(seed + 99) + " (more matches or participants make one likelier)");
}

void add_bench_duel_command(CLI::App& app) {
  CLI::App* bench = find_or_add(app, "bench", "benchmarks");
  struct Args {
    int participants = 11, matches = 50, turns = 30, bootstrap = 1000, repeats = 5;
    uint64_t seed = 1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = bench->add_subcommand("duel", "time one full SWE-Duel rating (BT, 1000-draw bootstrap, Elo, contested BT)");
  cmd->add_option("--participants", args->participants, "participants (11: 10 round robin + 1 late entrant)");
  cmd->add_option("--matches", args->matches, "matches (50: 45 round robin + 5 active-sampled)");
  cmd->add_option("--turns", args->turns, "turns per match (30: 15 repos x 2)");
  cmd->add_option("--bootstrap", args->bootstrap, "bootstrap draws")->check(CLI::Range(0, std::numeric_limits<int>::max()));
  cmd->add_option("--repeats", args->repeats, "timed repeats (the median is reported)");
  cmd->add_option("--seed", args->seed, "seed of the synthetic outcomes (the next seeds are tried until every "
                                        "rating is identified, and the one used is printed)");
  cmd->callback([args] {
    auto where = std::make_shared<std::string>();  // the workload, for an allocation failure
    set_action(reporting_allocation_failures("bench duel", where, [args, where] {
      const Args& a = *args;
      *where = std::to_string(a.participants) + " participants, " + std::to_string(a.matches) + " matches of " +
               std::to_string(a.turns) + " turns, " + std::to_string(a.bootstrap) + " bootstrap draws";
      if (a.participants < 3 || a.repeats < 1) throw Error("bench duel: needs --participants >= 3 and --repeats >= 1");
      const auto drawn = synthetic_tournament(a.participants, a.matches, a.turns, a.seed);
      const std::vector<evaldual::MatchRecord>& ms = drawn.first;
      const uint64_t seed_used = drawn.second;
      auto unidentified = [](const evaldual::Rankings& r) {  // per-participant draws without a finite MLE, summed
        int k = 0;
        for (const auto& e : r.rankings) k += e.bradley_terry.unidentified_draws;
        return k;
      };
      auto time_one = [&](bool with_turns) {
        std::vector<evaldual::MatchRecord> input = ms;
        if (!with_turns) {
          for (auto& m : input) m.turns.clear();
        }
        evaldual::RankingOptions o;
        o.bootstrap_samples = a.bootstrap;
        o.exported_at = "bench";
        std::vector<double> secs, cpu;
        evaldual::Rankings r;
        for (int k = 0; k < a.repeats; ++k) {
          auto t0 = std::chrono::steady_clock::now();
          std::clock_t c0 = std::clock();
          r = evaldual::compute_rankings(input, o);
          cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);  // one thread: CPU time
          secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(secs.begin(), secs.end());
        std::sort(cpu.begin(), cpu.end());
        return std::make_pair(json{{"wall_median_s", secs[secs.size() / 2]}, {"wall_min_s", secs.front()},
                                   {"wall_max_s", secs.back()}, {"cpu_median_s", cpu[cpu.size() / 2]},
                                   {"cpu_min_s", cpu.front()}, {"unconverged_fits", r.bootstrap_unconverged},
                                   {"unidentified_draws", unidentified(r)}},
                              r);
      };
      auto [matches_only, r0] = time_one(false);
      auto [full, r1] = time_one(true);
      size_t turns = 0;
      for (const auto& m : ms) turns += m.turns.size();
      json out = {{"benchmark", "duel_rate"},
                  {"participants", a.participants},
                  {"matches", ms.size()},
                  {"turns", turns},
                  {"bootstrap", a.bootstrap},
                  {"repeats", a.repeats},
                  {"seed", seed_used},
                  {"matches_only", matches_only},
                  {"with_contested_turns", full},
                  {"target_s", 1.0},
                  {"load_average_1m", load_average()},
                  {"machine", {{"cpus", std::thread::hardware_concurrency()}, {"cpu", cpu_model()}}}};
      std::printf("%s\n", out.dump(2).c_str());
      std::fputs(evaldual::rankings_table(r1).c_str(), stderr);
      return 0;
    }));
  });
}

void add_report_command(CLI::App* duel) {
  struct Args {
    std::string rankings, out, format = "md";
    bool overwrite = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* report = duel->add_subcommand(
      "report", "render a rankings JSON as a Markdown or LaTeX leaderboard table, or a self-contained web page");
  report->add_option("--rankings", args->rankings, "rankings JSON written by `spade duel rate`")->required();
  report->add_option("--format", args->format, "md, latex, or html (one static page with charts; opens offline)")
      ->check(CLI::IsMember({"md", "latex", "html"}));
  report->add_option("--out", args->out,
                     "write the report here (atomically; a new or empty file in an existing directory); default stdout");
  report->add_flag("--overwrite", args->overwrite, "replace a non-empty --out (never the --rankings file)");
  report->callback([args] {
    set_action([args] {
      const Args& a = *args;
      OutputRule rule;
      rule.what = "duel report --out";
      rule.overwrite = a.overwrite;
      rule.inputs = {a.rankings};
      if (!a.out.empty()) check_output(a.out, OutputKind::file, rule);
      const json doc = evaldual::read_json_document(a.rankings);
      evaldual::Rankings r = evaldual::rankings_from_json(doc, a.rankings);
      const std::string text = a.format == "latex"  ? evaldual::rankings_latex(r)
                               : a.format == "html" ? evaldual::leaderboard_html(r)
                                                    : evaldual::rankings_markdown(r);
      if (a.out.empty()) std::fputs(text.c_str(), stdout);
      else write_output_file(a.out, text, rule);
      return 0;
    });
  });
}

}  // namespace

CLI::App* add_duel_commands(CLI::App& app) {
  CLI::App* duel = find_or_add(app, "duel", "SWE-Duel: matches between participants, tournaments, ratings");
  bool have_rate = false;
  for (const CLI::App* sub : duel->get_subcommands({})) have_rate = have_rate || sub->get_name() == "rate";
  if (!have_rate) {
    add_rate_command(duel);
    add_report_command(duel);
    add_bench_duel_command(app);
  }
  return duel;
}

}  // namespace spade::apps
