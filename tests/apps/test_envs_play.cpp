// `spade envs play` by the real binary, input piped in: a line starting with ':' is a player command
// and never reaches the game (the game below echoes every action it gets, so one that did would show as
// "heard :..."), an unknown one is an error naming it, :help lists the commands, and after the episode
// ends (terminated, or truncated at max_turns) no action is sent until :reset. Program text reaches the
// terminal escaped (issue 24): observations keep their line breaks and tabs, nothing else raw.
#include <gtest/gtest.h>

#include <string>

#include "common/atomic_file.h"
#include "tests/testing/test_util.h"

namespace {

// Ends (terminated, reward 1) at the second action; truncated instead at max_turns when that is 1.
const char* kCountGame = R"(class CountEnv:
    def __init__(self, max_turns=25, **kw):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = 0
        return "count to two", {}

    def step(self, action):
        self.n += 1
        done = self.n >= 2
        truncated = not done and self.n >= self.max_turns
        return "heard " + action, (1.0 if done else 0.0), done, truncated, {}

    def solution(self):
        return ["one", "two"]
)";

spade::fixtures::CommandResult play(const std::string& game, const std::string& input, const std::string& flags = "") {
  return spade::fixtures::run_command("printf '" + input + "' | " + std::string(SPADE_BIN) + " envs play " + game +
                                      " " + flags + " 2>&1");
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(EnvsPlay, ColonLinesAreCommandsAndTheEpisodeEndStopsPlay) {
  const std::string game = spade::fixtures::fresh_test_dir("envs_play", "commands") + "/count.py";
  spade::write_file_atomic(game, kCountGame);
  const auto r = play(game, ":help\\n:rset\\n:solution\\none\\ntwo\\nthree\\n:bogus now\\n:reset\\nfour\\n:quit\\nfive\\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  for (const char* c : {":help", ":solution", ":reset", ":quit"}) EXPECT_TRUE(has(r.out, std::string("  ") + c)) << r.out;
  EXPECT_TRUE(has(r.out, "error: unknown command ':rset'; did you mean ':reset'?")) << r.out;  // one deletion
  EXPECT_TRUE(has(r.out, "error: unknown command ':bogus' (:help lists the commands")) << r.out;
  EXPECT_FALSE(has(r.out, "heard :")) << r.out;  // no ':' line reached the game
  EXPECT_TRUE(has(r.out, "heard one")) << r.out;
  EXPECT_TRUE(has(r.out, "heard two")) << r.out;
  // "two" ends the episode; "three" is refused with the same message, and not sent.
  EXPECT_EQ(count(r.out, "episode over (reward +1.000); :reset to play again, :quit to leave"), 2u) << r.out;
  EXPECT_FALSE(has(r.out, "heard three")) << r.out;
  EXPECT_EQ(count(r.out, "=== episode (seed 0"), 2u) << r.out;  // the start and the :reset
  EXPECT_TRUE(has(r.out, "heard four")) << r.out;
  EXPECT_FALSE(has(r.out, "heard five")) << r.out;  // after :quit
}

TEST(EnvsPlay, TruncationEndsTheEpisodeToo) {
  const std::string game = spade::fixtures::fresh_test_dir("envs_play", "truncated") + "/count.py";
  spade::write_file_atomic(game, kCountGame);
  const auto r = play(game, "one\\ntwo\\n:reset 7\\ntwo\\n", "--max-turns 1 --box");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "heard \\boxed{one}")) << r.out;  // --box wraps what is sent
  EXPECT_TRUE(has(r.out, "truncated")) << r.out;
  EXPECT_TRUE(has(r.out, "episode over (reward +0.000)")) << r.out;
  EXPECT_FALSE(has(r.out, "heard \\boxed{two}\n  [turn 2")) << r.out;
  EXPECT_TRUE(has(r.out, "=== episode (seed 7")) << r.out;
  EXPECT_EQ(count(r.out, "heard \\boxed{two}"), 1u) << r.out;  // only after the reset
}

TEST(EnvsPlay, ProgramTextReachesTheTerminalEscaped) {
  // Observations carrying a window-title sequence (OSC 0), a line erase with a carriage return and a C1
  // CSI: printed raw they would retitle the window and overwrite the report. Expected text written by
  // hand from common/terminal_text.h's rules (ESC as \x1b, BEL as \x07, CR as \r, U+009B as \u009b;
  // LF and TAB kept in observations).
  const std::string game = spade::fixtures::fresh_test_dir("envs_play", "escaped") + "/ink.py";
  spade::write_file_atomic(game, R"(class InkEnv:
    def reset(self, seed=None):
        return "row1\n\trow2\x1b]0;pwned\x07", {}

    def step(self, action):
        return "\x1b[2K\rheard " + action + "\u009b", 1.0, True, False, {}
)");
  const auto r = play(game, "one\\n:quit\\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  for (char c : {'\x1b', '\x07', '\r'}) EXPECT_FALSE(has(r.out, std::string(1, c))) << int(c) << " in:\n" << r.out;
  EXPECT_FALSE(has(r.out, "\xc2\x9b")) << r.out;  // U+009B raw
  EXPECT_TRUE(has(r.out, "row1\n\trow2\\x1b]0;pwned\\x07\n")) << r.out;
  EXPECT_TRUE(has(r.out, "\\x1b[2K\\rheard one\\u009b\n  [turn 1")) << r.out;
}

// --tool-use (issue 21): the tools are listed after the reset and by :tools; `NAME {json}` / `NAME`
// call a tool as the agent's call would be sent; a line that is neither is refused and not sent; a
// line starting with '<' goes as typed. Expected replies by hand from the program and the base class
// (envsandbox/envd_prelude.cpp ToolUseEnv.step): add -> "ok"; read -> "15" and, the one instruction now
// met, "[user] All steps are done. Answer <answer>done</answer>."; then <answer>done</answer> wins.
TEST(EnvsPlay, ToolUseCallsToolsByName) {
  const char* kCounter = R"PY(class CounterEnv(ToolUseEnv):
    def reset(self, seed=None):
        self.turn = 0
        self._state = {"count": 10, "read": False}
        self._tools = {
            "add": {"description": "Add n to the counter.",
                    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
            "read": {"description": "Read the counter.", "parameters": {"type": "object", "properties": {}}},
        }
        self._user_messages = ["Add 5, then read the counter."]
        self._message_criteria = [lambda s: s["count"] == 15 and s["read"]]
        self._current_msg = 0
        return "[user] " + self._user_messages[0], {}

    def tool_add(self, n):
        self._state["count"] += n
        return "ok"

    def tool_read(self):
        self._state["read"] = True
        return str(self._state["count"])
)PY";
  const std::string game = spade::fixtures::fresh_test_dir("envs_play", "tool_use") + "/counter.py";
  spade::write_file_atomic(game, kCounter);
  const auto r = play(game, "add {\"n\": 5}\\nadd [5]\\n:tools\\nread\\n<answer>done</answer>\\n", "--tool-use");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(count(r.out, "  add(n: integer) -- Add n to the counter."), 2u) << r.out;  // after reset, and :tools
  EXPECT_EQ(count(r.out, "  read() -- Read the counter."), 2u) << r.out;
  EXPECT_TRUE(has(r.out, "ok\n  [turn 1  reward +0.000")) << r.out;
  EXPECT_TRUE(has(r.out, "error: type NAME or NAME {")) << r.out;  // "add [5]": not a JSON object, not sent
  EXPECT_TRUE(has(r.out, "15\n\n[user] All steps are done. Answer <answer>done</answer>.\n  [turn 2  reward +0.000")) << r.out;
  EXPECT_TRUE(has(r.out, "Correct.\n  [turn 3  reward +1.000  total +1.000  terminated]")) << r.out;
  // Without --tool-use the same lines reach the game as typed (its base class answers a format error).
  const auto plain = play(game, "add {\"n\": 5}\\n");
  EXPECT_TRUE(has(plain.out, "Format error")) << plain.out;
}
