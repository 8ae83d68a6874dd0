// Small string utilities shared by parsers (torch-free).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace spade {

/// Strips ASCII whitespace from both ends.
std::string trim(std::string_view s);

/// Splits on a single character; empty fields are kept.
std::vector<std::string> split(std::string_view s, char sep);

/// True if `s` starts / ends with `prefix` / `suffix`.
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

/// Counts whitespace-separated words.
size_t count_words(std::string_view s);

/// Keeps the first `max_words` words of `s` (whitespace runs collapsed to one space inside the kept
/// part) and appends `marker` when anything was cut. Reference: reference §6 (docs/sources.md)
/// ("truncated to N words with a marker").
std::string truncate_words(std::string_view s, size_t max_words, std::string_view marker);

/// Truncates to at most `max_bytes` bytes without splitting a UTF-8 sequence.
std::string truncate_utf8(std::string_view s, size_t max_bytes);

/// `s` with every occurrence of `from` replaced by `to`, scanning left to right without overlaps (as
/// Python's str.replace and HF tokenizers' Replace with a String pattern). An empty `from` returns `s`.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to);

/// True if `s` is valid UTF-8.
bool is_valid_utf8(std::string_view s);

}  // namespace spade
