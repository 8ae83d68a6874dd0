#include "evaldual/rankings.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <limits>
#include <set>

#include "common/error.h"
#include "evaldual/input_fields.h"

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

std::optional<std::pair<double, double>> ci_from(const json& j, const std::string& where) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_array() || j.size() != 2) throw Error(where + ": expected [low, high] or null, got " + describe_json(j));
  return std::make_pair(json_number(j[0], where + "[0]"), json_number(j[1], where + "[1]"));
}

json rated_json(const RatedValue& v, const char* value_key, int samples) {
  json j = {{value_key, v.value}, {"rank", v.rank}, {"ci", ci_json(v.ci)}};
  if (v.status) {
    j["status"] = bt_status_name(*v.status);
    if (samples > 0) j["unidentified_draws"] = v.unidentified_draws;
    if (v.ci) j["ci_identified"] = v.ci_valid(samples);
  }
  return j;
}

RatedValue rated_from(const json& j, const char* value_key, const std::string& where) {
  JsonFields f(j, where);
  RatedValue v;
  v.value = f.number(value_key);
  v.rank = f.integer("rank");
  v.ci = ci_from(f.at("ci"), f.path("ci"));
  if (f.has("status")) v.status = parse_bt_status(f.string("status"), f.path("status"));
  if (f.has("unidentified_draws")) v.unidentified_draws = f.integer("unidentified_draws");
  return v;
}

// The optional field `key` as a number, null/absent -> nullopt.
std::optional<double> opt_number(const JsonFields& f, const char* key) {
  if (!f.has(key) || f.at(key).is_null()) return std::nullopt;
  return f.number(key);
}

// What a rankings reader says when given another kind of duel file.
std::string kind_hint(const json& j, const std::string& source) {
  bool matches = j.is_array() || (j.is_object() && j.contains("matches") && !j.contains("rankings"));
  if (matches)
    return source + ": this is a match list (match records), not a rankings JSON; rate it first: spade duel rate --matches " +
           source + " --out rankings.json, then pass rankings.json";
  if (j.is_object() && j.contains("schedule") && j.contains("participants"))
    return source + ": this is a tournament state file (state.json), not a rankings JSON; the tournament's rankings.json "
                    "sits next to it";
  return "";
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
  if (options.bootstrap_samples < 0)
    throw Error("bootstrap samples: " + std::to_string(options.bootstrap_samples) +
                " is negative; expected 0 (no intervals) or a positive number of draws");
  out.bootstrap_samples = options.bootstrap_samples;
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
  std::vector<int> bt_rank = rank_by_score(fit.scores);
  std::vector<double> elo = elo_ratings(n, comps, options.elo);
  std::vector<int> elo_rank = rank_by_score(elo);
  std::vector<TrueSkillRating> ts = trueskill_ratings(n, comps, options.trueskill);
  std::vector<double> ts_score(n);
  for (int i = 0; i < n; ++i) ts_score[i] = ts[i].conservative();
  std::vector<int> ts_rank = rank_by_score(ts_score);

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
    c_rank = rank_by_score(cfit.scores);
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
    r.bradley_terry = {fit.scores[i], bt_rank[i], std::nullopt, fit.status[i]};
    r.elo = {elo[i], elo_rank[i], std::nullopt, std::nullopt};
    r.trueskill = TrueSkillValue{ts[i].mu, ts[i].sigma, ts_score[i], ts_rank[i]};
    if (boot.samples > 0) {
      r.bradley_terry.ci = std::make_pair(boot.score_low[i], boot.score_high[i]);
      r.bradley_terry.unidentified_draws = boot.unidentified_draws[i];
      r.elo.ci = std::make_pair(boot.elo_low[i], boot.elo_high[i]);
      r.bootstrap_median_rank = boot.median_rank[i];
      r.rank_interval = std::make_pair(boot.rank_low[i], boot.rank_high[i]);
      r.rank_histogram = boot.rank_histogram[i];
    }
    if (have_turns) {
      RatedValue c{cfit.scores[i], c_rank[i], std::nullopt, cfit.status[i]};
      if (cboot.samples > 0) {
        c.ci = std::make_pair(cboot.score_low[i], cboot.score_high[i]);
        c.unidentified_draws = cboot.unidentified_draws[i];
      }
      r.contested_bt = c;
      r.red_elo = roles.red[i];
      r.blue_elo = roles.blue[i];
    }
  }
  std::sort(e.begin(), e.end(), [](const RankingEntry& x, const RankingEntry& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.participant.id() < y.participant.id();
  });
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
                {"bradley_terry", rated_json(e.bradley_terry, "score", r.bootstrap_samples)},
                {"elo", rated_json(e.elo, "rating", r.bootstrap_samples)},
                {"trueskill", e.trueskill ? json{{"mu", e.trueskill->mu},
                                                 {"sigma", e.trueskill->sigma},
                                                 {"score", e.trueskill->score},
                                                 {"rank", e.trueskill->rank}}
                                          : json(nullptr)},
                {"red_elo", opt_json(e.red_elo)},
                {"blue_elo", opt_json(e.blue_elo)},
                {"contested_bt", e.contested_bt ? rated_json(*e.contested_bt, "score", r.bootstrap_samples) : json(nullptr)},
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
  if (!j.is_object() || !j.contains("rankings")) {
    std::string hint = kind_hint(j, source);
    if (!hint.empty()) throw Error(hint);
    if (!j.is_object()) throw Error(source + ": expected a rankings JSON object (written by spade duel rate), got " + describe_json(j));
    throw Error(source + ": missing key 'rankings'; expected a rankings JSON (written by spade duel rate)");
  }
  JsonFields top(j, source);
  Rankings r;
  r.tournament_id = top.string("tournament_id");
  r.format = top.string("format");
  r.exported_at = top.string("exported_at");
  if (top.has("repos")) r.repos = j["repos"];
  if (top.has("targets_per_repo")) r.targets_per_repo = top.integer("targets_per_repo");
  if (top.has("bootstrap")) {
    JsonFields b(j["bootstrap"], top.path("bootstrap"));
    r.bootstrap_samples = b.integer("samples");
    if (r.bootstrap_samples < 0) throw Error(b.path("samples") + ": " + std::to_string(r.bootstrap_samples) + " is negative");
    r.seed = b.u64("seed");
    r.bootstrap_unconverged = b.integer("unconverged");
  }
  const json& rows = top.at("rankings");
  if (!rows.is_array()) throw Error(top.path("rankings") + ": expected an array of rows, got " + describe_json(rows));
  for (size_t i = 0; i < rows.size(); ++i) {
    JsonFields row(rows[i], top.path("rankings") + "[" + std::to_string(i) + "]");
    RankingEntry e;
    e.rank = row.integer("rank");
    e.participant.model = row.string("model");
    for (auto [key, field] : {std::make_pair("harness", &e.participant.harness), std::make_pair("effort", &e.participant.effort),
                              std::make_pair("provider", &e.participant.provider)})
      if (row.has(key)) *field = row.string(key);
    try {
      e.participant = Participant::parse(e.participant.id());
    } catch (const Error& ex) {
      throw Error(row.path("model") + ": " + ex.what());
    }
    e.points = row.number("points");
    e.matches_played = row.integer("matches_played");
    for (auto [key, field] : {std::make_pair("wins", &e.wins), std::make_pair("draws", &e.draws), std::make_pair("losses", &e.losses)})
      if (row.has(key)) *field = row.integer(key);
    e.bradley_terry = rated_from(row.at("bradley_terry"), "score", row.path("bradley_terry"));
    e.elo = rated_from(row.at("elo"), "rating", row.path("elo"));
    if (row.has("trueskill") && !row.at("trueskill").is_null()) {
      JsonFields t(row.at("trueskill"), row.path("trueskill"));
      e.trueskill = TrueSkillValue{t.number("mu"), t.number("sigma"), t.number("score"), t.integer("rank")};
    }
    e.red_elo = opt_number(row, "red_elo");
    e.blue_elo = opt_number(row, "blue_elo");
    if (row.has("contested_bt") && !row.at("contested_bt").is_null())
      e.contested_bt = rated_from(row.at("contested_bt"), "score", row.path("contested_bt"));
    e.bootstrap_median_rank = opt_number(row, "bootstrap_median_rank");
    if (row.has("rank_interval") && !row.at("rank_interval").is_null()) {
      const std::string w = row.path("rank_interval");
      const json& ri = row.at("rank_interval");
      if (!ri.is_array() || ri.size() != 2) throw Error(w + ": expected [low, high] or null, got " + describe_json(ri));
      e.rank_interval = std::make_pair(json_int(ri[0], w + "[0]"), json_int(ri[1], w + "[1]"));
    }
    if (row.has("rank_histogram")) {
      const std::string w = row.path("rank_histogram");
      const json& h = row.at("rank_histogram");
      if (!h.is_array()) throw Error(w + ": expected an array of counts, got " + describe_json(h));
      for (size_t k = 0; k < h.size(); ++k) e.rank_histogram.push_back(json_int(h[k], w + "[" + std::to_string(k) + "]"));
    }
    r.rankings.push_back(std::move(e));
  }
  const json& h2h = top.at("head_to_head");
  if (!h2h.is_array()) throw Error(top.path("head_to_head") + ": expected an array, got " + describe_json(h2h));
  for (size_t i = 0; i < h2h.size(); ++i) {
    JsonFields x(h2h[i], top.path("head_to_head") + "[" + std::to_string(i) + "]");
    r.head_to_head.push_back({x.string("model_a"), x.string("model_b"), x.integer("a_wins"), x.integer("b_wins"),
                              x.integer("draws"), x.integer("matches")});
  }
  r.matches = matches_from_json(j.contains("matches") ? j["matches"] : json::array(), source + ": matches");
  return r;
}

std::map<std::string, double> rating_uncertainty(const Rankings& r) {
  std::map<std::string, double> u;
  for (const RankingEntry& e : r.rankings) {
    const auto& ci = e.bradley_terry.ci;
    // An interval at the iteration cap is no measure of uncertainty: the rating is not identified.
    u[e.participant.id()] = !ci ? 0.0
                            : e.bradley_terry.ci_valid(r.bootstrap_samples) ? ci->second - ci->first
                                                                            : std::numeric_limits<double>::infinity();
  }
  return u;
}

std::string bt_value_mark(const RatedValue& v) {
  if (!v.status) return "";
  switch (*v.status) {
    case BtStatus::identified: return "";
    case BtStatus::capped: return "capped";
    case BtStatus::above: return "not identified (+inf)";
    case BtStatus::below: return "not identified (-inf)";
    case BtStatus::between: return "not identified";
    case BtStatus::apart: return "not comparable";
    case BtStatus::no_games: return "no games";
  }
  return "";
}

std::string bt_interval_mark(const RatedValue& v, int samples) {
  if (!v.ci) return "";
  if (!v.ci_valid(samples))
    return "interval not identified in " + std::to_string(v.unidentified_draws) + " of " + std::to_string(samples) + " draws";
  if (v.ci->first == v.ci->second) return "all draws equal";
  return "";
}

std::vector<std::string> rankings_notes(const Rankings& r) {
  std::vector<std::string> notes;
  std::set<int> ranks;
  bool tie = false;
  for (const RankingEntry& e : r.rankings) tie = !ranks.insert(e.rank).second || tie;
  if (tie) notes.push_back("shared rank: equal ratings share a rank and the next rank skips (standard competition ranking: 1, 1, 3)");
  std::set<BtStatus> seen;
  bool bad_ci = false, flat_ci = false;
  for (const RankingEntry& e : r.rankings) {
    for (const RatedValue* v : {&e.bradley_terry, e.contested_bt ? &*e.contested_bt : nullptr}) {
      if (!v) continue;
      if (v->status && *v->status != BtStatus::identified) seen.insert(*v->status);
      bad_ci = bad_ci || !v->ci_valid(r.bootstrap_samples);
      flat_ci = flat_ci || (v->ci_valid(r.bootstrap_samples) && v->ci && v->ci->first == v->ci->second);
    }
  }
  for (BtStatus s : seen) {
    RatedValue v;
    v.status = s;
    notes.push_back(bt_value_mark(v) + ": " + bt_status_meaning(s));
  }
  if (bad_ci)
    notes.push_back("interval not identified: in more than 2.5% of the bootstrap draws this rating had no finite "
                    "maximum-likelihood estimate on the main group's scale (in that resample its group had all wins "
                    "or all losses against the rest, or no games linking it to the main group), so the bounds "
                    "include values that are not ratings and are not a confidence interval");
  if (flat_ci)
    notes.push_back("all draws equal: every bootstrap draw gave the same value (e.g. every match a draw); the interval "
                    "shows that the data does not vary, not that the rating is certain");
  return notes;
}

std::string rankings_table(const Rankings& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-4s %-44s %8s %-19s %7s %-9s %6s  %s\n", "rank", "participant", "BT", "BT 95% CI",
                "Elo", "W-D-L", "median", "note");
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
    std::string note = bt_value_mark(e.bradley_terry), cim = bt_interval_mark(e.bradley_terry, r.bootstrap_samples);
    if (!cim.empty()) note += (note.empty() ? "" : "; ") + cim;
    std::string wdl = std::to_string(e.wins) + "-" + std::to_string(e.draws) + "-" + std::to_string(e.losses);
    std::snprintf(buf, sizeof buf, "%-4d %-44s %+8.3f %-19s %7.1f %-9s %6s  %s", e.rank, e.participant.id().c_str(),
                  e.bradley_terry.value, ci.c_str(), e.elo.value, wdl.c_str(), med.c_str(), note.c_str());
    std::string line = buf;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const std::string& n : rankings_notes(r)) out += "  " + n + "\n";
  return out;
}

}  // namespace spade::evaldual
