// Elo ratings for SWE-Duel (reference §6: "Elo (K 32, init 1500, by match time), per-role Red/Blue Elo
// per turn"; §7 arena.yaml "Elo K 32").
//
// Standard logistic Elo (Elo 1978): expected score E_a = 1 / (1 + 10^((R_b - R_a) / 400)); after a
// comparison with a's score S_a (1 win, 0.5 draw, 0 loss): R_a += K (S_a - E_a), R_b -= K (S_a - E_a).
// Comparisons are applied one at a time in the order given (match time; see match_time_order()).
// Per-role Elo keeps two ratings per participant: a Red rating (as task author) and a Blue rating (as
// repairer); each turn is one comparison of the Red author's Red rating against the Blue repairer's
// Blue rating, Blue scoring 1 iff S_Blue = 1. Which turns to feed (all, or contested only) is the
// caller's choice; rankings.h feeds all turns (the paper's full schedule keeps missing-task auto-wins).
//
// Thread-safety: pure functions on plain values; thread-safe.
#pragma once
#include <vector>

namespace spade::evaldual {

/// Elo constants. Defaults: reference §6/§7.
struct EloOptions {
  double k = 32.0;        // K factor
  double initial = 1500;  // starting rating
  double scale = 400.0;   // logistic scale (10^(diff/scale)), the usual chess value
};

/// One comparison between participants a and b (indices), a scoring score_a in {0, 0.5, 1} and b
/// scoring 1 - score_a. Shared by Elo, Bradley-Terry bootstrap and contested-turn ratings.
struct Comparison {
  int a = 0;
  int b = 0;
  double score_a = 0.5;
};

/// E_a: a's expected score against b.
double elo_expected(double rating_a, double rating_b, double scale = 400.0);

/// Ratings of n participants after applying `ordered` in order. Throws spade::Error when an index is
/// outside 0..n-1 or a == b.
std::vector<double> elo_ratings(int n, const std::vector<Comparison>& ordered, const EloOptions& options = {});

/// Per-role ratings of n participants.
struct RoleElo {
  std::vector<double> red;   // rating as task author (Red)
  std::vector<double> blue;  // rating as repairer (Blue)
};

/// Per-role Elo: each comparison is (a = Red participant, b = Blue participant, score_a = Red's score,
/// i.e. 0 when Blue won the turn). Throws like elo_ratings (here a == b is allowed: it cannot occur in a
/// match, but the two roles are different ratings).
RoleElo role_elo(int n, const std::vector<Comparison>& red_vs_blue, const EloOptions& options = {});

}  // namespace spade::evaldual
