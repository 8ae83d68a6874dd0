// Eigenvalues of a small real symmetric matrix by the cyclic Jacobi method (Jacobi 1846; Golub & Van
// Loan, "Matrix Computations", 4th ed., §8.5.2 and §8.5.3): plane rotations each zero one
// off-diagonal entry; sweeps over every (p, q) pair repeat until the off-diagonal Frobenius norm is
// below 1e-14 of the matrix's (quadratic convergence: about 6 to 10 sweeps for n <= 100). O(n^3) per
// sweep: meant for the n <= a few hundred of a generation's programs. Torch-free; pure, thread-safe.
#pragma once
#include <vector>

namespace spade {

/// The n eigenvalues, ascending, of the symmetric n x n matrix `a` (row-major, a.size() == n * n).
/// Throws spade::Error when a.size() is not n * n, an entry is not finite, or a is not symmetric
/// (|a[i][j] - a[j][i]| > 1e-9 * (1 + |a[i][j]|)). n == 0 gives an empty vector.
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int n);

}  // namespace spade
