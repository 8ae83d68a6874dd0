#include "evaldual/schedule.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/input_fields.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

void check_unique(const std::vector<std::string>& ids, const char* what) {
  std::set<std::string> seen;
  for (const std::string& id : ids) {
    if (id.empty()) throw Error(std::string(what) + ": an empty participant id");
    if (!seen.insert(id).second) throw Error(std::string(what) + ": participant '" + id + "' appears twice");
  }
}

}  // namespace

std::vector<Round> round_robin_schedule(const std::vector<std::string>& participants) {
  if (participants.size() < 2) {
    throw Error("round_robin_schedule: " + std::to_string(participants.size()) +
                " participant(s); a round robin needs at least 2");
  }
  check_unique(participants, "round_robin_schedule");
  std::vector<std::string> seats = participants;
  if (seats.size() % 2 == 1) seats.push_back("");  // the bye seat
  const size_t m = seats.size();
  std::vector<Round> rounds(m - 1);
  for (size_t r = 0; r + 1 < m; ++r) {
    for (size_t i = 0; i < m / 2; ++i) {
      const std::string& x = seats[i];
      const std::string& y = seats[m - 1 - i];
      if (x.empty()) rounds[r].bye = y;
      else if (y.empty()) rounds[r].bye = x;
      else rounds[r].pairs.emplace_back(x, y);
    }
    // Rotate every seat but the first one place clockwise: the last moves to seat 1.
    std::rotate(seats.begin() + 1, seats.end() - 1, seats.end());
  }
  return rounds;
}

int active_sampling_budget(int incumbents) {
  if (incumbents <= 0) return 0;
  int ceil_log2 = 0;
  while ((1LL << ceil_log2) < incumbents) ++ceil_log2;  // exact: no floating-point log
  int budget = ceil_log2 + 1;
  return std::min(std::max(budget, 3), incumbents);
}

double laplace_win_rate(double wins, double games) { return (wins + 1.0) / (games + 2.0); }

double active_sampling_gain(double p, double games) {
  if (games <= 0) return kUnplayedPairGain;
  double v = p * (1.0 - p);
  return std::sqrt(v / games) - std::sqrt(v / (games + 1.0));
}

std::vector<SamplingCandidate> active_sampling_candidates(const std::string& newcomer,
                                                          const std::vector<std::string>& incumbents,
                                                          const std::vector<MatchRecord>& matches,
                                                          const std::map<std::string, double>& uncertainty,
                                                          const std::vector<std::string>& exclude,
                                                          bool include_played) {
  if (std::find(incumbents.begin(), incumbents.end(), newcomer) != incumbents.end()) {
    throw Error("active sampling: newcomer '" + newcomer + "' is also listed as an incumbent");
  }
  std::vector<SamplingCandidate> out;
  for (const std::string& inc : incumbents) {
    if (std::find(exclude.begin(), exclude.end(), inc) != exclude.end()) continue;
    double games = 0, wins = 0;
    for (const MatchRecord& m : matches) {
      if (m.model_a == newcomer && m.model_b == inc) {
        games += 1;
        wins += outcome_score_a(m.outcome);
      } else if (m.model_b == newcomer && m.model_a == inc) {
        games += 1;
        wins += 1.0 - outcome_score_a(m.outcome);
      }
    }
    if (games > 0 && !include_played) continue;
    SamplingCandidate c;
    c.incumbent = inc;
    c.games = games;
    c.p = laplace_win_rate(wins, games);
    c.gain = active_sampling_gain(c.p, games);
    auto it = uncertainty.find(inc);
    c.uncertainty = it == uncertainty.end() ? 0.0 : it->second;
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const SamplingCandidate& x, const SamplingCandidate& y) {
    if (x.gain != y.gain) return x.gain > y.gain;
    if (x.uncertainty != y.uncertainty) return x.uncertainty > y.uncertainty;
    return x.incumbent < y.incumbent;
  });
  return out;
}

TournamentState make_round_robin_state(const std::string& tournament_id, const std::vector<std::string>& participants) {
  TournamentState s;
  s.tournament_id = tournament_id;
  s.format = "round_robin";
  s.participants = participants;
  std::vector<Round> rounds = round_robin_schedule(participants);
  for (size_t r = 0; r < rounds.size(); ++r) {
    for (size_t k = 0; k < rounds[r].pairs.size(); ++k) {
      ScheduledMatch m;
      m.round = static_cast<int>(r) + 1;
      m.a = rounds[r].pairs[k].first;
      m.b = rounds[r].pairs[k].second;
      m.match_id = tournament_id + "-r" + std::to_string(r + 1) + "-m" + std::to_string(k + 1);
      s.schedule.push_back(m);
    }
  }
  return s;
}

TournamentState make_late_entrant_state(const std::string& tournament_id, const std::string& newcomer,
                                        const std::vector<std::string>& incumbents) {
  std::vector<std::string> all = incumbents;
  all.push_back(newcomer);
  check_unique(all, "late entrant");
  TournamentState s;
  s.tournament_id = tournament_id;
  s.format = "active_sampling";
  s.participants = all;
  s.newcomer = newcomer;
  s.budget = active_sampling_budget(static_cast<int>(incumbents.size()));
  return s;
}

const ScheduledMatch* next_pending(const TournamentState& state) {
  for (const ScheduledMatch& m : state.schedule) {
    if (!m.done) return &m;
  }
  return nullptr;
}

std::optional<ScheduledMatch> next_late_entrant_match(TournamentState& state, const std::vector<MatchRecord>& matches,
                                                      const std::map<std::string, double>& uncertainty) {
  if (state.format != "active_sampling") {
    throw Error("tournament '" + state.tournament_id + "': format is '" + state.format +
                "', not active_sampling; late-entrant scheduling does not apply");
  }
  if (const ScheduledMatch* p = next_pending(state)) return *p;
  if (static_cast<int>(state.schedule.size()) >= state.budget) return std::nullopt;
  std::vector<std::string> incumbents, scheduled;
  for (const std::string& id : state.participants) {
    if (id != state.newcomer) incumbents.push_back(id);
  }
  for (const ScheduledMatch& m : state.schedule) scheduled.push_back(m.a == state.newcomer ? m.b : m.a);
  std::vector<SamplingCandidate> c = active_sampling_candidates(state.newcomer, incumbents, matches, uncertainty, scheduled);
  if (c.empty()) return std::nullopt;
  ScheduledMatch m;
  m.round = static_cast<int>(state.schedule.size()) + 1;
  m.a = state.newcomer;
  m.b = c.front().incumbent;
  m.match_id = state.tournament_id + "-as" + std::to_string(m.round);
  state.schedule.push_back(m);
  return m;
}

void mark_done(TournamentState& state, const std::string& match_id) {
  for (ScheduledMatch& m : state.schedule) {
    if (m.match_id == match_id) {
      m.done = true;
      return;
    }
  }
  throw Error("tournament '" + state.tournament_id + "': no scheduled match '" + match_id + "'");
}

json tournament_state_to_json(const TournamentState& s) {
  json sched = json::array();
  for (const ScheduledMatch& m : s.schedule) {
    sched.push_back({{"round", m.round}, {"a", m.a}, {"b", m.b}, {"match_id", m.match_id}, {"done", m.done}});
  }
  json j = {{"tournament_id", s.tournament_id},
            {"format", s.format},
            {"participants", s.participants},
            {"schedule", sched}};
  if (s.format == "active_sampling") {
    j["newcomer"] = s.newcomer;
    j["budget"] = s.budget;
  }
  return j;
}

TournamentState tournament_state_from_json(const json& j, const std::string& source) {
  if (j.is_array() || (j.is_object() && j.contains("matches") && !j.contains("schedule")))
    throw Error(source + ": this is a match list, not a tournament state (state.json: tournament_id, format, "
                         "participants, schedule)");
  JsonFields f(j, source);
  TournamentState s;
  s.tournament_id = f.string("tournament_id");
  s.format = f.string("format");
  if (s.format != "round_robin" && s.format != "active_sampling")
    throw Error(f.path("format") + ": '" + s.format + "' is not round_robin or active_sampling");
  s.participants = f.strings("participants");
  const json& sched = f.at("schedule");
  if (!sched.is_array()) throw Error(f.path("schedule") + ": expected an array of matches, got " + describe_json(sched));
  for (size_t i = 0; i < sched.size(); ++i) {
    JsonFields m(sched[i], f.path("schedule") + "[" + std::to_string(i) + "]");
    ScheduledMatch sm;
    sm.round = m.integer("round");
    sm.a = m.string("a");
    sm.b = m.string("b");
    sm.match_id = m.string("match_id");
    sm.done = m.boolean("done");
    s.schedule.push_back(sm);
  }
  if (s.format == "active_sampling") {
    s.newcomer = f.string("newcomer");
    s.budget = f.integer("budget");
  }
  return s;
}

void save_tournament_state(const std::string& path, const TournamentState& state) {
  write_file_atomic(path, tournament_state_to_json(state).dump(2) + "\n");
}

TournamentState load_tournament_state(const std::string& path) {
  return tournament_state_from_json(read_json_document(path), path);
}

}  // namespace spade::evaldual
