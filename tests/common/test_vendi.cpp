// common/symmetric_eigenvalues.h, common/code_ngrams.h and common/vendi.h against values worked out by
// hand in the comments (eigenvalues of small matrices in closed form, cosines of counted n-grams, and
// Vendi scores as exp of an entropy written out term by term).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/code_ngrams.h"
#include "common/error.h"
#include "common/symmetric_eigenvalues.h"
#include "common/vendi.h"

namespace spade {
namespace {

TEST(SymmetricEigenvalues, ClosedFormMatrices) {
  // [[2,1,0],[1,2,0],[0,0,3]]: the 2 x 2 block [[2,1],[1,2]] has 2 - 1 and 2 + 1; the third is 3.
  std::vector<double> e = symmetric_eigenvalues({2, 1, 0, 1, 2, 0, 0, 0, 3}, 3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_NEAR(e[0], 1, 1e-12);
  EXPECT_NEAR(e[1], 3, 1e-12);
  EXPECT_NEAR(e[2], 3, 1e-12);
  // The tridiagonal [[2,-1,0],[-1,2,-1],[0,-1,2]]: 2 - 2 cos(k pi / 4), k = 1, 2, 3, i.e. 2 - sqrt 2, 2, 2 + sqrt 2.
  e = symmetric_eigenvalues({2, -1, 0, -1, 2, -1, 0, -1, 2}, 3);
  EXPECT_NEAR(e[0], 2 - std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(e[1], 2, 1e-12);
  EXPECT_NEAR(e[2], 2 + std::sqrt(2.0), 1e-12);
  // All ones (4 x 4): rank one, eigenvalues 0, 0, 0 and the trace 4.
  e = symmetric_eigenvalues(std::vector<double>(16, 1.0), 4);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(e[i], 0, 1e-12);
  EXPECT_NEAR(e[3], 4, 1e-12);
  EXPECT_TRUE(symmetric_eigenvalues({}, 0).empty());
  EXPECT_THROW(symmetric_eigenvalues({1, 2, 3}, 2), Error);        // not 2 x 2
  EXPECT_THROW(symmetric_eigenvalues({1, 2, 0, 1}, 2), Error);     // not symmetric
  EXPECT_THROW(symmetric_eigenvalues({1, NAN, NAN, 1}, 2), Error);  // not finite
}

TEST(Vendi, HandComputedScores) {
  // Two identical items and one unlike both: K = [[1,1,0],[1,1,0],[0,0,1]]. K / 3 has eigenvalues
  // 2/3 (the block of ones [[1,1],[1,1]] / 3 has 2/3 and 0), 1/3 and 0, so
  // VS = exp(-(2/3 ln 2/3 + 1/3 ln 1/3)) = exp(0.2703101 + 0.3662041) = exp(0.6365142) = 1.8898816.
  EXPECT_NEAR(vendi_score({1, 1, 0, 1, 1, 0, 0, 0, 1}, 3), 1.8898816, 1e-6);
  // All identical: K / 3 = ones / 3 has eigenvalues 1, 0, 0: exp(-(1 ln 1)) = 1.
  EXPECT_NEAR(vendi_score(std::vector<double>(9, 1.0), 3), 1, 1e-12);
  // All unlike: K = I, K / 3 has 1/3 three times: exp(-3 (1/3) ln(1/3)) = exp(ln 3) = 3.
  EXPECT_NEAR(vendi_score({1, 0, 0, 0, 1, 0, 0, 0, 1}, 3), 3, 1e-12);
  // Half alike: K = [[1, .5], [.5, 1]], K / 2 has (1 +- .5) / 2 = .75 and .25:
  // exp(-(.75 ln .75 + .25 ln .25)) = exp(0.2157616 + 0.3465736) = exp(0.5623351) = 1.7547654.
  EXPECT_NEAR(vendi_score({1, 0.5, 0.5, 1}, 2), 1.7547654, 1e-6);
  EXPECT_NEAR(vendi_score({1}, 1), 1, 1e-12);
  EXPECT_THROW(vendi_score({}, 0), Error);
  EXPECT_THROW(vendi_score({1, 0, 0, 0.5}, 2), Error);  // diagonal not 1
  EXPECT_THROW(vendi_score({1, 0, 0}, 2), Error);
}

TEST(CodeNgrams, TokensOfAPythonLine) {
  // Words are ASCII: "café" is the word "caf" and the non-ASCII run "é".
  const std::vector<std::string> want = {"def", "f", "(", "x", ")", ":", "return", "x", "*", "*", "2", "+", "0.5",
                                         "#", "caf", "\xC3\xA9"};
  EXPECT_EQ(code_tokens("def f(x):\n    return x**2 + 0.5  # caf\xC3\xA9\n"), want);
  EXPECT_TRUE(code_tokens(" \n\t").empty());
}

TEST(CodeNgrams, CosineOfTrigramCounts) {
  // "x = a + b" has the 3-grams (x = a) (= a +) (a + b); "x = a + c" shares the first two:
  // cosine = 2 / (sqrt 3 sqrt 3) = 2/3.
  EXPECT_NEAR(cosine_similarity(code_ngram_counts("x = a + b"), code_ngram_counts("x = a + c")), 2.0 / 3, 1e-12);
  // Counts, not sets: "a a a a" is (a a a) twice, "a a a" once: parallel vectors, cosine 1; and
  // "a a a a" against "a a a b" ((a a a), (a a b)): 2 / (2 sqrt 2) = 0.7071068.
  EXPECT_EQ(code_ngram_counts("a a a a").at("a\x1f" "a\x1f" "a"), 2);
  EXPECT_NEAR(cosine_similarity(code_ngram_counts("a a a a"), code_ngram_counts("a a a")), 1, 1e-12);
  EXPECT_NEAR(cosine_similarity(code_ngram_counts("a a a a"), code_ngram_counts("a a a b")), 0.7071068, 1e-6);
  // Fewer than 3 tokens: the whole list is the one feature.
  EXPECT_EQ(code_ngram_counts("x y").size(), 1u);
  EXPECT_EQ(cosine_similarity({}, {}), 1);
  EXPECT_EQ(cosine_similarity({}, code_ngram_counts("x y")), 0);
}

TEST(CodeNgrams, ThreeProgramVendiScore) {
  // Two copies of one program and a program sharing none of its token 3-grams: the similarity matrix
  // is exactly [[1,1,0],[1,1,0],[0,0,1]], whose Vendi score is 1.8898816 (worked out in HandComputedScores).
  const std::string guess = "class GuessEnv:\n    def reset(self, seed=None):\n        return 'guess', {}\n";
  const std::string loop = "while True:\n    pass\n";
  const std::vector<double> k = code_similarity_matrix({guess, guess, loop});
  const std::vector<double> want = {1, 1, 0, 1, 1, 0, 0, 0, 1};
  ASSERT_EQ(k.size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(k[i], want[i], 1e-15) << i;
  EXPECT_NEAR(vendi_score(k, 3), 1.8898816, 1e-6);
}

}  // namespace
}  // namespace spade
