#include "evaldual/trueskill.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace spade::evaldual {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
// Denominators below this are treated as underflowed (see the header's "Numerics").
constexpr double kTiny = 1e-300;

double pdf(double x) { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }
double cdf(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }

void check_options(const TrueSkillOptions& o) {
  if (!(o.sigma > 0) || !(o.beta > 0) || !(o.tau >= 0) || !(o.draw_probability >= 0 && o.draw_probability < 1)) {
    throw Error("TrueSkill: invalid options (sigma " + std::to_string(o.sigma) + ", beta " + std::to_string(o.beta) +
                ", tau " + std::to_string(o.tau) + ", draw_probability " + std::to_string(o.draw_probability) +
                "): need sigma > 0, beta > 0, tau >= 0, 0 <= draw_probability < 1");
  }
}

// v and w for a win with x = t - e.
void vw_win(double x, double& v, double& w) {
  double den = cdf(x);
  if (den < kTiny) {
    v = -x;
    w = 1.0;
  } else {
    v = pdf(x) / den;
    w = v * (v + x);
  }
}

// v and w for a draw; computed on |t| and v given t's sign (both are symmetric in that way).
void vw_draw(double t, double e, double& v, double& w) {
  double at = std::fabs(t);
  double hi = e - at, lo = -e - at;  // hi >= lo
  double den = cdf(hi) - cdf(lo);
  if (den < kTiny) {
    v = hi;  // v is the mean of N(0,1) truncated to [lo, hi]; both bounds far below 0, so it sits at hi
    w = 1.0;
  } else {
    v = (pdf(lo) - pdf(hi)) / den;
    w = v * v + (hi * pdf(hi) - lo * pdf(lo)) / den;
  }
  if (t < 0) v = -v;
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw Error("TrueSkill: normal_quantile needs p in (0, 1), got " + std::to_string(p));
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-14; ++i) {
    double mid = 0.5 * (lo + hi);
    if (cdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

double trueskill_draw_margin(const TrueSkillOptions& options) {
  check_options(options);
  if (options.draw_probability == 0) return 0.0;
  return normal_quantile((options.draw_probability + 1.0) / 2.0) * std::sqrt(2.0) * options.beta;
}

void trueskill_update(TrueSkillRating& a, TrueSkillRating& b, double score_a, const TrueSkillOptions& options) {
  if (score_a != 0.0 && score_a != 0.5 && score_a != 1.0) {
    throw Error("TrueSkill: score_a must be 0, 0.5 or 1, got " + std::to_string(score_a));
  }
  const double eps = trueskill_draw_margin(options);  // validates options
  const double tau2 = options.tau * options.tau;
  const double va = a.sigma * a.sigma + tau2, vb = b.sigma * b.sigma + tau2;
  const double c2 = 2.0 * options.beta * options.beta + va + vb;
  const double c = std::sqrt(c2);
  const double e = eps / c;
  double v = 0, w = 0, sign = 1;  // sign: +1 when a is the winner (or a draw), -1 when b won
  if (score_a == 0.5) {
    vw_draw((a.mu - b.mu) / c, e, v, w);
  } else {
    sign = score_a == 1.0 ? 1.0 : -1.0;
    vw_win(sign * (a.mu - b.mu) / c - e, v, w);
  }
  w = std::clamp(w, 0.0, 1.0);
  a.mu += sign * va / c * v;
  b.mu -= sign * vb / c * v;
  a.sigma = std::sqrt(va * std::max(0.0, 1.0 - va / c2 * w));
  b.sigma = std::sqrt(vb * std::max(0.0, 1.0 - vb / c2 * w));
}

std::vector<TrueSkillRating> trueskill_ratings(int n, const std::vector<Comparison>& ordered,
                                               const TrueSkillOptions& options) {
  check_options(options);
  std::vector<TrueSkillRating> r(std::max(0, n), TrueSkillRating{options.mu, options.sigma});
  for (size_t k = 0; k < ordered.size(); ++k) {
    const Comparison& c = ordered[k];
    if (c.a < 0 || c.b < 0 || c.a >= n || c.b >= n) {
      throw Error("TrueSkill: comparison " + std::to_string(k) + " names participant index " +
                  std::to_string(c.a < 0 || c.a >= n ? c.a : c.b) + " outside 0.." + std::to_string(n - 1));
    }
    if (c.a == c.b) throw Error("TrueSkill: comparison " + std::to_string(k) + " pits a participant against itself");
    trueskill_update(r[c.a], r[c.b], c.score_a, options);
  }
  return r;
}

}  // namespace spade::evaldual
