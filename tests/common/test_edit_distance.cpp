// The one edit distance behind every "did you mean" (common/edit_distance.h). Every expected distance
// below was counted by hand, edit by edit, as the comment beside it lists.
#include <gtest/gtest.h>

#include "common/edit_distance.h"

using namespace spade;

TEST(EditDistance, HandCountedDistances) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);         // 3 insertions
  EXPECT_EQ(edit_distance("abc", ""), 3u);         // 3 deletions
  EXPECT_EQ(edit_distance("train", "train"), 0u);
  EXPECT_EQ(edit_distance("a", "b"), 1u);          // 1 substitution
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // k->s, e->i, insert g
  EXPECT_EQ(edit_distance("sunday", "saturday"), 3u);  // insert a, insert t, n->r
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);     // delete f, insert n
  EXPECT_EQ(edit_distance("train", "sft"), 5u);     // no common aligned letter: 3 substitutions + 2 deletions
}

TEST(EditDistance, AnAdjacentSwapCostsOne) {
  // Levenshtein would count each of these as 2 (two substitutions).
  EXPECT_EQ(edit_distance("trian", "train"), 1u);                    // "ia" <-> "ai"
  EXPECT_EQ(edit_distance("selfplay.stpes", "selfplay.steps"), 1u);  // "pe" <-> "ep"
  EXPECT_EQ(edit_distance("abdcef", "abcdef"), 1u);                  // "dc" <-> "cd"
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  // Optimal string alignment edits no substring twice: "ca" -> "abc" is 3 (delete c, insert b, insert c;
  // or substitute both and insert one), where unrestricted Damerau-Levenshtein finds 2 (swap to "ac", then
  // insert b between). This is the case that tells the two apart.
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);
  // A swap of non-adjacent letters is two substitutions.
  EXPECT_EQ(edit_distance("abc", "cba"), 2u);  // a->c, c->a
}

TEST(EditDistance, IsSymmetric) {
  for (auto [a, b] : {std::pair<const char*, const char*>{"kitten", "sitting"}, {"ca", "abc"}, {"trian", "train"},
                      {"", "xyz"}, {"flaw", "lawn"}})
    EXPECT_EQ(edit_distance(a, b), edit_distance(b, a)) << a << " / " << b;
}

TEST(ClosestMatch, PicksTheNearestWithinAThirdOfTheTypedLength) {
  const std::vector<std::string> commands = {"train", "sft", "config", "corpus", "envs", "generate"};
  EXPECT_EQ(closest_match("trian", commands), "train");  // distance 1, threshold max(5, 3) / 3 = 1
  EXPECT_EQ(closest_match("generat", commands), "generate");  // 1 deletion
  EXPECT_EQ(closest_match("TRAIN", commands), "train");  // case alone: distance 5, but matched ignoring case
  EXPECT_EQ(closest_match("train", commands), "train");
  // "trxyn" -> "train" is 2 substitutions (x->a, y->i): over the threshold 1 of a 5-byte name.
  EXPECT_EQ(closest_match("trxyn", commands), std::nullopt);
  EXPECT_EQ(closest_match("zzz", commands), std::nullopt);
  EXPECT_EQ(closest_match("x", {}), std::nullopt);
  // 8 bytes: threshold 8 / 3 = 2. Two substitutions are close enough, three are not.
  EXPECT_EQ(closest_match("abcdefXY", {"abcdefgh"}), "abcdefgh");
  EXPECT_EQ(closest_match("abcdeXYZ", {"abcdefgh"}), std::nullopt);
  // Short names: threshold max(2, 3) / 3 = 1.
  EXPECT_EQ(closest_match("st", {"set", "seed"}), "set");  // 1 insertion; "seed" is 2 away
  // Ties go to the earlier candidate: "bat" is 1 substitution from both.
  EXPECT_EQ(closest_match("bat", {"cat", "hat"}), "cat");
  EXPECT_EQ(closest_match("bat", {"hat", "cat"}), "hat");
}

TEST(ClosestMatch, DidYouMeanPhrase) {
  EXPECT_EQ(did_you_mean("selfplay.stpes", {"selfplay.k", "selfplay.steps"}), "; did you mean 'selfplay.steps'?");
  EXPECT_EQ(did_you_mean("nothing-like-it", {"selfplay.k", "selfplay.steps"}), "");
}
