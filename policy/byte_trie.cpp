#include "policy/byte_trie.h"

#include <algorithm>
#include <deque>

#include "common/error.h"

namespace spade::policy {

int32_t ByteTrie::child(int32_t node, uint8_t byte) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), byte,
                             [](const std::pair<uint8_t, int32_t>& e, uint8_t b) { return e.first < b; });
  return it != next.end() && it->first == byte ? it->second : -1;
}

void ByteTrie::add(const std::string& bytes, int32_t value) {
  if (bytes.empty()) throw spade::Error("ByteTrie::add: empty pattern");
  if (value < 0) throw spade::Error("ByteTrie::add: negative value");
  int32_t node = 0;
  for (char ch : bytes) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t next = child(node, b);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      nodes_.back().depth = nodes_[node].depth + 1;
      auto& edges = nodes_[node].next;
      edges.insert(std::upper_bound(edges.begin(), edges.end(), std::make_pair(b, int32_t{-1}),
                                    [](const auto& x, const auto& y) { return x.first < y.first; }),
                   {b, next});
    }
    node = next;
  }
  if (nodes_[node].value < 0) nodes_[node].value = value;
  max_length_ = std::max(max_length_, bytes.size());
}

void ByteTrie::build() {
  // Breadth-first: a node's failure link is the deepest proper suffix node, found from its parent's.
  std::deque<int32_t> queue;
  for (const auto& [b, c] : nodes_[0].next) {
    nodes_[c].fail = 0;
    queue.push_back(c);
  }
  while (!queue.empty()) {
    const int32_t node = queue.front();
    queue.pop_front();
    const int32_t f = nodes_[node].fail;
    nodes_[node].output = nodes_[f].value >= 0 ? f : nodes_[f].output;
    for (const auto& [b, c] : nodes_[node].next) {
      int32_t s = f;
      while (s != 0 && child(s, b) < 0) s = nodes_[s].fail;
      const int32_t t = child(s, b);
      nodes_[c].fail = (t >= 0 && t != c) ? t : 0;
      queue.push_back(c);
    }
  }
}

ByteTrie::Match ByteTrie::find(const std::string& text, size_t from) const {
  Match best;
  int32_t state = 0;
  for (size_t i = from; i < text.size(); ++i) {
    // A match that starts at or before best.start ends before best.start + max_length_.
    if (best.value >= 0 && i >= best.start + max_length_) break;
    const auto b = static_cast<uint8_t>(text[i]);
    while (state != 0 && child(state, b) < 0) state = nodes_[state].fail;
    const int32_t next = child(state, b);
    state = next < 0 ? 0 : next;
    // Every pattern ending at i: this node's, then those along the output links.
    for (int32_t o = nodes_[state].value >= 0 ? state : nodes_[state].output; o > 0; o = nodes_[o].output) {
      const size_t length = static_cast<size_t>(nodes_[o].depth), start = i + 1 - length;
      if (best.value < 0 || start < best.start || (start == best.start && length > best.length))
        best = {start, length, nodes_[o].value};
    }
  }
  return best;
}

}  // namespace spade::policy
