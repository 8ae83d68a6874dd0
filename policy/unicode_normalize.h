// Unicode normalization (NFC / NFD / NFKC / NFKD, Unicode Standard Annex #15) of UTF-8 text, for
// tokenizer.json "normalizer" entries (Qwen2/2.5/3 use {"type": "NFC"}). Implemented with ICU's
// Normalizer2 (Debian libicu-dev). Torch-free. Thread safety: stateless; safe to call concurrently.
#pragma once

#include <string>

namespace spade::policy {

enum class UnicodeForm { kNFC, kNFD, kNFKC, kNFKD };

/// "NFC" | "NFD" | "NFKC" | "NFKD" -> the form; throws spade::Error naming `where` for anything else.
UnicodeForm parse_unicode_form(const std::string& name, const std::string& where);

/// `text` in normalization form `form`. Maximal runs of valid UTF-8 are normalized independently;
/// bytes that are not valid UTF-8 are kept as they are (HF never sees such bytes: its input is a Rust
/// &str). ASCII-only runs are returned unchanged without calling ICU (ASCII is invariant under all four
/// forms). Throws spade::Error if ICU reports a failure (e.g. its data cannot be loaded).
std::string unicode_normalize(const std::string& text, UnicodeForm form);

}  // namespace spade::policy
