#include "evaldual/duel_match.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <thread>

#include "common/error.h"

namespace spade::evaldual {
namespace {

// One turn: `blue` defends `red`'s i-th task on `repo` (or wins automatically when it is missing).
// Returns false when the defense was dropped (harness failure).
bool play_turn(TaskBank& bank, const MatchSide& red, const MatchSide& blue, const PreparedRepo& repo, size_t i,
               const ProtocolConfig& protocol, const MatchConfig& cfg, TurnRecord* t) {
  t->red = red.id;
  t->blue = blue.id;
  t->repo = repo.spec.name;
  std::vector<std::string> ids = bank.task_ids(red.id, repo.spec.name);
  if (i >= ids.size()) {
    t->auto_win = true;
    t->blue_composite = 1.0;
    t->extra = {{"reason", "red_missing_challenge"}, {"outcome", "auto_win"}};
    return true;
  }
  t->task_id = ids[i];
  TaskRecord rec = bank.load_record(ids[i]);
  check_not_stale(rec.task_id, rec.repo_pin, repo);
  TurnScore score;
  double cost = 0;  // this turn's Blue session (0 when the defense cache answered)
  int64_t tokens = 0;
  auto cached = cfg.use_defense_cache ? bank.cached_defense(rec.task_id, blue.id) : std::nullopt;
  if (cached) {
    score = turn_score_from_json(nlohmann::json::parse(*cached));
  } else {
    PublicBundle pub = bank.load_public(rec.task_id);
    SealedBundle sealed = bank.load_sealed(rec.task_id);
    SessionContext ctx{blue.id, "blue", repo.spec.name, rec.slot, 0, red.id, rec.task_id};
    DefenseResult d = run_defense(*blue.agent, ctx, repo, pub, sealed, protocol);
    if (!d.completed) return false;
    score = d.score;
    cost = d.session.cost, tokens = d.session.tokens;
    bank.put_defense(rec.task_id, blue.id, to_json(score).dump());
  }
  t->blue_composite = score.blue_composite;
  t->extra = {{"s_regression", score.s_regression}, {"s_feature", score.s_feature}, {"s_bugfix", score.s_bugfix},
              {"red_composite", score.red_composite}, {"outcome", score.outcome}, {"detail", score.detail},
              {"cached", static_cast<bool>(cached)}, {"cost", cost}, {"tokens", tokens}};
  return true;
}

}  // namespace

int contested_turns(const MatchRecord& m) {
  int k = 0;
  for (const TurnRecord& t : m.turns) k += t.contested();
  return k;
}

MatchRecord play_match(TaskBank& bank, const MatchSide& a, const MatchSide& b, const std::vector<PreparedRepo>& repos,
                       const ProtocolConfig& protocol, const MatchConfig& cfg, const std::string& match_id) {
  if (a.id == b.id) throw Error("match " + match_id + ": a participant cannot play itself ('" + a.id + "')");
  if (!a.agent || !b.agent) throw Error("match " + match_id + ": both sides need an agent");
  MatchRecord m;
  m.match_id = match_id;
  m.model_a = a.id;
  m.model_b = b.id;
  if (cfg.workers < 1) throw Error("match " + match_id + ": MatchConfig::workers must be >= 1");
  // The schedule: per repository and task index, B defends A's task, then A defends B's.
  struct Job {
    const PreparedRepo* repo;
    size_t index;
    int side;  // 0: a is Red
    TurnRecord turn;
    bool played = false;
    std::exception_ptr error;
  };
  std::vector<Job> jobs;
  for (const PreparedRepo& repo : repos)
    for (int i = 0; i < cfg.turns_per_player; ++i)
      for (int side = 0; side < 2; ++side) jobs.push_back({&repo, static_cast<size_t>(i), side, {}, false, nullptr});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < jobs.size();) {
      Job& j = jobs[k];
      try {
        j.played = play_turn(bank, j.side == 0 ? a : b, j.side == 0 ? b : a, *j.repo, j.index, protocol, cfg, &j.turn);
      } catch (...) {
        j.error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < std::min<size_t>(cfg.workers, jobs.size()); ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  double qa = 0, qb = 0;
  for (Job& j : jobs) {
    if (j.error) std::rethrow_exception(j.error);  // the first failure in schedule order
    if (!j.played) continue;                       // a dropped defense
    (j.side == 0 ? qb : qa) += j.turn.blue_composite;
    (j.side == 0 ? qa : qb) += 1.0 - j.turn.blue_composite;
    m.turns.push_back(std::move(j.turn));
  }
  m.score_a = qa;
  m.score_b = qb;
  double cost = 0;  // the match's Blue sessions (the leaderboard page's tokens and cost per match)
  int64_t tokens = 0;
  for (const TurnRecord& t : m.turns) cost += t.extra.value("cost", 0.0), tokens += t.extra.value("tokens", int64_t{0});
  m.extra["cost"] = cost;
  m.extra["tokens"] = tokens;
  m.outcome = std::abs(qa - qb) < cfg.draw_margin ? Outcome::kDraw : qa > qb ? Outcome::kAWins : Outcome::kBWins;
  m.timestamp = utc_now_iso();
  if (contested_turns(m) == 0) {
    m.extra["warning"] = m.turns.empty()
                             ? "no turn was scored (every defense was dropped): the result carries no information"
                             : "no contested turn: every scored turn was an automatic Blue win for a missing task, so "
                               "the result carries no information";
  }
  return m;
}

}  // namespace spade::evaldual
