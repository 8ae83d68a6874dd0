// Decode-step attention on the CPU (issue 4): the query rows of one KV head against its cached keys and
// values, fused into two passes over the cache, with a vectorised softmax. Plain C++ (no LibTorch):
// transformer_decode.cpp calls it once per (sequence, kv head) pair.
//
// Why not BLAS: a decode step's attention is a pair of [g, S] x [S, d] products per (row, kv head) with
// g = query heads per kv head (2-8) and d = head_dim (64-128). OpenBLAS 0.3.21 packs (copies) the
// whole [S, d] key block for such a product or, as matrix-vector products, reads it once per query
// row, and glibc's scalar expf makes the softmax ~25% of the step; this kernel reads each key and value
// once for all g rows and computes exp a vector at a time. Measured on the 2-vCPU bench machine, one
// thread, g = 2, S = 640, d = 64, cache out of cache: 8.0 GB/s (BLAS sgemm), 8.5 GB/s (sgemv per row),
// 12.5 GB/s (this kernel with scalar expf), 13.1-13.3 GB/s (this kernel); bench/RESULTS.md.
//
// The code is compiled per ISA at its native vector width (x86-64: AVX-512F 16 lanes, AVX2+FMA 8,
// SSE2 4; other CPUs: 4 lanes of the baseline ISA) and the widest the CPU supports is used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spade::policy::cpu {

/// Attention of g query rows that share one KV head, in fp32.
///   q       [g, d]  query rows (RoPE and any q-norm already applied), row-major.
///   k, v    [S, d]  cached keys and values of this (sequence, kv head), row-major, contiguous.
///   mask    [S] or null: slot t is attended iff mask[t] (null: every slot). The last slot (S - 1, the
///           token being decoded) is always attended, whatever mask says, so no row is all -inf.
///   scale   multiplier of q.k (1/sqrt(head_dim) for HF llama/qwen: modeling_llama eager_attention).
///   scores  [g, S] scratch, overwritten with the attention probabilities.
///   out     [g, d] receives softmax(scale * q k^T) v.
/// scores and out must not overlap q, k, v or each other. Any d >= 1 and S >= 1; no alignment needed.
/// Numerics: HF's fp32 softmax (max-subtracted) and products, up to summation order, exp_f32's exp
/// (<= ~1 ulp from std::exp), probabilities below 2^-126 flushed to 0, and slots of probability 0
/// skipped in the P.V sum (so a NaN or inf in a masked slot's value does not reach the output, where
/// a dense product would give 0 * NaN = NaN). Leading masked slots are not read at all (their
/// probability is set to 0): a row left-padded in a batch of longer rows costs O(its own length). Threads: none (callers split pairs across threads).
void attend_group(const float* q, const float* k, const float* v, const bool* mask, int64_t g, int64_t d,
                  int64_t S, float scale, float* scores, float* out);

/// In-place softmax over s[n] in fp32, with exp_f32's exp (entries of -inf get probability exactly 0;
/// at least one entry must be finite, else the row is NaN).
void softmax_inplace(float* s, int64_t n);

/// exp of n floats (out may equal x), a vector at a time: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite),
/// exp(r) by the degree-6 polynomial of Cephes expf (S. Moshier, Cephes Math Library, expf.c), times
/// 2^n through the exponent bits. Within 3e-7 relative of std::exp where the result is a normal float;
/// 0 for x < -87.33654 (results below 2^-126, where std::exp returns subnormals), +inf above
/// 88.7228317 (the largest float with a finite exp), NaN for NaN. The same value for an input
/// whatever its position (the tail is padded to a full vector).
void exp_f32(const float* x, int64_t n, float* out);

/// Each ISA variant called directly, for tests (every variant the machine runs must agree).
namespace testing {
/// The variants this CPU runs, narrowest first: "base", then "avx2", "avx512" where supported.
std::vector<std::string> isa_variants();
/// attend_group / softmax_inplace / exp_f32 of one variant. Throw std::invalid_argument for a
/// variant that is unknown or not supported by this CPU.
void attend_group(const std::string& isa, const float* q, const float* k, const float* v, const bool* mask, int64_t g,
                  int64_t d, int64_t S, float scale, float* scores, float* out);
void softmax_inplace(const std::string& isa, float* s, int64_t n);
void exp_f32(const std::string& isa, const float* x, int64_t n, float* out);
}  // namespace testing

}  // namespace spade::policy::cpu
