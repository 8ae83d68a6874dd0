#include "evaldual/bradley_terry.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"

namespace spade::evaldual {

void PairwiseCounts::add(int a, int b, double score_a, double weight) {
  if (a < 0 || b < 0 || a >= n || b >= n) {
    throw Error("PairwiseCounts::add: participant index " + std::to_string(a < 0 || a >= n ? a : b) +
                " is outside 0.." + std::to_string(n - 1));
  }
  if (a == b) throw Error("PairwiseCounts::add: participant " + std::to_string(a) + " cannot play itself");
  credit[idx(a, b)] += weight * score_a;
  credit[idx(b, a)] += weight * (1.0 - score_a);
}

void PairwiseCounts::clear() { std::fill(credit.begin(), credit.end(), 0.0); }

namespace {

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

struct Pair {
  int i, j;
  double games, credit_ij, credit_ji;
};

struct MmResult {
  std::vector<double> log_p;  // per member, in `members` order, geometric mean 1 (mean 0)
  int iterations = 0;
  bool converged = false;
};

// The reference's MM fit (bradley_terry.h) of the games `pairs` among `members` (global indices; every
// pair's ends are members). One normalisation group: the members.
MmResult mm_fit(const std::vector<int>& members, const std::vector<Pair>& pairs, int n, const BtOptions& options) {
  const size_t m = members.size();
  std::vector<int> local(n, -1);
  for (size_t k = 0; k < m; ++k) local[members[k]] = static_cast<int>(k);
  // W_i summed in pair order, like the denominators, so that balanced data (all draws) gives exactly 1.
  std::vector<double> wins(m, 0.0), p(m, 1.0), next(m), denom(m);
  for (const Pair& pr : pairs) {
    wins[local[pr.i]] += pr.credit_ij;
    wins[local[pr.j]] += pr.credit_ji;
  }
  MmResult out;
  out.converged = pairs.empty();
  const double ratio_hi = std::exp(options.tolerance), ratio_lo = std::exp(-options.tolerance);
  for (int it = 0; it < options.max_iterations && !pairs.empty(); ++it) {
    std::fill(denom.begin(), denom.end(), 0.0);
    for (const Pair& pr : pairs) {
      double t = pr.games / (p[local[pr.i]] + p[local[pr.j]]);
      denom[local[pr.i]] += t;
      denom[local[pr.j]] += t;
    }
    double logsum = 0.0;
    for (size_t k = 0; k < m; ++k) {
      // Reference §6: zero wins or a zero denominator -> unchanged.
      next[k] = (wins[k] > 0 && denom[k] > 0) ? wins[k] / denom[k] : p[k];
      logsum += std::log(next[k]);
    }
    const double norm = std::exp(-logsum / static_cast<double>(m));  // geometric mean 1
    bool done = true;
    for (size_t k = 0; k < m; ++k) {
      next[k] *= norm;
      double r = next[k] / p[k];
      if (r > ratio_hi || r < ratio_lo) done = false;
    }
    p.swap(next);
    out.iterations = it + 1;
    if (done) {
      out.converged = true;
      break;
    }
  }
  out.log_p.resize(m);
  double mean = 0.0;
  for (size_t k = 0; k < m; ++k) mean += (out.log_p[k] = std::log(p[k]));
  mean /= static_cast<double>(m);
  for (double& x : out.log_p) x -= mean;  // centre exactly (removes rounding drift of the normalisation)
  return out;
}

// Strongly connected components of the win graph (i -> j iff i has win credit over j), Kosaraju's
// algorithm with explicit stacks. Returns the number of groups; group[i] in 0..groups-1.
int win_groups(const PairwiseCounts& c, std::vector<int>* group) {
  const int n = c.n;
  auto edge = [&](int i, int j) { return i != j && c.credit[c.idx(i, j)] > 0; };
  std::vector<int> order;
  std::vector<char> seen(n, 0);
  for (int s = 0; s < n; ++s) {
    if (seen[s]) continue;
    std::vector<std::pair<int, int>> stack = {{s, 0}};  // (node, next neighbour to try)
    seen[s] = 1;
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next < n) {
        int v = next++;
        if (!seen[v] && edge(u, v)) {
          seen[v] = 1;
          stack.push_back({v, 0});
        }
      } else {
        order.push_back(u);
        stack.pop_back();
      }
    }
  }
  group->assign(n, -1);
  int groups = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if ((*group)[*it] >= 0) continue;
    std::vector<int> stack = {*it};
    (*group)[*it] = groups;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int v = 0; v < n; ++v)
        if ((*group)[v] < 0 && edge(v, u)) {  // reversed edges
          (*group)[v] = groups;
          stack.push_back(v);
        }
    }
    ++groups;
  }
  return groups;
}

// Participants reachable from `from` (forward: along wins; else against them), within `members`.
std::vector<char> reach(const PairwiseCounts& c, const std::vector<int>& members, const std::vector<char>& from,
                        bool forward) {
  std::vector<char> seen = from;
  std::vector<int> stack;
  for (int u : members)
    if (seen[u]) stack.push_back(u);
  while (!stack.empty()) {
    int u = stack.back();
    stack.pop_back();
    for (int v : members) {
      double credit = forward ? c.credit[c.idx(u, v)] : c.credit[c.idx(v, u)];
      if (!seen[v] && v != u && credit > 0) {
        seen[v] = 1;
        stack.push_back(v);
      }
    }
  }
  return seen;
}

}  // namespace

const char* bt_status_name(BtStatus s) {
  switch (s) {
    case BtStatus::identified: return "identified";
    case BtStatus::capped: return "capped";
    case BtStatus::above: return "above";
    case BtStatus::below: return "below";
    case BtStatus::between: return "between";
    case BtStatus::apart: return "apart";
    case BtStatus::no_games: return "no_games";
  }
  return "apart";
}

BtStatus parse_bt_status(const std::string& s, const std::string& where) {
  for (BtStatus v : {BtStatus::identified, BtStatus::capped, BtStatus::above, BtStatus::below, BtStatus::between,
                     BtStatus::apart, BtStatus::no_games})
    if (s == bt_status_name(v)) return v;
  throw Error(where + ": unknown Bradley-Terry status '" + s +
              "'; expected identified, capped, above, below, between, apart or no_games");
}

std::string bt_status_meaning(BtStatus s) {
  switch (s) {
    case BtStatus::identified: return "the maximum-likelihood estimate";
    case BtStatus::capped:
      return "the fit stopped at its iteration cap before its tolerance: close to, not at, the maximum-likelihood "
             "estimate";
    case BtStatus::above:
      return "it never lost to the main group, directly or through others, so its maximum-likelihood strength is "
             "+infinity; the number is where the fit stopped at its iteration cap (only its order is meaningful)";
    case BtStatus::below:
      return "it never beat the main group, directly or through others, so its maximum-likelihood strength is "
             "-infinity; the number is where the fit stopped at its iteration cap (only its order is meaningful)";
    case BtStatus::between:
      return "no two participants beat each other both ways, so no finite maximum-likelihood strength exists; the "
             "number is where the fit stopped at its iteration cap (only its order is meaningful)";
    case BtStatus::apart:
      return "no chain of wins links it to the main group in both directions, so its number shares no scale with the "
             "main group's";
    case BtStatus::no_games: return "it played no game: 0 by convention, not a rating";
  }
  return "";
}

BtFit fit_bradley_terry(const PairwiseCounts& counts, const BtOptions& options) {
  const int n = counts.n;
  BtFit fit;
  fit.scores.assign(n, 0.0);
  fit.component.assign(n, 0);
  fit.status.assign(n, BtStatus::no_games);
  fit.converged = true;
  if (n == 0) return fit;

  // Played pairs (sparse) and connected components (union-find).
  std::vector<Pair> pairs;
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      double cij = counts.credit[counts.idx(i, j)], cji = counts.credit[counts.idx(j, i)];
      double g = cij + cji;
      if (g > 0) {
        pairs.push_back({i, j, g, cij, cji});
        parent[find_root(parent, i)] = find_root(parent, j);
      }
    }
  }
  std::vector<int> root_to_comp(n, -1);
  for (int i = 0; i < n; ++i) {
    int r = find_root(parent, i);
    if (root_to_comp[r] < 0) root_to_comp[r] = fit.components++;
    fit.component[i] = root_to_comp[r];
  }
  std::vector<std::vector<int>> members(fit.components);
  std::vector<std::vector<Pair>> comp_pairs(fit.components);
  for (int i = 0; i < n; ++i) members[fit.component[i]].push_back(i);
  for (const Pair& pr : pairs) comp_pairs[fit.component[pr.i]].push_back(pr);
  fit.groups = win_groups(counts, &fit.group);
  std::vector<int> group_size(fit.groups, 0);
  for (int i = 0; i < n; ++i) ++group_size[fit.group[i]];

  // Per component: the reference fit, then the reference group's own fit and every status.
  int main_comp = -1, main_size = 0;  // the component holding the largest reference group
  for (int c = 0; c < fit.components; ++c) {
    const std::vector<int>& mem = members[c];
    if (mem.size() == 1) continue;  // no games: score 0, status no_games
    MmResult full = mm_fit(mem, comp_pairs[c], n, options);
    fit.iterations = std::max(fit.iterations, full.iterations);
    fit.converged = fit.converged && full.converged;
    int ref = -1;  // the largest group of >= 2 (members are ascending, so the first found holds the lowest index)
    for (int i : mem)
      if (group_size[fit.group[i]] >= 2 && (ref < 0 || group_size[fit.group[i]] > group_size[ref])) ref = fit.group[i];
    if (ref >= 0 && group_size[ref] == static_cast<int>(mem.size())) {  // strongly connected: the plain MLE
      for (size_t k = 0; k < mem.size(); ++k) {
        fit.scores[mem[k]] = full.log_p[k];
        fit.status[mem[k]] = full.converged ? BtStatus::identified : BtStatus::capped;
      }
    } else if (ref >= 0) {  // separable with a reference group: its own fit, the rest in its frame
      std::vector<int> rmem;
      std::vector<Pair> rpairs;
      for (int i : mem)
        if (fit.group[i] == ref) rmem.push_back(i);
      for (const Pair& pr : comp_pairs[c])
        if (fit.group[pr.i] == ref && fit.group[pr.j] == ref) rpairs.push_back(pr);
      MmResult own = mm_fit(rmem, rpairs, n, options);
      double shift = 0.0;
      for (size_t k = 0; k < mem.size(); ++k)
        if (fit.group[mem[k]] == ref) shift += full.log_p[k];
      shift /= static_cast<double>(rmem.size());
      std::vector<char> in_ref(n, 0);
      for (int i : rmem) in_ref[i] = 1;
      std::vector<char> from_ref = reach(counts, mem, in_ref, true), to_ref = reach(counts, mem, in_ref, false);
      for (size_t k = 0; k < mem.size(); ++k) {
        int i = mem[k];
        fit.scores[i] = full.log_p[k] - shift;
        if (from_ref[i] && to_ref[i]) fit.status[i] = own.converged ? BtStatus::identified : BtStatus::capped;
        else if (to_ref[i]) fit.status[i] = BtStatus::above;
        else if (from_ref[i]) fit.status[i] = BtStatus::below;
        else fit.status[i] = BtStatus::apart;
      }
      for (size_t k = 0; k < rmem.size(); ++k) fit.scores[rmem[k]] = own.log_p[k];
    } else {  // every group a single participant: sources above, sinks below
      for (size_t k = 0; k < mem.size(); ++k) {
        int i = mem[k];
        fit.scores[i] = full.log_p[k];
        bool beat = false, lost = false;
        for (int j : mem) {
          beat = beat || counts.credit[counts.idx(i, j)] > 0;
          lost = lost || counts.credit[counts.idx(j, i)] > 0;
        }
        fit.status[i] = !lost ? BtStatus::above : !beat ? BtStatus::below : BtStatus::between;
      }
    }
    int size = ref >= 0 ? group_size[ref] : 1;
    if (size > main_size) {
      main_size = size;
      main_comp = c;
    }
  }
  for (int i = 0; i < n; ++i)
    if (fit.component[i] != main_comp && fit.status[i] != BtStatus::no_games) fit.status[i] = BtStatus::apart;
  return fit;
}

std::vector<int> rank_by_score(const std::vector<double>& scores) {
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::vector<int> rank(n);
  for (size_t r = 0; r < n; ++r) {
    bool tie = r > 0 && scores[order[r - 1]] - scores[order[r]] <= kRankTieTolerance;
    rank[order[r]] = tie ? rank[order[r - 1]] : static_cast<int>(r) + 1;
  }
  return rank;
}

}  // namespace spade::evaldual
