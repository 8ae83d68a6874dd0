#include "evaldual/elo.h"

#include <cmath>
#include <string>

#include "common/error.h"

namespace spade::evaldual {
namespace {

void check(int n, const Comparison& c, size_t k, bool allow_self) {
  if (c.a < 0 || c.b < 0 || c.a >= n || c.b >= n) {
    throw Error("Elo: comparison " + std::to_string(k) + " names participant index " +
                std::to_string(c.a < 0 || c.a >= n ? c.a : c.b) + " outside 0.." + std::to_string(n - 1));
  }
  if (!allow_self && c.a == c.b) throw Error("Elo: comparison " + std::to_string(k) + " pits a participant against itself");
}

}  // namespace

double elo_expected(double rating_a, double rating_b, double scale) {
  return 1.0 / (1.0 + std::pow(10.0, (rating_b - rating_a) / scale));
}

std::vector<double> elo_ratings(int n, const std::vector<Comparison>& ordered, const EloOptions& options) {
  std::vector<double> r(n, options.initial);
  for (size_t k = 0; k < ordered.size(); ++k) {
    const Comparison& c = ordered[k];
    check(n, c, k, false);
    double delta = options.k * (c.score_a - elo_expected(r[c.a], r[c.b], options.scale));
    r[c.a] += delta;
    r[c.b] -= delta;
  }
  return r;
}

RoleElo role_elo(int n, const std::vector<Comparison>& red_vs_blue, const EloOptions& options) {
  RoleElo out{std::vector<double>(n, options.initial), std::vector<double>(n, options.initial)};
  for (size_t k = 0; k < red_vs_blue.size(); ++k) {
    const Comparison& c = red_vs_blue[k];
    check(n, c, k, true);
    double delta = options.k * (c.score_a - elo_expected(out.red[c.a], out.blue[c.b], options.scale));
    out.red[c.a] += delta;
    out.blue[c.b] -= delta;
  }
  return out;
}

}  // namespace spade::evaldual
