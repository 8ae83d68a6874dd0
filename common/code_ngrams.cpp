#include "common/code_ngrams.h"

#include <cmath>

namespace spade {

namespace {

bool word_start(unsigned char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool word_char(unsigned char c) { return word_start(c) || digit(c); }
bool space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

double norm(const std::map<std::string, double>& v) {
  double s = 0;
  for (const auto& [gram, n] : v) s += n * n;
  return std::sqrt(s);
}

}  // namespace

std::vector<std::string> code_tokens(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = text.size();
  const auto at = [&](size_t j) { return static_cast<unsigned char>(text[j]); };
  while (i < n) {
    const unsigned char c = at(i);
    size_t j = i + 1;
    if (space(c)) {
      i = j;
      continue;
    }
    if (word_start(c)) {
      while (j < n && word_char(at(j))) ++j;
    } else if (digit(c)) {
      while (j < n && (word_char(at(j)) || at(j) == '.')) ++j;
    } else if (c >= 0x80) {
      while (j < n && at(j) >= 0x80) ++j;
    }
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::map<std::string, double> code_ngram_counts(const std::string& text) {
  const std::vector<std::string> tokens = code_tokens(text);
  std::map<std::string, double> counts;
  const auto gram = [&](size_t from, size_t len) {
    std::string g;
    for (size_t t = from; t < from + len; ++t) g += (t > from ? "\x1f" : "") + tokens[t];
    return g;
  };
  if (tokens.empty()) return counts;
  if (tokens.size() < static_cast<size_t>(kCodeNgram)) {
    counts[gram(0, tokens.size())] = 1;
    return counts;
  }
  for (size_t i = 0; i + kCodeNgram <= tokens.size(); ++i) counts[gram(i, kCodeNgram)] += 1;
  return counts;
}

double cosine_similarity(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty() ? 1.0 : 0.0;
  const std::map<std::string, double>& small = a.size() <= b.size() ? a : b;
  const std::map<std::string, double>& large = a.size() <= b.size() ? b : a;
  double dot = 0;
  for (const auto& [gram, n] : small) {
    const auto it = large.find(gram);
    if (it != large.end()) dot += n * it->second;
  }
  return dot / (norm(a) * norm(b));
}

std::vector<double> code_similarity_matrix(const std::vector<std::string>& texts) {
  std::vector<std::map<std::string, double>> features;
  for (const std::string& t : texts) features.push_back(code_ngram_counts(t));
  const size_t n = texts.size();
  std::vector<double> k(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    k[i * n + i] = 1;
    for (size_t j = i + 1; j < n; ++j) k[i * n + j] = k[j * n + i] = cosine_similarity(features[i], features[j]);
  }
  return k;
}

}  // namespace spade
