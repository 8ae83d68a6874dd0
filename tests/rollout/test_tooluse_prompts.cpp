// The tool-use setting's prompt-side rules (SPADE §5.2, App. F.2; reference §7): skills per setting,
// the task-variant mix 3:2:1:1, the variant a program declares, the self-validator's verdict (first
// \boxed{}, fails open) and how a judgement is applied to a design attempt. Expected values by hand.
#include <gtest/gtest.h>

#include "common/error.h"
#include "rollout/designer.h"
#include "rollout/parsing.h"
#include "rollout/prompts.h"

using namespace spade::rollout;

TEST(ToolUsePrompts, SkillsOfEachSetting) {
  EXPECT_EQ(parse_setting("tool_use"), Setting::kToolUse);
  EXPECT_EQ(parse_setting("games"), Setting::kGames);
  try {
    parse_setting("tools");
    FAIL() << "accepted 'tools'";
  } catch (const spade::Error& e) {
    EXPECT_NE(std::string(e.what()).find("games, tool_use"), std::string::npos) << e.what();
  }
  // The paper's order (reference §6): Data Retrieval is the second tool-use skill.
  EXPECT_EQ(skill_index("data_retrieval", Setting::kToolUse), 1);
  EXPECT_EQ(find_skill("Multi-Step Workflows", Setting::kToolUse).slug, "multi_step_workflows");
  EXPECT_THROW(find_skill("math", Setting::kToolUse), spade::Error);      // a game skill is not a tool-use one
  EXPECT_THROW(find_skill("data_retrieval"), spade::Error);               // nor the other way round
  EXPECT_EQ(skill_by_slug("data_retrieval").name, "Data Retrieval");
  EXPECT_EQ(skill_by_slug("causal").name, "Causal Inference");
  EXPECT_TRUE(is_tooluse_skill("error_recovery"));
  EXPECT_FALSE(is_tooluse_skill("logic"));
  EXPECT_EQ(setting_of_skill("tool_selection"), Setting::kToolUse);
}

TEST(ToolUsePrompts, VariantMixIsThreeTwoOneOne) {
  // Weights 3:2:1:1 of 7: execute on [0, 3/7), read-then-write [3/7, 5/7), missing-parameter
  // [5/7, 6/7), irrelevant [6/7, 1).
  EXPECT_EQ(draw_tooluse_variant(0.0), "execute");
  EXPECT_EQ(draw_tooluse_variant(3.0 / 7 - 1e-9), "execute");
  EXPECT_EQ(draw_tooluse_variant(3.0 / 7 + 1e-9), "read-then-write");
  EXPECT_EQ(draw_tooluse_variant(0.5), "read-then-write");
  EXPECT_EQ(draw_tooluse_variant(5.0 / 7 + 1e-9), "missing-parameter");
  EXPECT_EQ(draw_tooluse_variant(6.0 / 7 + 1e-9), "irrelevant");
  EXPECT_EQ(draw_tooluse_variant(0.999999), "irrelevant");
  EXPECT_EQ(declared_tooluse_variant("# Skill: x. Variant: missing-parameter (the user names people)\n"),
            "missing-parameter");
  EXPECT_EQ(declared_tooluse_variant("# Variant:read-then-write\n"), "read-then-write");
  EXPECT_EQ(declared_tooluse_variant("# Variant: executed\n"), "");  // not one of the four ids
  EXPECT_EQ(declared_tooluse_variant("class AEnv: pass\n"), "");
  // The prompt names the variant drawn, the tool-count and instruction-count rules, and the document.
  const std::string p = designer_tool_user_prompt(tooluse_skills()[0], std::string("DOC TEXT"), {}, 25, "irrelevant");
  for (const char* part : {"API Orchestration", "DOC TEXT", "ToolUseEnv", "3 to 8 tools", "3 to 5 short instructions",
                           "Task variant: irrelevant", "max_turns=25", "<tool_call>", "<answer>done</answer>"})
    EXPECT_NE(p.find(part), std::string::npos) << part;
  EXPECT_EQ(designer_tool_user_prompt(tooluse_skills()[0], std::nullopt, {}, 25, "").find("Task variant"),
            std::string::npos);
}

TEST(ToolUsePrompts, ValidatorVerdictIsTheFirstBox) {
  EXPECT_EQ(extract_first_boxed("\\boxed{no} then \\boxed{yes}").value(), "no");
  EXPECT_EQ(self_validator_verdict("Criterion 2 is unreachable. \\boxed{No}"), std::optional<bool>(false));
  EXPECT_EQ(self_validator_verdict("\\boxed{yes} ... on reflection \\boxed{no}"), std::optional<bool>(true));
  EXPECT_EQ(self_validator_verdict("<think>\\boxed{no}</think> \\boxed{ YES }"), std::optional<bool>(true));
  EXPECT_EQ(self_validator_verdict("\\boxed{true}"), std::optional<bool>(true));
  EXPECT_EQ(self_validator_verdict("\\boxed{maybe}"), std::nullopt);
  EXPECT_EQ(self_validator_verdict("I think so."), std::nullopt);
  EXPECT_EQ(self_validator_verdict("\\boxed{yes"), std::nullopt);  // never closed
}

namespace {

DesignAttempt admitted_attempt() {
  DesignAttempt a;
  a.skill = "state_modification";
  a.report.admitted = true;
  a.report.reason = "ok";
  a.report.gates.push_back({"solution_wins", "pass", "ok", "", 0.1});
  return a;
}

ChatCompletion judgement(const std::string& text, FinishReason finish = FinishReason::kStop) {
  ChatCompletion c;
  c.text = text;
  c.output.finish_reason = finish;
  return c;
}

}  // namespace

TEST(ToolUsePrompts, SelfValidatorRejectsOnNoAndFailsOpen) {
  DesignAttempt yes = admitted_attempt();
  apply_self_validation(yes, judgement("All four criteria can be met. \\boxed{yes}"));
  EXPECT_TRUE(yes.admitted());
  EXPECT_EQ(yes.self_validation, SelfValidation::kYes);
  ASSERT_EQ(yes.report.gates.size(), 2u);
  EXPECT_EQ(yes.report.gates.back().gate, "self_validator");
  EXPECT_EQ(yes.report.gates.back().verdict, "pass");

  DesignAttempt no = admitted_attempt();
  apply_self_validation(no, judgement("No tool sets the due date. \\boxed{no}"));
  EXPECT_FALSE(no.admitted());
  EXPECT_EQ(no.report.reason, "self_validator_rejected");
  EXPECT_NE(no.report.detail.find("No tool sets the due date."), std::string::npos) << no.report.detail;
  EXPECT_EQ(no.self_validation, SelfValidation::kNo);
  EXPECT_STREQ(self_validation_name(no.self_validation), "no");

  // Fails open: no verdict, an unreadable one, or a judgement cut at its token cap (even one that
  // says no before the cut) keep the program admitted.
  for (const ChatCompletion& j : {judgement("Looks fine to me."), judgement("\\boxed{perhaps}"),
                                  judgement("\\boxed{no} because", FinishReason::kLength)}) {
    DesignAttempt a = admitted_attempt();
    apply_self_validation(a, j);
    EXPECT_TRUE(a.admitted()) << j.text;
    EXPECT_EQ(a.self_validation, SelfValidation::kFailedOpen) << j.text;
    EXPECT_STREQ(self_validation_name(a.self_validation), "failed_open");
    EXPECT_EQ(a.report.reason, "ok");
    EXPECT_NE(a.report.gates.back().detail.find("fails open"), std::string::npos);
  }
}
