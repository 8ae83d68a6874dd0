#include "evaldual/tournament.h"

#include <filesystem>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/rankings.h"

namespace spade::evaldual {
namespace {

std::vector<MatchRecord> load_or_empty(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  return load_matches(path);
}

// Marks done every scheduled match whose record is already saved (a crash between the two writes).
void reconcile(TournamentState& state, const std::vector<MatchRecord>& matches) {
  std::set<std::string> saved;
  for (const MatchRecord& m : matches) saved.insert(m.match_id);
  for (ScheduledMatch& s : state.schedule)
    if (!s.done && saved.count(s.match_id)) s.done = true;
}

}  // namespace

std::vector<MatchRecord> run_tournament(const std::string& dir, const TournamentState& initial,
                                        const PlayMatchFn& play, const TournamentOptions& options) {
  std::filesystem::create_directories(dir);
  const std::string state_path = dir + "/state.json", matches_path = dir + "/matches.json";
  TournamentState state = initial;
  if (std::filesystem::exists(state_path)) {
    state = load_tournament_state(state_path);
    if (state.tournament_id != initial.tournament_id || state.participants != initial.participants)
      throw Error(state_path + ": holds tournament '" + state.tournament_id +
                  "' with other participants; use another directory for '" + initial.tournament_id + "'");
  }
  std::vector<MatchRecord> matches = load_or_empty(matches_path);
  reconcile(state, matches);
  save_tournament_state(state_path, state);

  auto total = [&] { return state.format == "active_sampling" ? state.budget : static_cast<int>(state.schedule.size()); };
  for (;;) {
    std::optional<ScheduledMatch> next;
    if (state.format == "active_sampling") {
      RankingOptions ro;
      ro.bootstrap_samples = options.selection_bootstrap;
      ro.seed = options.seed;
      ro.participants = state.participants;
      std::vector<MatchRecord> all = options.prior_matches;
      all.insert(all.end(), matches.begin(), matches.end());
      next = next_late_entrant_match(state, all, rating_uncertainty(compute_rankings(all, ro)));
      save_tournament_state(state_path, state);  // the pick is part of the state: a resume replays it
    } else if (const ScheduledMatch* p = next_pending(state)) {
      next = *p;
    }
    if (!next) break;
    MatchRecord record = play(*next);
    if (record.match_id != next->match_id)
      throw Error("tournament " + state.tournament_id + ": the match player returned record '" + record.match_id +
                  "' for scheduled match '" + next->match_id + "'");
    matches.push_back(record);
    write_file_atomic(matches_path, matches_to_json(matches).dump(2) + "\n");
    mark_done(state, next->match_id);
    save_tournament_state(state_path, state);
    if (options.on_match) {
      int done = 0;
      for (const ScheduledMatch& s : state.schedule) done += s.done;
      options.on_match(record, done, total());
    }
  }
  return matches;
}

}  // namespace spade::evaldual
