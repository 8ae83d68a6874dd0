// ByteTrie (Aho-Corasick, leftmost-longest) and AddedVocabulary::split's match order, which follows HF
// tokenizers' AddedVocabulary::find_matches (tokenizer/added_vocabulary.rs): non-overlapping
// leftmost-longest matches of all tokens; a single_word match with a word character beside it is
// discarded, and the search goes on after it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "policy/added_tokens.h"
#include "policy/byte_trie.h"

using namespace spade::policy;

namespace {

// The reference: try every start from `from`, then every pattern; keep the smallest start, then the
// longest (brute force, O(text x patterns)). Ties in length keep the pattern added first.
ByteTrie::Match brute_force(const std::vector<std::string>& patterns, const std::string& text, size_t from) {
  for (size_t s = from; s < text.size(); ++s) {
    ByteTrie::Match best;
    for (size_t p = 0; p < patterns.size(); ++p)
      if (text.compare(s, patterns[p].size(), patterns[p]) == 0 && patterns[p].size() > best.length)
        best = {s, patterns[p].size(), static_cast<int32_t>(p)};
    if (best.value >= 0) return best;
  }
  return {};
}

}  // namespace

TEST(ByteTrie, TextbookPatterns) {
  // Aho and Corasick's example set {he, she, his, hers} on "ushers": occurrences she@1, he@2, hers@2.
  // Leftmost-longest from 0 is "she"; from 2 it is "hers" (longer than "he" at the same start).
  ByteTrie t;
  const std::vector<std::string> p = {"he", "she", "his", "hers"};
  for (size_t i = 0; i < p.size(); ++i) t.add(p[i], static_cast<int32_t>(i));
  t.build();
  ByteTrie::Match m = t.find("ushers", 0);
  EXPECT_EQ(m.start, 1u);
  EXPECT_EQ(m.length, 3u);
  EXPECT_EQ(m.value, 1);
  m = t.find("ushers", 2);
  EXPECT_EQ(m.start, 2u);
  EXPECT_EQ(m.value, 3);
  EXPECT_EQ(t.find("ushers", 3).value, -1);
  EXPECT_EQ(t.find("", 0).value, -1);
  EXPECT_THROW(t.add("", 0), spade::Error);
}

TEST(ByteTrie, AgreesWithBruteForceOnRandomPatternSets) {
  // Small alphabets make overlaps, shared prefixes and suffix chains frequent.
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    const int alphabet = 2 + round % 3;
    auto word = [&](int max_len) {
      std::string s(1 + rng() % max_len, 'a');
      for (char& c : s) c = static_cast<char>('a' + rng() % alphabet);
      return s;
    };
    std::vector<std::string> patterns;
    ByteTrie t;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      patterns.push_back(word(5));
      t.add(patterns.back(), i);
    }
    t.build();
    const std::string text = word(40);
    for (size_t from = 0; from <= text.size(); ++from) {
      const ByteTrie::Match want = brute_force(patterns, text, from), got = t.find(text, from);
      ASSERT_EQ(got.value >= 0, want.value >= 0) << text << " from " << from;
      if (want.value < 0) continue;
      EXPECT_EQ(got.start, want.start) << text << " from " << from;
      EXPECT_EQ(got.length, want.length) << text << " from " << from;
      // Equal contents added twice keep the first value; otherwise the pattern is unique by content.
      EXPECT_EQ(patterns[got.value], patterns[want.value]) << text << " from " << from;
    }
  }
}

TEST(AddedVocabulary, RstripWhitespaceCanHoldFurtherTokensAsInHf) {
  // HF's find_matches goes on searching at a match's own end, not after the whitespace rstrip absorbed:
  // a token inside that whitespace is emitted too (segments overlap). Ids from HF tokenizers 0.23.2 on
  // synthetic tokenizer.json files with these flags (a review helper's differential test).
  const AddedVocabulary v(nlohmann::json::parse(R"([{"id":10,"content":"<b>","rstrip":true},
                                                    {"id":11,"content":"  "},
                                                    {"id":12,"content":" x"},
                                                    {"id":13,"content":" <n>","rstrip":true},
                                                    {"id":14,"content":"end","lstrip":true,"rstrip":true,"single_word":true},
                                                    {"id":15,"content":" <d>","lstrip":true}])"),
                          "t.json: added_tokens", 100);
  auto ids = [&](const std::string& s) {
    std::vector<int64_t> out;
    for (const auto& seg : v.split(s, true)) out.push_back(seg.added_id);
    return out;
  };
  EXPECT_EQ(ids("<b>  "), (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(ids("<b>     x"), (std::vector<int64_t>{10, 11, 11, 12}));  // HF offsets [0,8] [3,5] [5,7] [7,9]
  EXPECT_EQ(ids("\u00a0<n>\u00a0<n>"), (std::vector<int64_t>{13, 13}));
  EXPECT_EQ(ids("end <d>"), (std::vector<int64_t>{14, 15}));
  EXPECT_EQ(v.id_of("  "), 11);
}

TEST(AddedVocabulary, DiscardedSingleWordMatchHidesShorterOverlaps) {
  // Tokens "ab" (single_word) and "a". In "xab" the leftmost-longest match is "ab" at 1; 'x' is a word
  // character, so HF discards it and continues after it: "a" is not matched inside it, the whole text is
  // ordinary. In "x ab" the single_word match is kept.
  const AddedVocabulary v(nlohmann::json::parse(R"([{"id":5,"content":"ab","single_word":true},
                                                    {"id":6,"content":"a"}])"),
                          "t.json: added_tokens", 100);
  auto ids = [&](const std::string& s) {
    std::vector<int64_t> out;
    for (const auto& seg : v.split(s, true)) out.push_back(seg.added_id);
    return out;
  };
  EXPECT_EQ(ids("xab"), (std::vector<int64_t>{-1}));
  EXPECT_EQ(ids("x ab"), (std::vector<int64_t>{-1, 5}));
  EXPECT_EQ(ids("xa"), (std::vector<int64_t>{-1, 6}));
  EXPECT_EQ(ids("abxaa"), (std::vector<int64_t>{-1, 6, 6}));  // "ab" then 'x': discarded; "a", "a" kept
}
