// Action and code parsing (docs/sources.md, reference §2 code extraction, §3 action parsing).
// Expected values are worked out by hand from those rules.
#include <gtest/gtest.h>

#include "rollout/parsing.h"
#include "common/error.h"
#include "rollout/prompts.h"

using namespace spade::rollout;

TEST(Boxed, LastBoxedWithBraceMatching) {
  EXPECT_EQ(extract_boxed("first \\boxed{1}, final \\boxed{42}").value(), "42");
  EXPECT_EQ(extract_boxed("\\boxed{f(x)={y}}").value(), "f(x)={y}");  // outer braces do not wrap
  EXPECT_EQ(extract_boxed("\\boxed { 7 }").value(), "7");
}

TEST(Boxed, StripsUpToTwoWrappingLayers) {
  EXPECT_EQ(extract_boxed("\\boxed{{42}}").value(), "42");
  EXPECT_EQ(extract_boxed("\\boxed{{{42}}}").value(), "42");
  // Three wrapping layers inside the \boxed braces: only two are stripped.
  EXPECT_EQ(extract_boxed("\\boxed{{{{42}}}}").value(), "{42}");
  EXPECT_EQ(extract_boxed("\\boxed{{a}{b}}").value(), "{a}{b}");  // {a}{b} is not one wrapped group
}

TEST(Boxed, MissingOrUnbalanced) {
  EXPECT_FALSE(extract_boxed("no answer here").has_value());
  EXPECT_FALSE(extract_boxed("\\boxed{unclosed").has_value());
  EXPECT_FALSE(extract_boxed("\\boxed 5").has_value());
}

TEST(Action, RewrappedOrRawText) {
  EXPECT_EQ(parse_action("I think \\boxed{{up}}."), "\\boxed{up}");
  EXPECT_EQ(parse_action("  move left \n"), "move left");
  // Thinking mode: only the text after the last </think> is parsed.
  EXPECT_EQ(parse_action("<think>\\boxed{1}</think> answer \\boxed{2}"), "\\boxed{2}");
  EXPECT_EQ(parse_action("<think>\\boxed{1}</think> no box"), "no box");
  EXPECT_EQ(parse_action(std::string(200000, 'x')).size(), kMaxActionChars);
}

TEST(Code, FirstPythonFence) {
  EXPECT_EQ(extract_code("Here:\n```python\nx = 1\n```\nand\n```python\ny = 2\n```"), "x = 1\n");
  EXPECT_EQ(extract_code("```py\nz = 3\n```"), "z = 3\n");
  EXPECT_EQ(extract_code("```python\nunterminated = True\n"), "unterminated = True\n");
  EXPECT_EQ(extract_code("  class AEnv: pass  \n"), "class AEnv: pass");
}

TEST(Skills, RotationFollowsReference) {
  // reference §1: epoch = floor(t/k), start = (3*epoch) mod 6, window of 3.
  EXPECT_EQ(active_skills(0, 4, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(active_skills(3, 4, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(active_skills(4, 4, 3), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(active_skills(8, 4, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(active_skills(4, 4, 6), (std::vector<int>{3, 4, 5, 0, 1, 2}));
  // A two-skill run (selfplay.skills: [math, causal] = indices 0 and 5): both every generation, the
  // window starting at (3*epoch) mod 2; a three-skill list with a window of 2 moves by 3 mod 3 = 0.
  EXPECT_EQ(active_skills(0, 4, 2, {0, 5}), (std::vector<int>{0, 5}));
  EXPECT_EQ(active_skills(4, 4, 2, {0, 5}), (std::vector<int>{5, 0}));
  EXPECT_EQ(active_skills(4, 4, 2, {1, 2, 4}), (std::vector<int>{1, 2}));
  EXPECT_EQ(find_skill("Causal Inference").slug, "causal");
  EXPECT_THROW(find_skill("astrology"), spade::Error);
}

TEST(Prompts, HintIsAppendedToFirstObservation) {
  const std::string p = agent_first_turn("Find x.", "Try small numbers.");
  EXPECT_NE(p.find("Observation: Find x.\n\nHINT: Try small numbers."), std::string::npos);
  EXPECT_EQ(agent_first_turn("Find x.").find("HINT"), std::string::npos);
}
