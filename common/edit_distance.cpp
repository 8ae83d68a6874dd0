#include "common/edit_distance.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace spade {

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j] = distance between the first i bytes of a and the first j bytes of b; three rows are
  // enough (the swap looks two rows back).
  const size_t n = a.size(), m = b.size();
  std::vector<size_t> two_back(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      const size_t substitution = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], two_back[j - 2] + 1);
    }
    std::swap(two_back, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::string> closest_match(std::string_view typed, const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates)
    if (equal_ignoring_case(typed, c)) return c;
  const size_t threshold = std::max<size_t>(typed.size(), 3) / 3;
  size_t best = std::numeric_limits<size_t>::max();
  const std::string* found = nullptr;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best) {
      best = d;
      found = &c;
    }
  }
  if (found == nullptr || best > threshold) return std::nullopt;
  return *found;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates) {
  const std::optional<std::string> m = closest_match(typed, candidates);
  return m ? "; did you mean '" + *m + "'?" : "";
}

}  // namespace spade
