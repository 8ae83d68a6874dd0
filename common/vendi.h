// The Vendi score (Friedman & Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
// Learning", TMLR 2023, Def. 3.1): for n items and a positive semi-definite similarity matrix K with
// K[i][i] = 1, VS = exp(-sum_i lambda_i ln lambda_i) over the eigenvalues lambda_i of K / n (0 ln 0 =
// 0): the exponential of the Shannon entropy of those eigenvalues, "the effective number of distinct
// items". 1 when all items are identical (K all ones), n when they are pairwise dissimilar (K = I).
// Torch-free; pure, thread-safe.
#pragma once
#include <vector>

namespace spade {

/// The Vendi score of the n x n similarity matrix `k` (row-major). Eigenvalues by
/// symmetric_eigenvalues (common/symmetric_eigenvalues.h); the tiny negative ones rounding leaves in a
/// PSD matrix count as 0. Returns a value in [1, n]. Throws spade::Error for n < 1, a size other than
/// n * n, a diagonal entry other than 1 (within 1e-9), an asymmetric or non-finite matrix.
double vendi_score(const std::vector<double>& k, int n);

}  // namespace spade
