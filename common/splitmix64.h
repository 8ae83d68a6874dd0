// splitmix64 (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators"): one step of
// the generator, used as a 64-bit mixing function (seed derivation, hash finalising). Header-only.
#pragma once
#include <cstdint>

namespace spade {

/// splitmix64 of x: x + 0x9E3779B97F4A7C15 (the golden gamma), then the two xor-shift-multiply rounds
/// and a final xor-shift. A bijection on 64-bit values whose every output bit depends on every input bit.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace spade
