// ByteTrie: an Aho-Corasick automaton over byte strings with leftmost-longest search, the match kind
// (aho-corasick crate MatchKind::LeftmostLongest) that HF tokenizers' AddedVocabulary uses to find added
// tokens in a text (tokenizer/added_vocabulary.rs). One pass over the text finds the next match among
// all patterns, where a find() per pattern costs a pass each (Gemma 3 has 6415 added tokens).
// Torch-free. Thread safety: immutable after build(); find() is const and reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace spade::policy {

class ByteTrie {
 public:
  /// One occurrence: bytes [start, start + length) of the text, and the value of its pattern.
  struct Match {
    size_t start = 0, length = 0;
    int32_t value = -1;  // -1: no match
  };

  /// Adds pattern `bytes` (non-empty) with `value` >= 0. A pattern added twice keeps its first value.
  /// Must come before build(). Throws spade::Error for an empty pattern or a negative value.
  void add(const std::string& bytes, int32_t value);

  /// Computes the failure and output links (breadth-first over the trie). Call once, after the add()s.
  void build();

  /// The leftmost-longest occurrence of any pattern that starts at or after byte `from` of `text`:
  /// the smallest start, and among occurrences with that start the longest. value -1 when there is
  /// none. Cost: one pass from `from` to the match's start plus at most the longest pattern's length.
  Match find(const std::string& text, size_t from) const;

  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // byte -> child, sorted by byte
    int32_t fail = 0;    // longest proper suffix of this node's string that is a trie node
    int32_t output = -1; // nearest node on the failure chain (this one excluded) that ends a pattern
    int32_t value = -1;  // the pattern ending here (-1: none)
    int32_t depth = 0;   // length of this node's string
  };
  int32_t child(int32_t node, uint8_t byte) const;  // -1 if absent
  std::vector<Node> nodes_ = std::vector<Node>(1);  // nodes_[0]: the root (empty string)
  size_t max_length_ = 0;
};

}  // namespace spade::policy
