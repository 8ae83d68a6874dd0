// C function table exported by the spm_shim shared library (see spm_shim.cpp for why it exists).
// Strings returned as char* (errors, pieces, decoded text) and int* id arrays are malloc'ed: release
// them with free_buf. Error-returning functions return nullptr on success.
#pragma once
#include <cstddef>

#define SPM_API_VERSION 1

extern "C" {
struct SpmApi {
  int version;
  void* (*create)();
  void (*destroy)(void* h);
  void (*free_buf)(void* p);
  char* (*load)(void* h, const char* path);
  char* (*encode)(void* h, const char* text, size_t len, int** ids, size_t* n);
  char* (*decode)(void* h, const int* ids, size_t n, char** out, size_t* out_len);
  int (*piece_size)(void* h);
  int (*piece_to_id)(void* h, const char* piece);
  char* (*id_to_piece)(void* h, int id);
  int (*kind)(void* h, int id);        // 0 normal, 1 control, 2 unknown, 3 byte, 4 unused
  int (*special)(void* h, int which);  // 0 unk, 1 bos, 2 eos, 3 pad
  char* (*train)(const char* const* keys, const char* const* values, size_t nkw, const char* const* lines,
                 size_t nlines);       // lines == nullptr: kwargs name the input files
};
}
