#!/usr/bin/env python3
"""Independent reference values for tests/evaldual/test_ratings_bt.cpp.

Computes Bradley-Terry log-strengths by a DIFFERENT method from evaldual/bradley_terry.cpp: Newton's
method on the log-likelihood
    L(beta) = sum over comparisons of  s * log sigma(beta_a - beta_b) + (1 - s) * log sigma(beta_b - beta_a)
(a draw is s = 0.5: half a win each), with one participant per connected component pinned at 0 during
the solve and each component centred to mean 0 afterwards (the C++ rule for disconnected graphs). The C++
code uses the minorization-maximization update instead, so agreement checks both.

The bootstrap reference replays the C++ random stream (std::mt19937_64, written out below from the
standard's definition, with the same rejection rule as evaldual::bounded_index) and fits every draw by
Newton, then takes numpy-style linear percentiles, median ranks, rank intervals and histograms.

Pure Python 3 (no numpy/scipy), so anyone can re-run it:  python3 tests/evaldual/reference/bt_reference.py
It prints the values pasted into the C++ test.
"""
import math

# ------------------------------------------------------------------ std::mt19937_64 (C++11 26.5.3.2)
class MT19937_64:
    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.mt = [0] * self.N
        self.mt[0] = seed & self.MASK
        for i in range(1, self.N):
            self.mt[i] = (6364136223846793005 * (self.mt[i - 1] ^ (self.mt[i - 1] >> 62)) + i) & self.MASK
        self.idx = self.N

    def _twist(self):
        mt = self.mt
        for i in range(self.N):
            x = (mt[i] & self.UPPER) | (mt[(i + 1) % self.N] & self.LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= self.MATRIX_A
            mt[i] = mt[(i + self.M) % self.N] ^ xa
        self.idx = 0

    def __call__(self):
        if self.idx >= self.N:
            self._twist()
        y = self.mt[self.idx]
        self.idx += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & self.MASK


def bounded_index(rng, n):
    reject_below = (1 << 64) % n
    x = rng()
    while x < reject_below:
        x = rng()
    return x % n


# ------------------------------------------------------------------ Newton Bradley-Terry
def sigma(x):
    return 1.0 / (1.0 + math.exp(-x))


def solve(a, b):
    """Gaussian elimination with partial pivoting: a x = b."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def components(n, comps):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for a, b, _ in comps:
        parent[find(a)] = find(b)
    groups = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def strongly_connected(members, credit):
    """Ford's condition inside one component: the MLE is finite iff the 'got credit against' digraph is
    strongly connected."""
    def reach(start, forward):
        seen, stack = {start}, [start]
        while stack:
            u = stack.pop()
            for v in members:
                c = credit.get((u, v), 0.0) if forward else credit.get((v, u), 0.0)
                if v not in seen and c > 0:
                    seen.add(v)
                    stack.append(v)
        return seen
    return len(reach(members[0], True)) == len(members) and len(reach(members[0], False)) == len(members)


def newton_bt(n, comps):
    credit = {}
    for a, b, s in comps:
        credit[(a, b)] = credit.get((a, b), 0.0) + s
        credit[(b, a)] = credit.get((b, a), 0.0) + 1.0 - s
    beta = [0.0] * n
    for members in components(n, comps):
        if len(members) == 1:
            continue
        if not strongly_connected(members, credit):
            raise ValueError("MLE does not exist (Ford's condition fails) for %s" % members)
        free = members[:-1]  # the last member is pinned at 0 during the solve
        for _ in range(100):
            g = []
            h = [[0.0] * len(free) for _ in free]
            for ii, i in enumerate(free):
                gi = 0.0
                for j in members:
                    if j == i:
                        continue
                    nij = credit.get((i, j), 0.0) + credit.get((j, i), 0.0)
                    if nij == 0:
                        continue
                    pr = sigma(beta[i] - beta[j])
                    gi += credit.get((i, j), 0.0) - nij * pr
                    w = nij * pr * (1 - pr)
                    h[ii][ii] += w  # negative Hessian
                    if j in free:
                        h[ii][free.index(j)] -= w
                g.append(gi)
            step = solve(h, g)
            for ii, i in enumerate(free):
                beta[i] += step[ii]
            if max(abs(s) for s in step) < 1e-14:
                break
        mean = sum(beta[i] for i in members) / len(members)
        for i in members:
            beta[i] -= mean
    return beta


def ranks(scores, ids):
    """Standard competition ranks (1, 1, 3): 1 + the number of scores strictly greater, where scores
    within 1e-9 of each other are equal (here: of any other, the C++ compares sorted neighbours; the
    two agree unless three scores chain within 1e-9)."""
    return [1 + sum(1 for t in scores if t - s > 1e-9) for s in scores]


def percentile(sorted_vals, q):
    h = q * (len(sorted_vals) - 1)
    lo = math.floor(h)
    if lo + 1 >= len(sorted_vals):
        return sorted_vals[-1]
    return sorted_vals[lo] + (h - lo) * (sorted_vals[lo + 1] - sorted_vals[lo])


def bootstrap(ids, comps, samples, seed):
    n, m = len(ids), len(comps)
    rng = MT19937_64(seed)
    all_scores, all_ranks = [], []
    for _ in range(samples):
        draw = [comps[bounded_index(rng, m)] for _ in range(m)]
        s = newton_bt(n, draw)
        all_scores.append(s)
        all_ranks.append(ranks(s, ids))
    out = []
    for i in range(n):
        col = sorted(s[i] for s in all_scores)
        rk = sorted(r[i] for r in all_ranks)
        hist = [sum(1 for r in rk if r == k) for k in range(1, n + 1)]
        out.append(dict(lo=percentile(col, 0.025), hi=percentile(col, 0.975), median=percentile(rk, 0.5),
                        rank_lo=math.floor(percentile(rk, 0.025)), rank_hi=math.ceil(percentile(rk, 0.975)),
                        hist=hist))
    return out


# ------------------------------------------------------------------ the test cases (same data as the C++ test)
W, D, L = 1.0, 0.5, 0.0

# Connected, with draws: A, B, C, D (indices 0..3).
CONNECTED = [(0, 1, W), (0, 1, W), (1, 0, W), (0, 2, W), (2, 0, D), (0, 3, W), (3, 0, W),
             (1, 2, W), (1, 2, D), (2, 1, W), (1, 3, W), (3, 1, W), (2, 3, W), (2, 3, W), (3, 2, W)]

# Disconnected: {A, B, C} and {D, E} never meet.
DISCONNECTED = [(0, 1, W), (1, 0, W), (0, 1, W), (1, 2, W), (2, 1, W), (1, 2, W), (0, 2, W), (2, 0, W),
                (3, 4, W), (4, 3, W), (3, 4, W), (3, 4, D)]

# Zero wins: Z (index 3) loses all its matches; A, B, C are well posed among themselves. The MLE puts Z
# at -infinity; the others' limit is the MLE of their matches without Z.
ZERO_WINS_OTHERS = [(0, 1, W), (1, 0, W), (0, 1, W), (1, 2, W), (2, 1, W), (0, 2, W), (2, 0, W), (2, 1, D)]
ZERO_WINS_Z = [(0, 3, W), (3, 1, L), (2, 3, W), (3, 0, L)]


# Separable: A, B, C (0..2) beat each other both ways; D (3) beat A and B and never lost (above); E (4)
# lost to C and D and never won (below); F (5) played nobody (no_games); G, H (6, 7) only played each
# other, both ways (apart: another component).
SEPARABLE = [(0, 1, W), (1, 0, W), (1, 2, W), (2, 1, W), (0, 2, W), (2, 0, D), (0, 1, W),
             (3, 0, W), (3, 1, W), (2, 4, W), (3, 4, W), (6, 7, W), (7, 6, W)]
# A chain without a group of two that beat each other both ways: A beat B, B beat C, A beat C.
CHAIN = [(0, 1, W), (1, 2, W), (0, 2, W)]


def statuses(n, comps):
    """Status of every participant by the definitions in evaldual/bradley_terry.h, computed another way:
    groups = sets of mutually reachable participants in the win graph (pairwise reachability, not
    Kosaraju); the reference group R = the largest group of >= 2 (lowest index on ties) of the component
    holding the largest such group; then reachability from / to R. Returns (statuses, R, limit scores
    of R by Newton on the games inside R, centred)."""
    credit = {}
    for a, b, s in comps:
        credit[(a, b)] = credit.get((a, b), 0.0) + s
        credit[(b, a)] = credit.get((b, a), 0.0) + 1.0 - s

    def reach_from(starts, forward):
        seen, stack = set(starts), list(starts)
        while stack:
            u = stack.pop()
            for v in range(n):
                c = credit.get((u, v), 0.0) if forward else credit.get((v, u), 0.0)
                if v not in seen and v != u and c > 0:
                    seen.add(v)
                    stack.append(v)
        return seen
    played = {i for a, b, _ in comps for i in (a, b)}
    comp_of = {}
    for k, members in enumerate(components(n, comps)):
        for i in members:
            comp_of[i] = k
    group = {i: frozenset(j for j in reach_from([i], True) if i in reach_from([j], True)) for i in range(n)}
    candidates = sorted({g for g in group.values() if len(g) >= 2}, key=lambda g: (-len(g), min(g)))
    out = []
    R = candidates[0] if candidates else frozenset()
    main = comp_of[min(R)] if R else None
    fwd, back = reach_from(list(R), True), reach_from(list(R), False)
    for i in range(n):
        if i not in played:
            out.append("no_games")
        elif main is None or comp_of[i] != main:
            out.append("apart")
        elif i in R:
            out.append("identified")
        elif i in back and i not in fwd:
            out.append("above")
        elif i in fwd and i not in back:
            out.append("below")
        else:
            out.append("apart")
    inside = [(a, b, s) for a, b, s in comps if a in R and b in R]
    ids = sorted(R)
    local = {g: k for k, g in enumerate(ids)}
    limit = newton_bt(len(ids), [(local[a], local[b], s) for a, b, s in inside]) if ids else []
    return out, ids, limit


def boot_data():
    """40 matches among 4 participants (fixed list, outcomes chosen by hand to be uneven)."""
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    pattern = {(0, 1): [W, W, L, W, D, W, L], (0, 2): [W, L, W, W, D, W, W],
               (0, 3): [W, W, W, L, W, D, W], (1, 2): [W, L, D, W, L, W],
               (1, 3): [W, W, L, W, D, W, L], (2, 3): [L, W, W, D, W, L]}
    out = []
    for (a, b) in pairs:
        for k, s in enumerate(pattern[(a, b)]):
            out.append((a, b, s) if k % 2 == 0 else (b, a, 1.0 - s))
    return out


def fmt(xs):
    return "{" + ", ".join("%.10f" % x for x in xs) + "}"


def main():
    r = MT19937_64(5489)
    for _ in range(9999):
        r()
    assert r() == 9981545732273789042, "mt19937_64 self-check failed (C++ standard 26.5.5 p4)"

    print("connected   ", fmt(newton_bt(4, CONNECTED)))
    print("disconnected", fmt(newton_bt(5, DISCONNECTED)))
    print("zero_wins_others_limit", fmt(newton_bt(3, ZERO_WINS_OTHERS)))
    st, r_ids, limit = statuses(8, SEPARABLE)
    print("separable statuses", st, "reference group", r_ids, "limit", fmt(limit))
    print("chain (no reference group): every group a single participant; sources above, sinks below")
    data = boot_data()
    print("boot_data", len(data), "matches:", data)
    print("boot_point", fmt(newton_bt(4, data)))
    ids = ["A", "B", "C", "D"]
    for i, s in enumerate(bootstrap(ids, data, samples=200, seed=7)):
        print("boot %s lo %.10f hi %.10f median %.1f rank [%d, %d] hist %s"
              % (ids[i], s["lo"], s["hi"], s["median"], s["rank_lo"], s["rank_hi"], s["hist"]))


if __name__ == "__main__":
    main()
