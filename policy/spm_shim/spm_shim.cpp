// spm_shim: SentencePiece behind a C table of functions, built as its own shared library and opened by
// policy/tokenizer.cpp with dlopen(RTLD_LOCAL | RTLD_DEEPBIND).
//
// Why: Debian's libsentencepiece embeds (and exports) its own protobuf-lite, while Debian's LibTorch
// pulls in the system libprotobuf. Linked into one executable, libprotobuf's static initialisers bind to
// libsentencepiece's copies of protobuf internals and the process crashes before main(). Loaded locally
// with deep binding, SentencePiece resolves to its own protobuf and the two never meet.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "policy/spm_shim/spm_api.h"

namespace {

char* dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

using SP = sentencepiece::SentencePieceProcessor;
SP* sp(void* h) { return static_cast<SP*>(h); }

class LinesIterator : public sentencepiece::SentenceIterator {
 public:
  LinesIterator(const char* const* lines, size_t n) : lines_(lines), n_(n) { load(); }
  bool done() const override { return i_ >= n_; }
  void Next() override { ++i_; load(); }
  const std::string& value() const override { return cur_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  void load() { if (i_ < n_) cur_ = lines_[i_]; }
  const char* const* lines_;
  size_t n_, i_ = 0;
  std::string cur_;
};

void* p_new() { return new SP(); }
void p_free(void* h) { delete sp(h); }
void p_free_buf(void* p) { std::free(p); }
char* p_load(void* h, const char* path) {
  auto st = sp(h)->Load(path);
  return st.ok() ? nullptr : dup(st.ToString());
}
char* p_encode(void* h, const char* text, size_t len, int** ids, size_t* n) {
  std::vector<int> v;
  auto st = sp(h)->Encode(std::string(text, len), &v);
  if (!st.ok()) return dup(st.ToString());
  *n = v.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (v.empty() ? 1 : v.size())));
  if (!v.empty()) std::memcpy(*ids, v.data(), sizeof(int) * v.size());
  return nullptr;
}
char* p_decode(void* h, const int* ids, size_t n, char** out, size_t* out_len) {
  std::string s;
  auto st = sp(h)->Decode(std::vector<int>(ids, ids + n), &s);
  if (!st.ok()) return dup(st.ToString());
  *out = dup(s);
  *out_len = s.size();
  return nullptr;
}
int p_piece_size(void* h) { return sp(h)->GetPieceSize(); }
int p_piece_to_id(void* h, const char* piece) { return sp(h)->PieceToId(piece); }
char* p_id_to_piece(void* h, int id) { return dup(sp(h)->IdToPiece(id)); }
int p_kind(void* h, int id) {  // 0 normal, 1 control, 2 unknown, 3 byte, 4 unused
  if (sp(h)->IsControl(id)) return 1;
  if (sp(h)->IsUnknown(id)) return 2;
  if (sp(h)->IsByte(id)) return 3;
  if (sp(h)->IsUnused(id)) return 4;
  return 0;
}
int p_special(void* h, int which) {
  switch (which) {
    case 0: return sp(h)->unk_id();
    case 1: return sp(h)->bos_id();
    case 2: return sp(h)->eos_id();
    default: return sp(h)->pad_id();
  }
}
char* p_train(const char* const* keys, const char* const* values, size_t nkw, const char* const* lines, size_t nlines) {
  std::unordered_map<std::string, std::string> kw;
  for (size_t i = 0; i < nkw; ++i) kw[keys[i]] = values[i];
  sentencepiece::util::Status st;
  if (lines) {
    LinesIterator it(lines, nlines);
    st = sentencepiece::SentencePieceTrainer::Train(kw, &it);
  } else {
    st = sentencepiece::SentencePieceTrainer::Train(kw);
  }
  return st.ok() ? nullptr : dup(st.ToString());
}

const SpmApi kApi = {SPM_API_VERSION, p_new, p_free, p_free_buf, p_load, p_encode, p_decode, p_piece_size,
                     p_piece_to_id, p_id_to_piece, p_kind, p_special, p_train};

}  // namespace

extern "C" __attribute__((visibility("default"))) const SpmApi* spade_spm_api() { return &kApi; }
