// BpeModel: the "model" part of a byte-level BPE tokenizer.json (HF tokenizers models/bpe): a vocabulary
// of byte-level-spelled pieces (see policy/byte_level.h) and a ranked merge list, applied to one
// pre-token at a time. Merging follows HF's Word::merge_all: repeatedly merge the adjacent pair with the
// lowest merge rank (the leftmost one among equal ranks), using a min-heap over (rank, position) and a
// linked list of symbols, so a word of n bytes costs O(n log n), not O(n^2) rescans.
// Torch-free. Thread safety: immutable after construction; encode_word() is const and reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spade::policy {

class BpeModel {
 public:
  /// `vocab`: byte-level-spelled piece -> id (ids >= 0; gaps allowed). `merges`: (left, right) pieces in
  /// rank order (rank = index, lower merges first). `ignore_merges` (Llama 3): a pre-token that is itself
  /// in the vocabulary becomes that one id without merging (HF BPE "ignore_merges"). `unk_id` >= 0 is
  /// used for a byte whose one-character piece is missing from the vocabulary (-1: such a byte throws
  /// at encode time; HF would silently drop it). `where` names the file for errors.
  /// Throws spade::Error naming `where` and the merge index when a merge's left, right or merged piece
  /// is not in the vocabulary, or for a negative id.
  BpeModel(std::unordered_map<std::string, int64_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges, int64_t unk_id,
           const std::string& where);

  /// Appends the ids of one pre-token given as raw bytes (not byte-level spelled). Empty input appends
  /// nothing. Throws spade::Error naming the byte when it has no piece and there is no unk id.
  void encode_word(const std::string& bytes, std::vector<int64_t>& out) const;

  /// Piece -> id map (byte-level spelling).
  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
  /// One more than the largest vocabulary id (0 when empty).
  int64_t id_end() const { return static_cast<int64_t>(pieces_.size()); }
  /// Byte-level spelling of `id`, or nullptr for an id that is not in the vocabulary.
  const std::string* piece(int64_t id) const;
  /// Raw bytes `id` stands for (the piece through byte_level::decode), or nullptr when not in the vocabulary.
  const std::string* bytes(int64_t id) const;
  size_t num_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int64_t id;
  };
  static uint64_t key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> pieces_;   // by id ("" for a gap: has_[id] false)
  std::vector<std::string> bytes_;    // by id
  std::vector<char> has_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, merged id
  int64_t byte_id_[256];                        // id of each byte's one-character piece, or -1
  bool ignore_merges_;
  int64_t unk_id_;
};

}  // namespace spade::policy
