#include "common/fnv1a.h"

#include <gtest/gtest.h>

// Expected values: the published FNV-1a 64-bit test vectors (Landon Curt Noll's FNV page, "test
// vectors", and draft-eastlake-fnv appendix C): "" -> the offset basis, "a" -> 0xaf63dc4c8601ec8c,
// "foobar" -> 0x85944171f73967e8.
TEST(Fnv1a, PublishedTestVectors) {
  EXPECT_EQ(spade::fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(spade::fnv1a64(""), 14695981039346656037ULL);
  EXPECT_EQ(spade::fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(spade::fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

// Bytes >= 0x80 are taken unsigned: "\xff" = (basis ^ 0xff) * prime mod 2^64, by hand from the definition.
TEST(Fnv1a, HighBytesAreUnsigned) {
  const uint64_t expected = (14695981039346656037ULL ^ 0xffULL) * 1099511628211ULL;
  EXPECT_EQ(spade::fnv1a64("\xff"), expected);
}
