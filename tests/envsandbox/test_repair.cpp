// f-string brace repair (reference §2). Expected outputs are written by hand from the rule:
// on the failing line, a non-empty {x} whose content is not a valid Python expression becomes {{x}}; valid
// expressions ({x}, {a, b}, {n + 1}) and empty {} (a dict literal) are left alone.
#include <gtest/gtest.h>

#include "envsandbox/repair.h"
#include "test_util.h"

namespace spade::envsandbox {
namespace {

using testing::shared_server;

TEST(Repair, EscapesBracesWhoseContentIsNotAnExpression) {
  const std::string broken =
      "x = 3\n"
      "a, b = 1, 2\n"
      "msg = f\"Reply with \\\\boxed{your move} after {x} turns\"\n"
      "pair = f\"set {a, b} {x}\"\n"
      "hint = f\"Use {row col} format, e.g. {x + 1} {{literal}}\"\n";
  const std::string expected =  // by hand
      "x = 3\n"
      "a, b = 1, 2\n"
      "msg = f\"Reply with \\\\boxed{{your move}} after {x} turns\"\n"
      "pair = f\"set {a, b} {x}\"\n"
      "hint = f\"Use {{row col}} format, e.g. {x + 1} {{literal}}\"\n";
  EXPECT_EQ(repair_fstring_braces(shared_server(), broken), expected);
}

TEST(Repair, RepairedProgramIsAdmittedByLoad) {
  const std::string broken =
      "class EchoEnv:\n"
      "    def reset(self, seed=None):\n"
      "        return f\"Answer as \\\\boxed{your answer}\", {}\n";
  std::string fixed = repair_fstring_braces(shared_server(), broken);
  auto env = shared_server().spawn();
  ASSERT_TRUE(env->load(fixed).ok()) << fixed;
  CallResult r = env->reset(0);
  ASSERT_TRUE(r.ok()) << r.detail;
  EXPECT_EQ(r.value.items()[0].as_str(), "Answer as \\boxed{your answer}");
}

TEST(Repair, LeavesValidAndUnrepairableSourcesAlone) {
  const std::string valid = "x = {'a': 1}\nprint(f'{x}')\n";
  EXPECT_EQ(repair_fstring_braces(shared_server(), valid), valid);
  const std::string hopeless = "def f(:\n    pass\n";  // not a brace problem: unchanged
  EXPECT_EQ(repair_fstring_braces(shared_server(), hopeless), hopeless);
}

}  // namespace
}  // namespace spade::envsandbox
