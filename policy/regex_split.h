// RegexSplitter: HF tokenizers' `Split` pre-tokenizer (pre_tokenizers/split.rs) on raw UTF-8 bytes,
// with the pattern compiled by PCRE2 in UTF mode with Unicode properties (PCRE2_UTF | PCRE2_UCP), so
// \p{L}, \p{N}, \s and (?i:...) follow Unicode as HF's Rust regex (Oniguruma in older releases) does.
// Torch-free. Thread safety: split()/matches() are const and safe to call concurrently (the compiled
// pattern is shared read-only; match data is per call).
//
// \s and \S are compiled as the Unicode White_Space set (with_oniguruma_classes below), which is what
// HF's engines match: PCRE2's own \s under PCRE2_UCP (\p{Z} + \h + \v) also matches U+180E MONGOLIAN
// VOWEL SEPARATOR, not White_Space since Unicode 6.3 (HF tokenizers 0.23.2 keeps "!\u180e!" one piece).
// Remaining known difference: \p{L} / \p{N} follow the Unicode version of the system's PCRE2 (Debian 12's
// 10.42: Unicode 14), HF's Oniguruma may know newer characters. Text that is not valid UTF-8 (which HF never
// sees: its input is a Rust &str) is matched with PCRE2_MATCH_INVALID_UTF: no pattern item matches an
// invalid byte, so invalid bytes end up in the unmatched gaps.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spade::policy {

/// Pre-tokenizer regexes as published in the models' tokenizer.json ("pre_tokenizer" -> "Split" ->
/// "pattern" -> "Regex"), written here as C++ raw strings (JSON's "\\p" is the regex \p).
/// Qwen2 / Qwen2.5 / Qwen3 (Qwen/Qwen2.5-7B tokenizer.json): digits one at a time (\p{N}).
inline constexpr const char* kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// Llama 3 / 3.1 / 3.2 (meta-llama/Meta-Llama-3-8B tokenizer.json, tiktoken's cl100k_base pattern):
/// digits in runs of at most three (\p{N}{1,3}).
inline constexpr const char* kLlama3SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// GPT-2: what HF's ByteLevel pre-tokenizer applies itself when "use_regex" is true
/// (pre_tokenizers/byte_level.rs; OpenAI gpt-2 encoder.py).
inline constexpr const char* kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// `pattern` with the escapes whose classes differ between PCRE2 (with PCRE2_UCP) and Oniguruma, HF
/// tokenizers' regex engine, spelled out as Oniguruma's classes:
///   \s: the Unicode White_Space code points (U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
///       U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000; Unicode PropList.txt);
///   \w: \p{L}\p{M}\p{N}\p{Pc} (Oniguruma doc/RE; PCRE2 leaves out marks and most of Pc);
/// each as `[...]` outside a character class and as the bare members inside one; \S and \W outside a
/// class become `[^...]`; \b and \B outside a class become lookaround on that \w. \S and \W inside a
/// class, and anything in \Q...\E, are left as written (PCRE2's meaning). Other escapes (including
/// "\\s", an escaped backslash and a letter) are unchanged. RegexSplitter applies it to every regex.
std::string with_oniguruma_classes(const std::string& pattern);

/// What Split does with the matches (HF SplitDelimiterBehavior, JSON "behavior").
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

/// "Removed" | "Isolated" | "MergedWithPrevious" | "MergedWithNext" | "Contiguous" -> the enum.
/// Throws spade::Error naming `where` (file and JSON field) for any other name.
SplitBehavior parse_split_behavior(const std::string& name, const std::string& where);

class RegexSplitter {
 public:
  /// Compiles `pattern` (a regex, or a literal string when `literal`; HF's {"String": ...} patterns).
  /// `invert` swaps matches and gaps, as HF's "invert". Throws spade::Error naming `where` and the
  /// PCRE2 message and offset when the pattern does not compile.
  RegexSplitter(const std::string& pattern, SplitBehavior behavior, bool invert, bool literal,
                const std::string& where);

  /// Byte ranges [begin, end) of the non-overlapping, leftmost-first matches of the pattern in `text`,
  /// in order, as HF's iteration (the onig crate's find_iter): an empty match is kept unless it ends
  /// where the previous match ended. Throws spade::Error if PCRE2 reports a matching error.
  std::vector<std::pair<size_t, size_t>> matches(const std::string& text) const;

  /// The pieces of `text` after the split (never empty strings), following HF's split.rs: the text is cut
  /// into matches and the gaps between them, then `behavior` drops or merges the matches.
  /// With kIsolated and no invert, concatenating the pieces gives `text` back.
  std::vector<std::string> split(const std::string& text) const;

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8
  SplitBehavior behavior_;
  bool invert_;
  std::string where_;
};

}  // namespace spade::policy
