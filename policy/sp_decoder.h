// SpDecoder: the "decoder" of a SentencePiece-style tokenizer.json, turning token strings (vocabulary
// pieces and added-token contents, in id order) back into text. Follows HF tokenizers' decoders
// (decoders/*.rs): each step maps the list of token strings to a new list (decode_chain), the steps run
// in order, and the final list is concatenated:
//   Replace {pattern {"String": a}, content b}: every a -> b in each token (Llama 2: "▁" -> " ");
//   ByteFallback: runs of consecutive byte tokens "<0xXX>" (hex, either case) become the string of their
//     bytes when that is valid UTF-8, else one U+FFFD per byte;
//   Fuse: all tokens joined into one;
//   Strip {content c, start n, stop m}: up to n leading and m trailing characters c removed from each
//     token (Llama 2: one leading space, the one the Prepend normalizer added);
//   Metaspace {replacement r, prepend_scheme}: r -> ' ' in each token, except that in the first token r is
//     dropped unless prepend_scheme is "never" (older files: add_prefix_space true/false = always/never);
//   Sequence of these.
// A null decoder joins the tokens with " " (HF's default). Torch-free.
// Thread safety: immutable after construction; decode() is const and reentrant.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace spade::policy {

class SpDecoder {
 public:
  /// Parses tokenizer.json "decoder" (an object or null); `where` (e.g. "F.json: decoder") prefixes
  /// errors. Throws spade::Error naming the JSON path for another decoder type (ByteLevel, WordPiece, ...),
  /// a Replace whose pattern is not {"String": ...}, a Strip content that is not one character, or a
  /// missing or mistyped field.
  SpDecoder(const nlohmann::json& decoder, const std::string& where);
  /// The null decoder.
  SpDecoder() : null_(true) {}

  /// The text of `tokens` (see the file comment).
  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct Step {
    enum Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind = kFuse;
    std::string from, to;         // kReplace; kStrip: from = the character; kMetaspace: from = replacement
    size_t start = 0, stop = 0;   // kStrip
    bool drop_first = false;      // kMetaspace: prepend_scheme != never
  };
  void parse(const nlohmann::json& d, const std::string& where);
  std::vector<Step> steps_;
  bool null_ = false;
};

}  // namespace spade::policy
