// Decode-step attention kernel (cpu_attention.h). Written with GCC/Clang vector extensions over 16
// floats; on x86-64 each entry point is compiled three times (AVX-512, AVX2+FMA, baseline SSE2) and the
// loader picks the best the CPU has (target_clones, an ifunc), so the binary stays portable.
#include "policy/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && defined(__x86_64__)
#define SPADE_CPU_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define SPADE_CPU_CLONES
#endif
#define SPADE_INLINE inline __attribute__((always_inline))
// The 64-byte vector helpers below are always inlined, so the AVX-512 argument-passing ABI note GCC
// prints for them (-Wpsabi) concerns no real call.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace spade::policy::cpu {

namespace {

typedef float v16 __attribute__((vector_size(64), aligned(4)));    // 16 floats, any alignment
typedef int32_t i16 __attribute__((vector_size(64), aligned(4)));  // 16 int32 (same lanes)

constexpr int64_t kLanes = 16;

SPADE_INLINE v16 load(const float* p) { return *reinterpret_cast<const v16*>(p); }
SPADE_INLINE void store(float* p, v16 x) { *reinterpret_cast<v16*>(p) = x; }
SPADE_INLINE v16 splat(float x) { return v16{} + x; }

#if defined(__clang__)
#define SPADE_SHUFFLE(x, ...) __builtin_shufflevector(x, x, __VA_ARGS__)
#else
#define SPADE_SHUFFLE(x, ...) __builtin_shuffle(x, i16{__VA_ARGS__})
#endif

SPADE_INLINE float hsum(v16 x) {  // a tree of halvings: 4 shuffles and adds
  x += SPADE_SHUFFLE(x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  x += SPADE_SHUFFLE(x, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3);
  x += SPADE_SHUFFLE(x, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1);
  x += SPADE_SHUFFLE(x, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0);
  return x[0];
}

SPADE_INLINE float hmax(v16 x) {
  float m = x[0];
  for (int i = 1; i < kLanes; ++i) m = std::max(m, x[i]);
  return m;
}

/// exp of 16 lanes (cpu_attention.h, softmax_inplace): Cephes expf's range reduction and polynomial.
SPADE_INLINE v16 exp16(v16 x) {
  const v16 lo = splat(-87.33654f), hi = splat(88.37626f);
  const i16 underflow = x < lo;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  // n = round(x / ln2) by the 1.5 * 2^23 trick (round-to-nearest-even, |x / ln2| < 2^22).
  const v16 magic = splat(12582912.0f);
  const v16 n = (x * 1.44269504088896341f + magic) - magic;
  const v16 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // Cody-Waite: ln2 = C1 + C2
  v16 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const i16 bits = (__builtin_convertvector(n, i16) + 127) << 23;  // 2^n (n in [-126, 127])
  v16 two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  const v16 y = p * two_n;
  return underflow ? splat(0.0f) : y;
}

SPADE_INLINE void softmax_body(float* s, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  v16 mv = splat(ninf);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const v16 x = load(s + i);
    mv = x > mv ? x : mv;
  }
  float m = hmax(mv);
  for (; i < n; ++i) m = std::max(m, s[i]);
  v16 sv{};
  i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const v16 e = exp16(load(s + i) - m);
    store(s + i, e);
    sv += e;
  }
  float sum = hsum(sv);
  for (; i < n; ++i) {
    s[i] = s[i] == ninf ? 0.0f : std::exp(s[i] - m);
    sum += s[i];
  }
  const float inv = 1.0f / sum;
  i = 0;
  for (; i + kLanes <= n; i += kLanes) store(s + i, load(s + i) * inv);
  for (; i < n; ++i) s[i] *= inv;
}

}  // namespace

SPADE_CPU_CLONES void exp_f32(const float* x, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(out + i, exp16(load(x + i)));
  for (; i < n; ++i) out[i] = std::exp(x[i]);
}

SPADE_CPU_CLONES void softmax_inplace(float* s, int64_t n) { softmax_body(s, n); }

SPADE_CPU_CLONES void attend_group(const float* q, const float* k, const float* v, const bool* mask, int64_t g,
                                   int64_t d, int64_t S, float scale, float* scores, float* out) {
  const int64_t dv = d - d % kLanes;  // vectorised part of each row
  // 1. scores[r, t] = scale * q_r . k_t: each key row is read once for all g query rows.
  for (int64_t t = 0; t < S; ++t) {
    const float* kt = k + t * d;
    for (int64_t r = 0; r < g; ++r) {
      const float* qr = q + r * d;
      v16 acc{};
      for (int64_t c = 0; c < dv; c += kLanes) acc += load(qr + c) * load(kt + c);
      float dot = hsum(acc);
      for (int64_t c = dv; c < d; ++c) dot += qr[c] * kt[c];
      scores[r * S + t] = dot * scale;
    }
  }
  // 2. Padding slots get -inf (never the newest slot), then the fp32 softmax of each row.
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < g; ++r) {
    float* s = scores + r * S;
    if (mask)
      for (int64_t t = 0; t + 1 < S; ++t)
        if (!mask[t]) s[t] = ninf;
    softmax_body(s, S);
  }
  // 3. out[r] = sum_t p[r, t] v_t: each value row is read once for all g rows (axpy form, no
  // horizontal sums). Rows of out accumulate in place.
  std::fill(out, out + g * d, 0.0f);
  for (int64_t t = 0; t < S; ++t) {
    const float* vt = v + t * d;
    for (int64_t r = 0; r < g; ++r) {
      const float p = scores[r * S + t];
      if (p == 0.0f) continue;  // masked slots
      float* o = out + r * d;
      const v16 pv = splat(p);
      for (int64_t c = 0; c < dv; c += kLanes) store(o + c, load(o + c) + pv * load(vt + c));
      for (int64_t c = dv; c < d; ++c) o[c] += p * vt[c];
    }
  }
}

}  // namespace spade::policy::cpu
