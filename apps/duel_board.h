// Shared by the `spade duel` command files: how a participant id becomes an agent (apps/cmd_duel.cpp,
// the one place that decides it), and how a finished tournament becomes a leaderboard directory
// (apps/cmd_duel_board.cpp, evaldual/leaderboard_dir.h).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evaldual/leaderboard_dir.h"
#include "evaldual/match_record.h"
#include "evaldual/protocol.h"
#include "evaldual/rankings.h"

namespace spade::apps {

/// Exit status of a duel command's usage error (as for a command line the parser refuses, apps/main.cpp).
constexpr int kUsageError = 2;

/// The agent for `participant`: its replay script when `script` is given, else the model its id names
/// in the endpoints file. `script_flag` names the flag that gives a script, for the error. Throws
/// spade::Error when neither is given or the endpoint does not resolve. (apps/cmd_duel.cpp)
std::unique_ptr<evaldual::Agent> make_agent(const std::string& participant, const std::string& script,
                                            const std::string& endpoints, const std::string& script_flag);

/// Prints a model agent's calls, tokens and cost (nothing for a replay agent). (apps/cmd_duel.cpp)
void print_usage(const std::string& participant, evaldual::Agent* agent);

/// Makes (or extends) the leaderboard directory `dir` from a finished round robin: each player's
/// tasks from the shared `bank` become its own bank, its replay script (from `script_of`, if any) is
/// copied, every match is saved, then the players are added (origin "tournament ID") and the rankings
/// and page regenerated with `ro`. Players already on the leaderboard are left as they are. Takes the
/// directory's lock. Throws spade::Error when `dir` is not empty and not a leaderboard of `arena`.
/// (apps/cmd_duel_board.cpp)
evaldual::Rankings publish_tournament(const std::string& dir, const evaldual::LeaderboardArena& arena,
                                      const std::vector<std::string>& players,
                                      const std::map<std::string, std::string>& script_of, const std::string& bank,
                                      const std::vector<evaldual::MatchRecord>& matches, const std::string& tournament_id,
                                      evaldual::RankingOptions ro);

}  // namespace spade::apps
