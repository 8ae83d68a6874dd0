#include "evaldual/rankings.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include "common/error.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json ci_json(const std::optional<std::pair<double, double>>& ci) {
  if (!ci) return nullptr;
  return json::array({ci->first, ci->second});
}

std::optional<std::pair<double, double>> ci_from(const json& j) {
  if (j.is_null()) return std::nullopt;
  return std::make_pair(j.at(0).get<double>(), j.at(1).get<double>());
}

json rated_json(const RatedValue& v, const char* value_key) {
  return {{value_key, v.value}, {"rank", v.rank}, {"ci", ci_json(v.ci)}};
}

RatedValue rated_from(const json& j, const char* value_key) {
  RatedValue v;
  v.value = j.at(value_key).get<double>();
  v.rank = j.at("rank").get<int>();
  v.ci = ci_from(j.at("ci"));
  return v;
}

template <class T>
json opt_json(const std::optional<T>& v) {
  if (!v) return nullptr;
  return *v;
}

}  // namespace

Rankings compute_rankings(const std::vector<MatchRecord>& matches, const RankingOptions& options) {
  Rankings out;
  out.tournament_id = options.tournament_id;
  out.format = options.format;
  out.exported_at = options.exported_at.empty() ? utc_now() : options.exported_at;
  out.repos = options.repos;
  out.targets_per_repo = options.targets_per_repo;
  out.bootstrap_samples = std::max(0, options.bootstrap_samples);
  out.seed = options.seed;
  out.matches = matches;

  // Participants, sorted by id.
  std::set<std::string> id_set;
  for (const MatchRecord& m : matches) {
    id_set.insert(m.model_a);
    id_set.insert(m.model_b);
  }
  for (const std::string& p : options.participants) id_set.insert(canonical_participant_id(p));
  std::vector<std::string> ids(id_set.begin(), id_set.end());
  std::map<std::string, int> index;
  for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = static_cast<int>(i);
  const int n = static_cast<int>(ids.size());

  // Match comparisons in match-time order; W/D/L; head to head.
  std::vector<Comparison> comps;
  std::vector<RankingEntry> e(n);
  std::map<std::pair<std::string, std::string>, HeadToHead> h2h;
  for (size_t k : match_time_order(matches)) {
    const MatchRecord& m = matches[k];
    int a = index[m.model_a], b = index[m.model_b];
    double s = outcome_score_a(m.outcome);
    comps.push_back({a, b, s});
    e[a].matches_played++;
    e[b].matches_played++;
    if (m.outcome == Outcome::kDraw) {
      e[a].draws++;
      e[b].draws++;
    } else {
      RankingEntry& w = m.outcome == Outcome::kAWins ? e[a] : e[b];
      RankingEntry& l = m.outcome == Outcome::kAWins ? e[b] : e[a];
      w.wins++;
      l.losses++;
    }
    bool swap = m.model_b < m.model_a;
    HeadToHead& h = h2h[swap ? std::make_pair(m.model_b, m.model_a) : std::make_pair(m.model_a, m.model_b)];
    h.model_a = swap ? m.model_b : m.model_a;
    h.model_b = swap ? m.model_a : m.model_b;
    h.matches++;
    if (m.outcome == Outcome::kDraw) h.draws++;
    else if ((m.outcome == Outcome::kAWins) != swap) h.a_wins++;
    else h.b_wins++;
  }

  // Bradley-Terry and Elo on all matches.
  PairwiseCounts counts(n);
  for (const Comparison& c : comps) counts.add(c.a, c.b, c.score_a);
  BtFit fit = fit_bradley_terry(counts, options.bt);
  std::vector<int> bt_rank = rank_by_score(fit.scores, ids);
  std::vector<double> elo = elo_ratings(n, comps, options.elo);
  std::vector<int> elo_rank = rank_by_score(elo, ids);
  std::vector<TrueSkillRating> ts = trueskill_ratings(n, comps, options.trueskill);
  std::vector<double> ts_score(n);
  for (int i = 0; i < n; ++i) ts_score[i] = ts[i].conservative();
  std::vector<int> ts_rank = rank_by_score(ts_score, ids);

  BootstrapOptions bo;
  bo.samples = out.bootstrap_samples;
  bo.seed = options.seed;
  bo.bt = options.bt;
  bo.elo = true;
  bo.elo_options = options.elo;
  BootstrapResult boot = bootstrap_ratings(ids, comps, bo);
  out.bootstrap_unconverged = boot.unconverged;

  // Turns: contested-turn BT and per-role Elo.
  std::vector<Comparison> contested, all_turns;
  for (size_t k : match_time_order(matches)) {
    for (const TurnRecord& t : matches[k].turns) {
      Comparison c{index[t.red], index[t.blue], t.blue_wins() ? 0.0 : 1.0};
      all_turns.push_back(c);
      if (t.contested()) contested.push_back(c);
    }
  }
  const bool have_turns = !all_turns.empty();
  BtFit cfit;
  std::vector<int> c_rank;
  BootstrapResult cboot;
  RoleElo roles;
  if (have_turns) {
    PairwiseCounts cc(n);
    for (const Comparison& c : contested) cc.add(c.a, c.b, c.score_a);
    cfit = fit_bradley_terry(cc, options.bt);
    c_rank = rank_by_score(cfit.scores, ids);
    BootstrapOptions cbo = bo;
    cbo.seed = options.seed + 1;
    cbo.elo = false;
    cboot = bootstrap_ratings(ids, contested, cbo);
    out.bootstrap_unconverged += cboot.unconverged;
    roles = role_elo(n, all_turns, options.elo);
  }

  for (int i = 0; i < n; ++i) {
    RankingEntry& r = e[i];
    r.participant = Participant::parse(ids[i]);
    r.points = r.wins + 0.5 * r.draws;
    r.rank = bt_rank[i];
    r.bradley_terry = {fit.scores[i], bt_rank[i], std::nullopt};
    r.elo = {elo[i], elo_rank[i], std::nullopt};
    r.trueskill = TrueSkillValue{ts[i].mu, ts[i].sigma, ts_score[i], ts_rank[i]};
    if (boot.samples > 0) {
      r.bradley_terry.ci = std::make_pair(boot.score_low[i], boot.score_high[i]);
      r.elo.ci = std::make_pair(boot.elo_low[i], boot.elo_high[i]);
      r.bootstrap_median_rank = boot.median_rank[i];
      r.rank_interval = std::make_pair(boot.rank_low[i], boot.rank_high[i]);
      r.rank_histogram = boot.rank_histogram[i];
    }
    if (have_turns) {
      RatedValue c{cfit.scores[i], c_rank[i], std::nullopt};
      if (cboot.samples > 0) c.ci = std::make_pair(cboot.score_low[i], cboot.score_high[i]);
      r.contested_bt = c;
      r.red_elo = roles.red[i];
      r.blue_elo = roles.blue[i];
    }
  }
  std::sort(e.begin(), e.end(), [](const RankingEntry& x, const RankingEntry& y) { return x.rank < y.rank; });
  out.rankings = std::move(e);
  for (auto& kv : h2h) out.head_to_head.push_back(kv.second);
  return out;
}

json rankings_to_json(const Rankings& r) {
  json j = {{"tournament_id", r.tournament_id}, {"format", r.format}, {"exported_at", r.exported_at}};
  if (!r.repos.is_null()) j["repos"] = r.repos;
  if (r.targets_per_repo) j["targets_per_repo"] = *r.targets_per_repo;
  j["bootstrap"] = {{"samples", r.bootstrap_samples}, {"seed", r.seed}, {"unconverged", r.bootstrap_unconverged}};
  json rows = json::array();
  for (const RankingEntry& e : r.rankings) {
    json row = {{"rank", e.rank},
                {"participant", e.participant.id()},
                {"model", e.participant.model},
                {"harness", e.participant.harness},
                {"effort", e.participant.effort},
                {"provider", e.participant.provider},
                {"points", e.points},
                {"matches_played", e.matches_played},
                {"wins", e.wins},
                {"draws", e.draws},
                {"losses", e.losses},
                {"bradley_terry", rated_json(e.bradley_terry, "score")},
                {"elo", rated_json(e.elo, "rating")},
                {"trueskill", e.trueskill ? json{{"mu", e.trueskill->mu},
                                                 {"sigma", e.trueskill->sigma},
                                                 {"score", e.trueskill->score},
                                                 {"rank", e.trueskill->rank}}
                                          : json(nullptr)},
                {"red_elo", opt_json(e.red_elo)},
                {"blue_elo", opt_json(e.blue_elo)},
                {"contested_bt", e.contested_bt ? rated_json(*e.contested_bt, "score") : json(nullptr)},
                {"bootstrap_median_rank", opt_json(e.bootstrap_median_rank)},
                {"rank_interval", e.rank_interval ? json::array({e.rank_interval->first, e.rank_interval->second})
                                                  : json(nullptr)},
                {"rank_histogram", e.rank_histogram}};
    rows.push_back(std::move(row));
  }
  j["rankings"] = std::move(rows);
  json h = json::array();
  for (const HeadToHead& x : r.head_to_head) {
    h.push_back({{"model_a", x.model_a}, {"model_b", x.model_b}, {"a_wins", x.a_wins},
                 {"b_wins", x.b_wins}, {"draws", x.draws}, {"matches", x.matches}});
  }
  j["head_to_head"] = std::move(h);
  j["matches"] = matches_to_json(r.matches);
  return j;
}

Rankings rankings_from_json(const json& j, const std::string& source) {
  Rankings r;
  std::string where = source;
  try {
    r.tournament_id = j.at("tournament_id").get<std::string>();
    r.format = j.at("format").get<std::string>();
    r.exported_at = j.at("exported_at").get<std::string>();
    if (j.contains("repos")) r.repos = j["repos"];
    if (j.contains("targets_per_repo")) r.targets_per_repo = j["targets_per_repo"].get<int>();
    if (j.contains("bootstrap")) {
      const json& b = j["bootstrap"];
      r.bootstrap_samples = b.at("samples").get<int>();
      r.seed = b.at("seed").get<uint64_t>();
      r.bootstrap_unconverged = b.at("unconverged").get<int>();
    }
    const json& rows = j.at("rankings");
    for (size_t i = 0; i < rows.size(); ++i) {
      where = source + ": rankings[" + std::to_string(i) + "]";
      const json& row = rows[i];
      RankingEntry e;
      e.rank = row.at("rank").get<int>();
      e.participant.model = row.at("model").get<std::string>();
      e.participant.harness = row.value("harness", "");
      e.participant.effort = row.value("effort", "");
      e.participant.provider = row.value("provider", "");
      e.points = row.at("points").get<double>();
      e.matches_played = row.at("matches_played").get<int>();
      e.wins = row.value("wins", 0);
      e.draws = row.value("draws", 0);
      e.losses = row.value("losses", 0);
      e.bradley_terry = rated_from(row.at("bradley_terry"), "score");
      e.elo = rated_from(row.at("elo"), "rating");
      if (row.contains("trueskill") && !row["trueskill"].is_null()) {
        const json& t = row["trueskill"];
        e.trueskill = TrueSkillValue{t.at("mu").get<double>(), t.at("sigma").get<double>(),
                                     t.at("score").get<double>(), t.at("rank").get<int>()};
      }
      if (row.contains("red_elo") && !row["red_elo"].is_null()) e.red_elo = row["red_elo"].get<double>();
      if (row.contains("blue_elo") && !row["blue_elo"].is_null()) e.blue_elo = row["blue_elo"].get<double>();
      if (row.contains("contested_bt") && !row["contested_bt"].is_null()) {
        e.contested_bt = rated_from(row["contested_bt"], "score");
      }
      if (row.contains("bootstrap_median_rank") && !row["bootstrap_median_rank"].is_null()) {
        e.bootstrap_median_rank = row["bootstrap_median_rank"].get<double>();
      }
      if (row.contains("rank_interval") && !row["rank_interval"].is_null()) {
        e.rank_interval = std::make_pair(row["rank_interval"].at(0).get<int>(), row["rank_interval"].at(1).get<int>());
      }
      if (row.contains("rank_histogram")) e.rank_histogram = row["rank_histogram"].get<std::vector<int>>();
      r.rankings.push_back(std::move(e));
    }
    where = source + ": head_to_head";
    for (const json& x : j.at("head_to_head")) {
      HeadToHead h;
      h.model_a = x.at("model_a").get<std::string>();
      h.model_b = x.at("model_b").get<std::string>();
      h.a_wins = x.at("a_wins").get<int>();
      h.b_wins = x.at("b_wins").get<int>();
      h.draws = x.at("draws").get<int>();
      h.matches = x.at("matches").get<int>();
      r.head_to_head.push_back(h);
    }
  } catch (const json::exception& e) {
    throw Error(where + ": malformed rankings JSON: " + e.what());
  }
  r.matches = matches_from_json(j.contains("matches") ? j["matches"] : json::array(), source + ": matches");
  return r;
}

std::map<std::string, double> rating_uncertainty(const Rankings& r) {
  std::map<std::string, double> u;
  for (const RankingEntry& e : r.rankings) {
    const auto& ci = e.bradley_terry.ci;
    u[e.participant.id()] = ci ? ci->second - ci->first : 0.0;
  }
  return u;
}

std::string rankings_table(const Rankings& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-4s %-44s %8s %-19s %7s %-9s %6s\n", "rank", "participant", "BT", "BT 95% CI",
                "Elo", "W-D-L", "median");
  out += buf;
  for (const RankingEntry& e : r.rankings) {
    std::string ci = "-", med = "-";
    if (e.bradley_terry.ci) {
      std::snprintf(buf, sizeof buf, "[%+.3f, %+.3f]", e.bradley_terry.ci->first, e.bradley_terry.ci->second);
      ci = buf;
    }
    if (e.bootstrap_median_rank) {
      std::snprintf(buf, sizeof buf, "%.1f", *e.bootstrap_median_rank);
      med = buf;
    }
    std::string wdl = std::to_string(e.wins) + "-" + std::to_string(e.draws) + "-" + std::to_string(e.losses);
    std::snprintf(buf, sizeof buf, "%-4d %-44s %+8.3f %-19s %7.1f %-9s %6s\n", e.rank, e.participant.id().c_str(),
                  e.bradley_terry.value, ci.c_str(), e.elo.value, wdl.c_str(), med.c_str());
    out += buf;
  }
  return out;
}

}  // namespace spade::evaldual
