// BpeModel: the "model" part of a BPE tokenizer.json (HF tokenizers models/bpe): a vocabulary and a
// ranked merge list, applied to one pre-token at a time. Merging (merge_all) follows HF's
// Word::merge_all: repeatedly merge the adjacent pair with the lowest merge rank (the leftmost one among
// equal ranks), using a min-heap over (rank, position) and a linked list of symbols, so a word of n
// symbols costs O(n log n), not O(n^2) rescans. merge_all is shared by both flavours; what the initial
// symbols are differs: byte-level BPE (Qwen, Llama 3) spells pieces in GPT-2's byte alphabet
// (policy/byte_level.h) and starts from one symbol per byte (encode_word); SentencePiece-style BPE
// (Llama 2, Mistral, Gemma) spells pieces as plain UTF-8 and starts from one symbol per character, with
// byte fallback (policy/sp_bpe_model.h).
// Torch-free. Thread safety: immutable after construction; encode_word() is const and reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spade::policy {

/// How vocabulary pieces are spelled.
enum class BpeSpelling {
  kByteLevel,  // GPT-2 byte alphabet: bytes(id) decodes it; encode_word works on raw bytes
  kText,       // plain UTF-8 (SentencePiece-style): bytes(id) is the piece itself; encode_word throws
};

class BpeModel {
 public:
  /// `vocab`: byte-level-spelled piece -> id (ids >= 0; gaps allowed). `merges`: (left, right) pieces in
  /// rank order (rank = index, lower merges first). `ignore_merges` (Llama 3): a pre-token that is itself
  /// in the vocabulary becomes that one id without merging (HF BPE "ignore_merges"). `unk_id` >= 0 is
  /// used for a byte whose one-character piece is missing from the vocabulary (-1: such a byte throws
  /// at encode time; HF would silently drop it). `where` names the file for errors. `spelling`: see
  /// BpeSpelling (kText: `ignore_merges` and `unk_id` are unused here; policy/sp_bpe_model.h applies them).
  /// Throws spade::Error naming `where` and the merge index when a merge's left, right or merged piece
  /// is not in the vocabulary, or for an id that is negative or above vocab.size() + kMaxIdGap.
  BpeModel(std::unordered_map<std::string, int64_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges, int64_t unk_id,
           const std::string& where, BpeSpelling spelling = BpeSpelling::kByteLevel);

  /// Byte-level spelling only: appends the ids of one pre-token given as raw bytes (not byte-level
  /// spelled). Empty input appends nothing. Throws spade::Error naming the byte when it has no piece and
  /// there is no unk id, or when the model is BpeSpelling::kText.
  void encode_word(const std::string& bytes, std::vector<int64_t>& out) const;

  /// The merge loop alone (HF Word::merge_all without dropout): `symbols` (vocabulary ids, the initial
  /// symbols of one word) is replaced by the ids after applying every possible merge, lowest rank first.
  void merge_all(std::vector<int64_t>& symbols) const;

  /// Id of the vocabulary piece `piece`, or -1.
  int64_t find(const std::string& piece) const {
    auto it = vocab_.find(piece);
    return it == vocab_.end() ? -1 : it->second;
  }

  /// Piece -> id map (byte-level spelling).
  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
  /// One more than the largest vocabulary id (0 when empty).
  int64_t id_end() const { return static_cast<int64_t>(pieces_.size()); }
  /// Byte-level spelling of `id`, or nullptr for an id that is not in the vocabulary.
  const std::string* piece(int64_t id) const;
  /// Raw bytes `id` stands for (kByteLevel: the piece through byte_level::decode; kText: the piece), or
  /// nullptr when not in the vocabulary.
  const std::string* bytes(int64_t id) const;
  size_t num_merges() const { return merges_.size(); }

  /// Largest tolerated excess of an id over the number of pieces (gaps in the ids; per-id tables).
  static constexpr int64_t kMaxIdGap = int64_t{1} << 20;

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
  BpeSpelling spelling_;
};

}  // namespace spade::policy
