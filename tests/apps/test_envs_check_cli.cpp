// `spade envs check` end to end (issue 24), by the real binary: the hostile programs aimed at
// neighbours, the pool and the reader, several in one call (one sandbox server serves them all, as it
// serves a training run), then the follow-up world probe and a good program. Each hostile program gets
// its verdict, the two last ones are admitted (none of the hostile ones stopped, limited or filled
// what they come after), and nothing a program wrote reaches the terminal raw: no ESC, BEL or CR, no
// C1 control, no forged report line. fill_shm.py is left to test_envsandbox (on a pool without a cap
// on /dev/shm it would write 4 GiB at this machine's ~170 MB/s).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/test_util.h"

namespace {

struct Expected {
  std::string path;
  std::string verdict;  // the report's first line after "<path>: "
};

std::string adversarial(const std::string& file) {
  return std::string(SPADE_SOURCE_DIR) + "/tests/sandbox_adversarial/" + file;
}

std::string program(const std::string& file) {
  return std::string(SPADE_SOURCE_DIR) + "/tests/envsandbox/programs/" + file;
}

TEST(EnvsCheckCli, HostileProgramsInOneCallThenTheFollowUpIsAdmittedAndTheTerminalIsSafe) {
  // Verdicts: the hostile programs swallow their own failures (admitted); forged_long_obs.py is cut by
  // the host's own cap; terminal_escape.py raises in reset (tests/envsandbox/test_adversarial.cpp).
  const std::vector<Expected> expected = {
      {adversarial("stop_neighbours_pidfd.py"), "ADMITTED"},
      {adversarial("stop_neighbours_sigio.py"), "ADMITTED"},
      {adversarial("prlimit_neighbours.py"), "ADMITTED"},
      {adversarial("renice_neighbours.py"), "ADMITTED"},
      {adversarial("write_everywhere.py"), "ADMITTED"},
      {adversarial("sysv_ipc_leak.py"), "ADMITTED"},
      {adversarial("plant_workdirs.py"), "ADMITTED"},
      {adversarial("forged_long_obs.py"), "REJECTED -- obs_too_large"},
      {adversarial("terminal_escape.py"), "REJECTED -- reset_exception"},
      {program("world_probe.py"), "ADMITTED"},
      {program("good_guess.py"), "ADMITTED"},
  };
  std::string cmd = std::string(SPADE_BIN) + " envs check";
  for (const Expected& e : expected) cmd += " " + e.path;
  spade::fixtures::CommandResult r = spade::fixtures::run_command(cmd + " 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;  // some rejected, and the run went to the end

  // The verdict lines ("<path>: ..."), in order: the lines that do not start with a space (gate lines
  // are indented) and hold a verdict. The forged "good_guess.py: ADMITTED" inside terminal_escape.py's
  // message must stay inside its indented, escaped gate line.
  std::vector<std::string> report_lines;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != ' ' &&
        (line.find(": ADMITTED") != std::string::npos || line.find(": REJECTED") != std::string::npos))
      report_lines.push_back(line);
  ASSERT_EQ(report_lines.size(), expected.size()) << r.out;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(report_lines[i], expected[i].path + ": " + expected[i].verdict) << r.out;

  // The terminal: no raw control character from a program; the hostile message is there, escaped.
  for (char c : {'\x1b', '\x07', '\r'}) EXPECT_EQ(r.out.find(c), std::string::npos) << int(c) << " in:\n" << r.out;
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);  // U+009B, CSI as one C1 character
  EXPECT_EQ(r.out.find("\xc2\x85"), std::string::npos);  // U+0085, NEL
  EXPECT_NE(r.out.find("\\x1b[2K\\r\\x1b[1A\\x1b[2Kgood_guess.py: ADMITTED\\x1b]0;pwned\\x07"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\\u009b2K\\u0085\\r\\n  forged: ADMITTED"), std::string::npos) << r.out;
}

}  // namespace
