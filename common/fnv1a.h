// FNV-1a, 64-bit (Fowler, Noll, Vo; the parameters of draft-eastlake-fnv and of the authors' reference
// code): offset basis 14695981039346656037, prime 1099511628211. Header-only, thread-safe (pure).
// Used for content hashes that land in files (rollouts.h5 env_source_hash) and, finalised with
// splitmix64, for reset seeds. Not a cryptographic hash.
#pragma once
#include <cstdint>
#include <string_view>

namespace spade {

constexpr uint64_t kFnv1aOffsetBasis64 = 14695981039346656037ULL;
constexpr uint64_t kFnv1aPrime64 = 1099511628211ULL;

/// FNV-1a of the bytes of s: h = basis; for each byte b: h = (h xor b) * prime (mod 2^64).
constexpr uint64_t fnv1a64(std::string_view s) {
  uint64_t h = kFnv1aOffsetBasis64;
  for (unsigned char c : s) h = (h ^ c) * kFnv1aPrime64;
  return h;
}

}  // namespace spade
