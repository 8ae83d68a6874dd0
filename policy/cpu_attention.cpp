// Decode-step attention kernel (cpu_attention.h), written once over a GCC/Clang vector type of W
// floats and compiled at each ISA's native width: on x86-64 16 lanes with AVX-512F, 8 with AVX2+FMA,
// 4 (SSE2) otherwise, chosen once at run time from the CPU's features (__builtin_cpu_supports). A
// vector wider than the ISA's registers is not an option: without AVX-512, GCC 12 lowers the compares
// and selects of a 16-float vector to one scalar instruction per lane (measured 4x slower than the
// BLAS path this replaces on an AVX2 build; review of 2026-11-30). Elsewhere (e.g. aarch64) the
// 4-lane version is compiled for the baseline ISA.
#include "policy/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__FAST_MATH__)
#error "policy/cpu_attention.cpp needs IEEE float semantics (its exp rounds with the 1.5 * 2^23 trick): no -ffast-math"
#endif

#define SPADE_INLINE inline __attribute__((always_inline))

namespace spade::policy::cpu {

namespace {

// Vector types of W floats and W int32. Memory is accessed through load()/store() (memcpy: unaligned
// vector moves), never by dereferencing a vector pointer, so no alignment is assumed.
typedef float f4 __attribute__((vector_size(16)));
typedef float f8 __attribute__((vector_size(32)));
typedef float f16 __attribute__((vector_size(64)));
typedef int32_t i4 __attribute__((vector_size(16)));
typedef int32_t i8 __attribute__((vector_size(32)));
typedef int32_t i16 __attribute__((vector_size(64)));

template <class V>
struct Lanes;
template <>
struct Lanes<f4> {
  static constexpr int64_t W = 4;
  using Int = i4;
};
template <>
struct Lanes<f8> {
  static constexpr int64_t W = 8;
  using Int = i8;
  using Half = f4;
};
template <>
struct Lanes<f16> {
  static constexpr int64_t W = 16;
  using Int = i16;
  using Half = f8;
};

template <class V>
SPADE_INLINE V load(const float* p) {
  V x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
template <class V>
SPADE_INLINE void store(float* p, V x) {
  std::memcpy(p, &x, sizeof x);
}
template <class V>
SPADE_INLINE V splat(float x) {
  return V{} + x;
}

/// Sum of the lanes: halves added until 4 lanes are left (the compiler's extract + add).
template <class V>
SPADE_INLINE float hsum(V x) {
  if constexpr (Lanes<V>::W == 4) {
    return (x[0] + x[2]) + (x[1] + x[3]);
  } else {
    using H = typename Lanes<V>::Half;
    H lo, hi;
    std::memcpy(&lo, &x, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&x) + sizeof lo, sizeof hi);
    return hsum<H>(lo + hi);
  }
}

template <class V>
SPADE_INLINE float hmax(V x) {
  float m = x[0];
  for (int64_t i = 1; i < Lanes<V>::W; ++i) m = std::max(m, x[i]);
  return m;
}

/// exp of W lanes (cpu_attention.h): Cephes expf's range reduction x = n ln2 + r and degree-6
/// polynomial, 2^n through the exponent bits. x < -87.33654 (result < 2^-126): 0; x above the largest
/// float with a finite exp: +inf; NaN: NaN.
template <class V>
SPADE_INLINE V exp_v(V x) {
  using I = typename Lanes<V>::Int;
  // lo: exp(lo) = FLT_MIN (2^-126); hi: the largest float whose exp is finite (the next one,
  // 88.72283935546875, is above log(FLT_MAX) = 88.722839052...).
  const V lo = splat<V>(-87.33654f), hi = splat<V>(88.72283172607421875f);
  const I underflow = x < lo, overflow = x > hi;
  V c = x < lo ? lo : x;
  c = c > hi ? hi : c;
  // n = round(c / ln2) by adding and subtracting 1.5 * 2^23 (round-to-nearest-even; |c / ln2| < 2^22).
  const V magic = splat<V>(12582912.0f);
  const V n = (c * 1.44269504088896341f + magic) - magic;
  const V r = (c - n * 0.693359375f) - n * -2.12194440e-4f;  // Cody-Waite: ln2 = C1 + C2
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n as two factors 2^(n - h) * 2^h (h = n / 2), each within the normal exponent range, so that
  // n = 128 (x up to 88.72, result up to FLT_MAX) does not overflow the exponent field.
  const I ni = __builtin_convertvector(n, I);
  const I h = ni >> 1;
  const I b1 = (ni - h + 127) << 23, b2 = (h + 127) << 23;
  V s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  const V y = (p * s1) * s2;
  const V inf = splat<V>(std::numeric_limits<float>::infinity());
  const V y1 = underflow ? splat<V>(0.0f) : y;
  return overflow ? inf : y1;
}

/// exp of n floats, the vector loop plus one padded vector for the tail (the same numbers in every
/// position, whatever n).
template <class V>
SPADE_INLINE void exp_n(const float* x, int64_t n, float* out) {
  constexpr int64_t W = Lanes<V>::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) store<V>(out + i, exp_v<V>(load<V>(x + i)));
  if (i < n) {
    float buf[W];
    for (int64_t j = 0; j < W; ++j) buf[j] = i + j < n ? x[i + j] : 0.0f;
    const V e = exp_v<V>(load<V>(buf));
    for (int64_t j = 0; i + j < n; ++j) out[i + j] = e[j];
  }
}

template <class V>
SPADE_INLINE void softmax_impl(float* s, int64_t n) {
  constexpr int64_t W = Lanes<V>::W;
  V mv = splat<V>(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const V x = load<V>(s + i);
    mv = x > mv ? x : mv;
  }
  float m = hmax<V>(mv);
  for (; i < n; ++i) m = std::max(m, s[i]);
  for (i = 0; i + W <= n; i += W) store<V>(s + i, load<V>(s + i) - m);
  for (; i < n; ++i) s[i] -= m;
  exp_n<V>(s, n, s);
  V sv{};
  for (i = 0; i + W <= n; i += W) sv += load<V>(s + i);
  float sum = hsum<V>(sv);
  for (; i < n; ++i) sum += s[i];
  const float inv = 1.0f / sum;
  for (i = 0; i + W <= n; i += W) store<V>(s + i, load<V>(s + i) * inv);
  for (; i < n; ++i) s[i] *= inv;
}

template <class V>
SPADE_INLINE void attend_impl(const float* q, const float* k, const float* v, const bool* mask, int64_t g, int64_t d,
                              int64_t S, float scale, float* scores, float* out) {
  constexpr int64_t W = Lanes<V>::W;
  const int64_t dv = d - d % W;  // vectorised part of each row
  // Leading padding (a short row left-padded in a batch of longer ones) is skipped outright: its
  // probabilities are exactly 0, so the cost follows the row's own length, not the batch's.
  int64_t first = 0;
  if (mask)
    while (first + 1 < S && !mask[first]) ++first;
  for (int64_t r = 0; r < g; ++r) std::fill(scores + r * S, scores + r * S + first, 0.0f);
  // 1. scores[r, t] = scale * q_r . k_t: each key row is read once for all g query rows.
  for (int64_t t = first; t < S; ++t) {
    const float* kt = k + t * d;
    for (int64_t r = 0; r < g; ++r) {
      const float* qr = q + r * d;
      V acc{};
      for (int64_t c = 0; c < dv; c += W) acc += load<V>(qr + c) * load<V>(kt + c);
      float dot = hsum<V>(acc);
      for (int64_t c = dv; c < d; ++c) dot += qr[c] * kt[c];
      scores[r * S + t] = dot * scale;
    }
  }
  // 2. Padding slots get -inf (never the newest slot), then the fp32 softmax of each row.
  for (int64_t r = 0; r < g; ++r) {
    float* s = scores + r * S;
    if (mask)
      for (int64_t t = first; t + 1 < S; ++t)
        if (!mask[t]) s[t] = -std::numeric_limits<float>::infinity();
    softmax_impl<V>(s + first, S - first);
  }
  // 3. out[r] = sum_t p[r, t] v_t: each value row is read once for all g rows (axpy form, no
  // horizontal sums); slots of probability 0 (masked) are skipped.
  std::fill(out, out + g * d, 0.0f);
  for (int64_t t = first; t < S; ++t) {
    const float* vt = v + t * d;
    for (int64_t r = 0; r < g; ++r) {
      const float p = scores[r * S + t];
      if (p == 0.0f) continue;
      float* o = out + r * d;
      const V pv = splat<V>(p);
      for (int64_t c = 0; c < dv; c += W) store<V>(o + c, load<V>(o + c) + pv * load<V>(vt + c));
      for (int64_t c = dv; c < d; ++c) o[c] += p * vt[c];
    }
  }
}

// ---- One instantiation per ISA, and the dispatch. -------------------------------------------------

struct Kernels {
  void (*attend)(const float*, const float*, const float*, const bool*, int64_t, int64_t, int64_t, float, float*,
                 float*);
  void (*softmax)(float*, int64_t);
  void (*exp)(const float*, int64_t, float*);
};

#define SPADE_KERNELS(SUFFIX, TARGET, V)                                                                     \
  TARGET void attend_##SUFFIX(const float* q, const float* k, const float* v, const bool* mask, int64_t g,   \
                              int64_t d, int64_t S, float scale, float* scores, float* out) {                \
    attend_impl<V>(q, k, v, mask, g, d, S, scale, scores, out);                                              \
  }                                                                                                          \
  TARGET void softmax_##SUFFIX(float* s, int64_t n) { softmax_impl<V>(s, n); }                               \
  TARGET void exp_##SUFFIX(const float* x, int64_t n, float* out) { exp_n<V>(x, n, out); }                   \
  constexpr Kernels kKernels_##SUFFIX = {attend_##SUFFIX, softmax_##SUFFIX, exp_##SUFFIX};

SPADE_KERNELS(base, , f4)
#if defined(__x86_64__) && defined(__GNUC__)
SPADE_KERNELS(avx2, __attribute__((target("avx2,fma"))), f8)
SPADE_KERNELS(avx512, __attribute__((target("avx512f"))), f16)
#endif

/// The kernels of `isa` ("base", "avx2", "avx512") if this CPU runs them, else nullptr.
const Kernels* variant(const std::string& isa) {
  if (isa == "base") return &kKernels_base;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (isa == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kKernels_avx2;
  if (isa == "avx512" && __builtin_cpu_supports("avx512f")) return &kKernels_avx512;
#endif
  return nullptr;
}

const Kernels& checked_variant(const std::string& isa) {
  const Kernels* k = variant(isa);
  if (!k) throw std::invalid_argument("policy::cpu: ISA variant '" + isa + "' is unknown or not supported by this CPU");
  return *k;
}

/// The widest variant this CPU runs, chosen once.
const Kernels& kernels() {
  static const Kernels& chosen = [&]() -> const Kernels& {
    for (const char* isa : {"avx512", "avx2"})
      if (const Kernels* k = variant(isa)) return *k;
    return kKernels_base;
  }();
  return chosen;
}

}  // namespace

void attend_group(const float* q, const float* k, const float* v, const bool* mask, int64_t g, int64_t d, int64_t S,
                  float scale, float* scores, float* out) {
  kernels().attend(q, k, v, mask, g, d, S, scale, scores, out);
}

void softmax_inplace(float* s, int64_t n) { kernels().softmax(s, n); }

void exp_f32(const float* x, int64_t n, float* out) { kernels().exp(x, n, out); }

namespace testing {

std::vector<std::string> isa_variants() {
  std::vector<std::string> out;
  for (const char* isa : {"base", "avx2", "avx512"})
    if (variant(isa)) out.push_back(isa);
  return out;
}

void attend_group(const std::string& isa, const float* q, const float* k, const float* v, const bool* mask, int64_t g,
                  int64_t d, int64_t S, float scale, float* scores, float* out) {
  checked_variant(isa).attend(q, k, v, mask, g, d, S, scale, scores, out);
}

void softmax_inplace(const std::string& isa, float* s, int64_t n) { checked_variant(isa).softmax(s, n); }

void exp_f32(const std::string& isa, const float* x, int64_t n, float* out) { checked_variant(isa).exp(x, n, out); }

}  // namespace testing

}  // namespace spade::policy::cpu
