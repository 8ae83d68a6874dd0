// Lexical n-gram features of program text, and the cosine similarity of their count vectors: the
// features behind designer/vendi_score (trainer/generation_stats.h). Made for Python programs but
// language-agnostic: a token is
//   - a word: [A-Za-z_][A-Za-z0-9_]* (identifiers and keywords),
//   - a number: [0-9] followed by [A-Za-z0-9_.]* (123, 0.5, 1e3, 0x1f),
//   - a run of non-ASCII bytes (a UTF-8 character or several),
//   - any other single non-whitespace character (operators, brackets, quotes, '#', ':').
// Whitespace (indentation included) separates tokens and is dropped; comments and string contents
// are tokenized like code. Features are token 3-grams (contiguous; a program of 1 or 2 tokens has its
// whole token list as its one feature). Torch-free; pure, thread-safe.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace spade {

/// Tokens per `n` of a feature (token 3-grams).
inline constexpr int kCodeNgram = 3;

/// The tokens of `text` by the rules above, in order.
std::vector<std::string> code_tokens(const std::string& text);

/// Count vector of the token n-grams of `text` (n = kCodeNgram): each n-gram's tokens joined with
/// '\x1f' -> how often it occurs. Empty for an empty or all-whitespace text.
std::map<std::string, double> code_ngram_counts(const std::string& text);

/// Cosine similarity a.b / (|a| |b|) of two count vectors (non-negative counts give [0, 1]). Two empty
/// vectors are identical (1); an empty and a non-empty one share nothing (0). This keeps the
/// similarity matrix of any set of texts positive semi-definite with a unit diagonal.
double cosine_similarity(const std::map<std::string, double>& a, const std::map<std::string, double>& b);

/// The n x n matrix (row-major) of cosine similarities of the texts' code_ngram_counts.
std::vector<double> code_similarity_matrix(const std::vector<std::string>& texts);

}  // namespace spade
