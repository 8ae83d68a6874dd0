// AddedVocabulary: the "added_tokens" of a Hugging Face tokenizer.json and how encoding cuts them out of
// the raw text before anything else (HF tokenizers' AddedVocabulary, tokenizer/added_vocabulary.rs),
// shared by both BPE flavours (policy/bpe_tokenizer.h, policy/sp_bpe_tokenizer.h). Torch-free.
// Thread safety: immutable after construction; all methods const and reentrant.
//
// Matching (split()), as HF's find_matches: the non-overlapping leftmost-longest matches of all
// candidate tokens, in order (policy/byte_trie.h: one Aho-Corasick pass). Tokens with "special": true are
// only candidates when parse_special is true; tokens with "special": false always (HF does the same:
// they are vocabulary words). A "single_word" match with a word character (HF's regex \w: letters,
// marks, decimal digits, '_' and other connector punctuation, ZWJ/ZWNJ) on either side is discarded and
// its bytes stay ordinary text (the search goes on after it, as HF's). "lstrip"/"rstrip" absorb the
// whitespace beside a kept match (HF's regex \s: Unicode White_Space, NBSP and U+3000 too); the search
// goes on at the match's own end, so tokens inside whitespace an rstrip token absorbed are found too.
// A content listed twice keeps its first entry (id and flags).
// "normalized" is not used: every token is matched in the raw text. HF matches normalized=false tokens
// there too, but normalized=true ones in the normalized text (after normalizing their content); every
// added token of the real files tested (Qwen2.5, Qwen3, Llama 3, Mistral v0.1, Gemma 3) is normalized=false.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/byte_trie.h"

namespace spade::policy {

/// One entry of tokenizer.json "added_tokens".
struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false;
};

class AddedVocabulary {
 public:
  /// A piece of the text: [begin, end) bytes, and the added token's id (-1: ordinary text to tokenize).
  struct Segment {
    size_t begin, end;
    int64_t added_id;
  };

  AddedVocabulary() = default;
  /// Parses tokenizer.json "added_tokens" (an array, or null = none); `where` (e.g. "F.json: added_tokens")
  /// prefixes errors. Throws spade::Error naming the entry for an entry without a non-negative integer
  /// "id" or a non-empty string "content", an id above `max_id` (callers: the model's id_end() +
  /// BpeModel::kMaxIdGap, so vocab_size() stays near the real vocabulary), or a non-boolean flag.
  AddedVocabulary(const nlohmann::json& added_tokens, const std::string& where, int64_t max_id);

  /// Cuts `text` into segments in order (see the file comment); their concatenation is `text` except for
  /// the whitespace that lstrip/rstrip tokens absorb, and for tokens found inside whitespace an rstrip
  /// token absorbed: as in HF, their segments overlap the rstrip token's.
  std::vector<Segment> split(const std::string& text, bool parse_special) const;

  /// Encodes `text` around the added tokens: each added token cut out by split() becomes its id; every
  /// other segment is passed as encode_segment(segment_text, segment_starts_the_text, out) to append
  /// its ids to `out`. Returns the ids in order.
  template <class EncodeSegment>
  std::vector<int64_t> encode(const std::string& text, bool parse_special, EncodeSegment&& encode_segment) const {
    std::vector<int64_t> out;
    out.reserve(text.size() / 3 + 1);
    for (const Segment& seg : split(text, parse_special)) {
      if (seg.added_id >= 0) out.push_back(seg.added_id);
      else encode_segment(text.substr(seg.begin, seg.end - seg.begin), seg.begin == 0, out);
    }
    return out;
  }

  /// Id of the token whose content is `content`, or -1.
  int64_t id_of(const std::string& content) const;
  /// The token with id `id`, or nullptr.
  const AddedToken* token(int64_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  /// One more than the largest id (0 when there are none).
  int64_t id_end() const;

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, int64_t> by_content_;
  std::unordered_map<int64_t, size_t> by_id_;  // id -> index in tokens_
  ByteTrie all_, non_special_;                 // contents -> index in tokens_ (parse_special or not)
};

}  // namespace spade::policy
