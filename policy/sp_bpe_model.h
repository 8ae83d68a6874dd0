// SpBpeModel: the "model" of a SentencePiece-style BPE tokenizer.json (what HF's LlamaConverter /
// GemmaConverter write for Llama 2, Mistral, Gemma): pieces spelled as plain UTF-8 (the space being
// "▁" U+2581 after normalization), merged over the whole normalized text. Follows HF tokenizers'
// BPE::merge_word (models/bpe/model.rs):
//   - the initial symbols are the characters of the text; a character that is a vocabulary piece is that
//     id;
//   - a character that is not: with byte_fallback, the ids of the byte pieces "<0xXX>" (uppercase hex) of
//     each of its UTF-8 bytes, when all of them are in the vocabulary; otherwise the unk id, and with
//     fuse_unk consecutive unknown characters become one unk (without an unk_token HF drops the character,
//     and so does this; a byte-fallback character does not end a run of unknowns, as in HF);
//   - then BpeModel::merge_all (the merge machinery shared with byte-level BPE, policy/bpe_model.h).
// With ignore_merges, a text that is itself a piece is that one id. Bytes that are not valid UTF-8 are
// one-byte characters (HF's input is always valid UTF-8).
// Torch-free. Thread safety: immutable after construction; encode() is const and reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/bpe_model.h"
#include "policy/tokenizer_json.h"

namespace spade::policy {

class SpBpeModel {
 public:
  /// model.byte_fallback / fuse_unk / ignore_merges of tokenizer.json (HF defaults: all false).
  struct Options {
    bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  };

  /// `parts` from tokenizer_json::parse_bpe_model; `where` names the file for errors. Throws spade::Error
  /// as BpeModel's constructor does (a merge whose pieces are not in the vocabulary, an id out of range).
  SpBpeModel(tokenizer_json::BpeModelParts parts, const Options& options, const std::string& where);

  /// Appends the ids of one pre-token (normalized UTF-8 text, "▁" for spaces); "" appends nothing.
  void encode(const std::string& text, std::vector<int64_t>& out) const;

  /// Id of the byte piece "<0xXX>" of `b`, or -1 when the vocabulary has none.
  int64_t byte_piece_id(uint8_t b) const { return byte_id_[b]; }
  int64_t unk_id() const { return unk_id_; }
  const Options& options() const { return options_; }
  const BpeModel& model() const { return model_; }

 private:
  BpeModel model_;
  Options options_;
  int64_t unk_id_;
  int64_t byte_id_[256];
};

}  // namespace spade::policy
