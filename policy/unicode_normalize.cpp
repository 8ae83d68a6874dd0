#include "policy/unicode_normalize.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "common/error.h"
#include "policy/byte_level.h"

namespace spade::policy {
namespace {

const UNormalizer2* instance(UnicodeForm form) {
  UErrorCode st = U_ZERO_ERROR;
  const UNormalizer2* n = nullptr;
  switch (form) {
    case UnicodeForm::kNFC: n = unorm2_getNFCInstance(&st); break;
    case UnicodeForm::kNFD: n = unorm2_getNFDInstance(&st); break;
    case UnicodeForm::kNFKC: n = unorm2_getNFKCInstance(&st); break;
    case UnicodeForm::kNFKD: n = unorm2_getNFKDInstance(&st); break;
  }
  if (U_FAILURE(st) || !n) throw spade::Error(std::string("unicode_normalize: ICU normalizer unavailable: ") + u_errorName(st));
  return n;
}

void check(UErrorCode st, const char* what) {
  if (U_FAILURE(st)) throw spade::Error(std::string("unicode_normalize: ICU ") + what + " failed: " + u_errorName(st));
}

// Normalizes one run of valid UTF-8.
std::string normalize_valid(const std::string& s, const UNormalizer2* norm) {
  bool ascii = true;
  for (unsigned char c : s) ascii = ascii && c < 0x80;
  if (ascii) return s;
  UErrorCode st = U_ZERO_ERROR;
  int32_t len16 = 0;
  u_strFromUTF8(nullptr, 0, &len16, s.data(), static_cast<int32_t>(s.size()), &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) st = U_ZERO_ERROR;
  check(st, "UTF-8 to UTF-16");
  std::vector<UChar> src(len16 + 1);
  u_strFromUTF8(src.data(), len16 + 1, nullptr, s.data(), static_cast<int32_t>(s.size()), &st);
  check(st, "UTF-8 to UTF-16");
  if (unorm2_isNormalized(norm, src.data(), len16, &st) && U_SUCCESS(st)) return s;
  st = U_ZERO_ERROR;
  const int32_t need = unorm2_normalize(norm, src.data(), len16, nullptr, 0, &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) st = U_ZERO_ERROR;
  check(st, "normalize");
  std::vector<UChar> dst(need + 1);
  unorm2_normalize(norm, src.data(), len16, dst.data(), need + 1, &st);
  check(st, "normalize");
  int32_t len8 = 0;
  u_strToUTF8(nullptr, 0, &len8, dst.data(), need, &st);
  if (st == U_BUFFER_OVERFLOW_ERROR) st = U_ZERO_ERROR;
  check(st, "UTF-16 to UTF-8");
  std::string out(len8, '\0');
  u_strToUTF8(out.data(), len8, nullptr, dst.data(), need, &st);
  if (st == U_STRING_NOT_TERMINATED_WARNING) st = U_ZERO_ERROR;
  check(st, "UTF-16 to UTF-8");
  return out;
}

}  // namespace

UnicodeForm parse_unicode_form(const std::string& name, const std::string& where) {
  if (name == "NFC") return UnicodeForm::kNFC;
  if (name == "NFD") return UnicodeForm::kNFD;
  if (name == "NFKC") return UnicodeForm::kNFKC;
  if (name == "NFKD") return UnicodeForm::kNFKD;
  throw spade::Error(where + ": unsupported normalizer '" + name + "' (supported: NFC, NFD, NFKC, NFKD, Sequence of these)");
}

std::string unicode_normalize(const std::string& text, UnicodeForm form) {
  const UNormalizer2* norm = instance(form);
  std::string out;
  out.reserve(text.size());
  size_t i = 0, run = 0;  // run: start of the current valid run
  while (i < text.size()) {
    int32_t cp;
    const int len = byte_level::utf8_next(text, i, cp);
    if (cp < 0) {
      out += normalize_valid(text.substr(run, i - run), norm);
      out += text[i];
      run = i + 1;
    }
    i += len;
  }
  out += normalize_valid(text.substr(run), norm);
  return out;
}

}  // namespace spade::policy
