// Reading Hugging Face tokenizer.json files: the JSON helpers and parts shared by both BPE flavours
// (byte-level: policy/bpe_tokenizer.h; SentencePiece-style: policy/sp_bpe_tokenizer.h), and the choice
// between them. Torch-free. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace spade::policy {

/// Token ids named by the model's config files; -1 = not given.
struct BpeSpecialIds {
  int64_t bos = -1, eos = -1, pad = -1;
};

namespace tokenizer_json {

/// Parses `text`; throws spade::Error "<where>: invalid JSON: ..." on a syntax error, and "<where>: JSON
/// nested deeper than 128 levels under \"<top-level key>\"" for deeper arrays/objects (serde_json's limit,
/// which HF's loader has too; nlohmann's dump() and copies recurse per level and would overflow the stack).
nlohmann::json parse(const std::string& text, const std::string& where);

/// Largest tokenizer.json / tokenizer_config.json read, in bytes: 1 GiB (the largest public one we know,
/// Gemma 3's tokenizer.json, is 33 MB). A bound, so that a path to an endless file (/dev/zero, a pipe)
/// is an error instead of a hang.
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

/// Reads and parses the file `path` (as parse()); throws spade::Error naming `path` when it does not
/// exist, cannot be read, exceeds kMaxFileBytes, is not JSON or is nested too deep.
nlohmann::json read(const std::string& path);

/// j["type"] of an object; throws spade::Error "<where>: expected an object with a string \"type\"".
std::string type_of(const nlohmann::json& j, const std::string& where);

/// j[key] as a bool; `fallback` when absent or null. Throws spade::Error "<where>.<key>: expected true or
/// false" for another type.
bool get_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);

/// The parts of a "model" object of type BPE that both flavours read.
struct BpeModelParts {
  std::unordered_map<std::string, int64_t> vocab;            // model.vocab: piece -> id
  std::vector<std::pair<std::string, std::string>> merges;   // model.merges in rank order
  int64_t unk_id = -1;                                       // id of model.unk_token, -1 when null
};

/// Reads model.vocab, model.merges (each "left right" or ["left", "right"]) and model.unk_token of the
/// tokenizer.json object `j`; `where` is the file name. Throws spade::Error naming the file and the field
/// for: no "model" object; model.type other than "BPE"; missing or malformed vocab or merges; an unk_token
/// that is not in the vocabulary; model.continuing_subword_prefix or end_of_word_suffix set (neither
/// flavour has them).
BpeModelParts parse_bpe_model(const nlohmann::json& j, const std::string& where);

/// True when the tokenizer.json `j` is a SentencePiece-style BPE, the form HF's LlamaConverter /
/// GemmaConverter write for Llama 2, Mistral, Gemma, TinyLlama: model.byte_fallback true, or a Metaspace
/// pre-tokenizer or decoder, or a Prepend normalizer; it is loaded by SpBpeTokenizer. Anything else goes
/// to BpeTokenizer (byte-level BPE), which reports what it does not support.
bool is_sentencepiece_style(const nlohmann::json& j);

/// The special ids of the tokenizer file at `path`, from the files beside it: tokenizer_config.json
/// "bos_token" / "eos_token" / "pad_token" (a string, or an object with "content"; null = not set), each
/// converted with `token_id` (which throws spade::Error for an unknown token); for one not set there,
/// config.json "bos_token_id" / "eos_token_id" (an int, or a list whose first entry is used) /
/// "pad_token_id". Ids not given anywhere stay -1. Throws spade::Error naming the file and key for
/// unreadable or bad JSON, or a token string that is not a token of `path`.
BpeSpecialIds read_special_ids(const std::string& path, const std::function<int64_t(const std::string&)>& token_id);

}  // namespace tokenizer_json
}  // namespace spade::policy
