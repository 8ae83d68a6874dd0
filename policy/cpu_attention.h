// Decode-step attention on the CPU (issue 4): the query rows of one KV head against its cached keys and
// values, fused into two passes over the cache, with a vectorised softmax. Plain C++ (no LibTorch):
// transformer_decode.cpp calls it once per (sequence, kv head) pair.
//
// Why not BLAS: a decode step's attention is a pair of [g, S] x [S, d] products per (row, kv head) with
// g = query heads per kv head (2-8) and d = head_dim (64-128). OpenBLAS 0.3.21 packs (copies) the
// whole [S, d] key block for such a product or, as matrix-vector products, reads it once per query
// row, and glibc's scalar expf makes the softmax ~25% of the step; this kernel reads each key and value
// once for all g rows and computes exp 16 lanes at a time. Measured on the 2-vCPU bench machine, one
// thread, g = 2, S = 640, d = 64, cache out of cache: 8.0 GB/s (BLAS sgemm), 8.5 GB/s (sgemv per row),
// 12.5 GB/s (this kernel with scalar expf), 17 GB/s (scores and P.V alone); bench/RESULTS.md.
#pragma once

#include <cstdint>

namespace spade::policy::cpu {

/// Attention of g query rows that share one KV head, in fp32.
///   q       [g, d]  query rows (RoPE and any q-norm already applied), row-major.
///   k, v    [S, d]  cached keys and values of this (sequence, kv head), row-major, contiguous.
///   mask    [S] or null: slot t is attended iff mask[t] (null: every slot). The last slot (S - 1, the
///           token being decoded) is always attended, whatever mask says, so no row is all -inf.
///   scale   multiplier of q.k (1/sqrt(head_dim) for HF llama/qwen: modeling_llama eager_attention).
///   scores  [g, S] scratch, overwritten with the attention probabilities.
///   out     [g, d] receives softmax(scale * q k^T) v.
/// Any d >= 1 and S >= 1 (vector loops over 16 lanes, scalar tails). Numerics: the fp32 softmax of HF
/// (max-subtracted; exp of this file's exp16, |rel err| <= 2e-7 vs std::exp); only summation order
/// differs from the ATen path. Threads: none (callers split pairs across threads).
void attend_group(const float* q, const float* k, const float* v, const bool* mask, int64_t g, int64_t d,
                  int64_t S, float scale, float* scores, float* out);

/// In-place softmax over s[n] in fp32 (entries of -inf get probability exactly 0; at least one entry
/// must be finite). exp is computed 16 lanes at a time: x = n ln2 + r, |r| <= ln2/2, exp(r) by the
/// degree-6 Cephes expf polynomial (S. Moshier, Cephes Math Library, expf.c: <= 1-2 ulp on its range),
/// scaled by 2^n through the exponent bits; arguments below -87.3 (exp < 2^-126) give 0.
void softmax_inplace(float* s, int64_t n);

/// exp of n floats, out-of-place (out may equal x), with softmax_inplace's exp (for tests and reuse).
void exp_f32(const float* x, int64_t n, float* out);

}  // namespace spade::policy::cpu
