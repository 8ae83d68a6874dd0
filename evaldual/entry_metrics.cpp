#include "evaldual/entry_metrics.h"

#include <limits>

#include "common/error.h"

namespace spade::evaldual {

std::map<std::string, double> role_win_rates(const std::vector<MatchRecord>& matches, const std::string& id) {
  int red = 0, red_won = 0, blue = 0, blue_won = 0;
  for (const MatchRecord& m : matches)
    for (const TurnRecord& t : m.turns) {
      if (!t.contested()) continue;
      if (t.red == id) ++red, red_won += !t.blue_wins();
      if (t.blue == id) ++blue, blue_won += t.blue_wins();
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {{"red_win_rate", red ? static_cast<double>(red_won) / red : nan},
          {"blue_win_rate", blue ? static_cast<double>(blue_won) / blue : nan}};
}

std::map<std::string, double> entry_metrics(const Rankings& rankings, const std::vector<MatchRecord>& matches,
                                            const std::string& id, int admitted_tasks, double match_s) {
  const RankingEntry* entry = nullptr;
  for (const RankingEntry& e : rankings.rankings)
    if (e.participant.id() == id) entry = &e;
  if (!entry) throw Error("duel metrics: '" + id + "' is not in the rankings");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const RatedValue& bt = entry->bradley_terry;
  std::map<std::string, double> out = {
      {"duel/bt", bt.value},
      {"duel/bt_ci_low", bt.ci ? bt.ci->first : nan},
      {"duel/bt_ci_high", bt.ci ? bt.ci->second : nan},
      {"duel/admitted_tasks", admitted_tasks},
      {"duel/match_s", match_s}};
  for (const auto& [k, v] : role_win_rates(matches, id)) out["duel/" + k] = v;
  return out;
}

}  // namespace spade::evaldual
