#!/usr/bin/env python3
# Independent TrueSkill 1-vs-1 reference for tests/evaldual/test_ratings_trueskill.cpp and
# test_ratings_rankings.cpp (Herbrich, Minka, Graepel 2007; defaults of the `trueskill` package).
# Run: python3 tests/evaldual/reference/trueskill_ref.py
from statistics import NormalDist
import math
N0 = NormalDist()
class _N:
    pdf = staticmethod(N0.pdf)
    inv_cdf = staticmethod(N0.inv_cdf)
    # erfc form: NormalDist.cdf's 1 + erf(x) loses all digits below about -8
    cdf = staticmethod(lambda x: 0.5 * math.erfc(-x / math.sqrt(2)))
N = _N()
mu0, s0 = 25.0, 25.0/3
beta, tau, p = s0/2, s0/100, 0.10
eps = N.inv_cdf((p+1)/2) * math.sqrt(2) * beta
def vw_win(t, e):
    x = t - e; v = N.pdf(x)/N.cdf(x); return v, v*(v+x)
def vw_draw(t, e):
    d = N.cdf(e-t) - N.cdf(-e-t)
    v = (N.pdf(-e-t) - N.pdf(e-t))/d
    w = v*v + ((e-t)*N.pdf(e-t) + (e+t)*N.pdf(e+t))/d
    return v, w
def rate(a, b, score_a):
    (ma, sa), (mb, sb) = a, b
    va2, vb2 = sa*sa + tau*tau, sb*sb + tau*tau
    c = math.sqrt(2*beta*beta + va2 + vb2)
    if score_a == 0.5:
        v, w = vw_draw((ma-mb)/c, eps/c); sign = 1
    elif score_a == 1:
        v, w = vw_win((ma-mb)/c, eps/c); sign = 1
    else:
        v, w = vw_win((mb-ma)/c, eps/c); sign = -1
    ma2 = ma + sign*va2/c*v; mb2 = mb - sign*vb2/c*v
    sa2 = math.sqrt(va2*(1 - va2/(c*c)*w)); sb2 = math.sqrt(vb2*(1 - vb2/(c*c)*w))
    return (ma2, sa2), (mb2, sb2)
print("eps", repr(eps))
d = (mu0, s0)
w, l = rate(d, d, 1.0); print("win", w, l)
x, y = rate(d, d, 0.5); print("draw", x, y)
# second match: previous winner loses to a fresh player
w2, f2 = rate(w, d, 0.0); print("second (winner loses to fresh)", w2, f2)
# sequence a beats b, b draws c, c beats a, n=3
r = [d, d, d]
for a, b, s in [(0,1,1.0),(1,2,0.5),(2,0,1.0)]:
    r[a], r[b] = rate(r[a], r[b], s)
for i, x in enumerate(r): print("seq", i, repr(x[0]), repr(x[1]), repr(x[0]-3*x[1]))
# rankings test sequence: ids A#mini=0, B#mini=1, C=2, D#idle=3
r = [d, d, d, d]
for a, b, s in [(0,1,1.0),(1,2,0.5),(2,0,0.0),(2,1,1.0)]:
    r[a], r[b] = rate(r[a], r[b], s)
for i, x in enumerate(r): print("rk", i, repr(x[0]), repr(x[1]), repr(x[0]-3*x[1]))
# upset: (mu 0, sigma 1) beats (mu 50, sigma 1)
print("upset", rate((0.0,1.0),(50.0,1.0),1.0))
