// TrueSkill ratings for SWE-Duel (reference §6: "TrueSkill (mu 25, sigma 8.333)"; rankings JSON field
// "trueskill"). Two-player TrueSkill of Herbrich, Minka & Graepel, "TrueSkill(TM): A Bayesian Skill
// Rating System", NIPS 2007 (eqs. for the 1-vs-1 case, Table 1 / §3), applied to whole matches one at a
// time in the order given (match time; see match_time_order() in match_record.h), like elo.h.
//
// Each participant's skill is a Gaussian N(mu, sigma^2). For one match between a and b:
//   1. dynamics: sigma^2 += tau^2 for both (paper §3 "dynamics"; done before each match as in the
//      `trueskill` Python package, whose defaults we use);
//   2. c^2 = 2 beta^2 + sigma_a^2 + sigma_b^2;  t = (mu_w - mu_l) / c with w the winner (for a draw,
//      w = a, l = b);  e = eps / c with the draw margin eps = Phi^-1((p_draw + 1) / 2) * sqrt(2) * beta;
//   3. win:  v = N(t - e) / Phi(t - e),  w = v (v + t - e);
//      draw: v = (N(-e - t) - N(e - t)) / (Phi(e - t) - Phi(-e - t)),
//            w = v^2 + ((e - t) N(e - t) + (e + t) N(e + t)) / (Phi(e - t) - Phi(-e - t));
//      (N, Phi: standard normal density and CDF);
//   4. mu_w += sigma_w^2 / c * v,  mu_l -= sigma_l^2 / c * v,
//      sigma_i^2 *= 1 - sigma_i^2 / c^2 * w  for both.
// The conservative score is mu - 3 sigma (Herbrich et al. §4: the leaderboard uses mu - k sigma, k = 3).
//
// Numerics (ours): Phi uses erfc, so the ratios stay accurate far into the tails; where the
// denominator still underflows (|t| above about 37) v falls back to its asymptote (the distance to
// the bound, v -> e - t for a win, e - |t| for a draw, times the sign of t) and w to 1. w is clamped to
// [0, 1] (its exact range), so sigma stays positive and no NaN or inf is produced for finite inputs.
//
// Thread-safety: pure functions on plain values; thread-safe. Torch-free.
#pragma once
#include <vector>

#include "evaldual/elo.h"

namespace spade::evaldual {

/// TrueSkill constants. Defaults: the `trueskill` Python package (trueskill.org, "TrueSkill()"
/// environment): mu 25, sigma 25/3 (reference §6 "mu 25, sigma 8.333"), beta = sigma/2,
/// tau = sigma/100, draw probability 0.10. Units: skill points (mu's scale).
struct TrueSkillOptions {
  double mu = 25.0;                  // initial mean
  double sigma = 25.0 / 3.0;         // initial standard deviation
  double beta = 25.0 / 6.0;          // performance noise (distance giving ~76% win chance)
  double tau = 25.0 / 300.0;         // dynamics: sd added before each match
  double draw_probability = 0.10;    // in [0, 1); sets the draw margin
};

/// One participant's skill belief.
struct TrueSkillRating {
  double mu = 25.0;
  double sigma = 25.0 / 3.0;
  /// mu - 3 sigma (conservative score, Herbrich et al. 2007 §4).
  double conservative() const { return mu - 3.0 * sigma; }
};

/// Standard normal inverse CDF Phi^-1(p) for p in (0, 1), by bisection on erfc (error < 1e-12).
/// Throws spade::Error when p is not in (0, 1).
double normal_quantile(double p);

/// Draw margin eps = Phi^-1((p_draw + 1) / 2) * sqrt(2) * beta (Herbrich et al. 2007 §3, two
/// players). 0 for p_draw = 0. Throws spade::Error when draw_probability is outside [0, 1) or beta <= 0.
double trueskill_draw_margin(const TrueSkillOptions& options = {});

/// Updates a and b after one match in which a scored score_a (1 win, 0.5 draw, 0 loss); see the file
/// comment for the formulas (tau added first). Throws spade::Error when score_a is not 0, 0.5 or 1, or
/// the options are invalid (sigma, beta <= 0, tau < 0, draw probability outside [0, 1)).
void trueskill_update(TrueSkillRating& a, TrueSkillRating& b, double score_a, const TrueSkillOptions& options = {});

/// Ratings of n participants (all starting at options.mu / options.sigma) after applying `ordered`
/// in order. Throws spade::Error like trueskill_update, or when an index is outside 0..n-1 or a == b.
std::vector<TrueSkillRating> trueskill_ratings(int n, const std::vector<Comparison>& ordered,
                                               const TrueSkillOptions& options = {});

}  // namespace spade::evaldual
