#include <gtest/gtest.h>

#include "common/strings.h"

using namespace spade;

TEST(Strings, TruncateWordsKeepsFirstWordsAndAddsMarker) {
  // 5 words, cap 3: by hand, "a b c" + marker.
  EXPECT_EQ(truncate_words("a b  c d e", 3, " [...]"), "a b c [...]");
  EXPECT_EQ(truncate_words("a b", 3, " [...]"), "a b");
  EXPECT_EQ(count_words("  one two\nthree "), 3u);
}

TEST(Strings, Utf8) {
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo"));
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  // "é" is 2 bytes: cutting at 2 bytes of "hé" must not split it.
  EXPECT_EQ(truncate_utf8("h\xc3\xa9", 2), "h");
}

TEST(Strings, ReplaceAllScansLeftToRightWithoutOverlaps) {
  // Python's str.replace gives the same: "aaaa".replace("aa", "b") == "bb", "aaa" -> "ba".
  EXPECT_EQ(replace_all("aaaa", "aa", "b"), "bb");
  EXPECT_EQ(replace_all("aaa", "aa", "b"), "ba");
  EXPECT_EQ(replace_all("a b  c", " ", "\xe2\x96\x81"), "a\xe2\x96\x81" "b\xe2\x96\x81\xe2\x96\x81" "c");  // " " -> "▁"
  EXPECT_EQ(replace_all("abc", "", "x"), "abc");  // empty pattern: unchanged (never loops)
  EXPECT_EQ(replace_all("", "a", "b"), "");
}
