// GPT-2's byte-level alphabet: the reversible map between the 256 byte values and 256 printable
// Unicode characters that byte-level BPE vocabularies (GPT-2, Qwen2/2.5/3, Llama 3) are spelled in.
// Source: bytes_to_unicode() in OpenAI's gpt-2 encoder.py, reproduced by HF tokenizers'
// pre_tokenizers/byte_level.rs: the bytes '!'..'~' (33..126), 0xA1..0xAC (161..172) and 0xAE..0xFF
// (174..255) map to the code point of the same value; the other 68 bytes (0..32, 127..160, 173), in
// increasing order, map to U+0100, U+0101, ... (so ' ' = 0x20 -> U+0120 'Ġ', '\n' = 0x0A -> U+010A 'Ċ').
// Torch-free. Thread safety: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <string>

namespace spade::policy::byte_level {

/// Code point that byte `b` is spelled as (see the file comment).
char32_t byte_to_char(uint8_t b);

/// UTF-8 spelling of `bytes` in the byte-level alphabet (each input byte -> one character).
std::string encode(const std::string& bytes);

/// Inverse of encode(): the raw bytes spelled by `text`. A character outside the alphabet (possible in
/// hand-written vocabularies and added tokens) is kept as its own UTF-8 bytes, as HF's ByteLevel decoder
/// does. Invalid UTF-8 in `text` is kept byte for byte.
std::string decode(const std::string& text);

/// Decodes one UTF-8 character of `s` at `pos`; returns its byte length (1..4) and stores the code
/// point in `cp`. An invalid or truncated sequence returns 1 and sets `cp` = -1 (the byte is invalid).
int utf8_next(const std::string& s, size_t pos, int32_t& cp);

/// Appends the UTF-8 encoding of code point `cp` (< 0x110000) to `out`.
void append_utf8(std::string& out, char32_t cp);

}  // namespace spade::policy::byte_level
