#include "evaldual/harness.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <regex>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"

namespace spade::evaldual {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string truncate_middle(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t half = max_chars / 2;
  return s.substr(0, half) + "\n<elided_chars>" + std::to_string(s.size() - 2 * half) + " characters elided</elided_chars>\n" +
         s.substr(s.size() - half);
}

}  // namespace

const char* exit_status_name(ExitStatus s) {
  switch (s) {
    case ExitStatus::Submitted: return "Submitted";
    case ExitStatus::LimitsExceeded: return "LimitsExceeded";
    case ExitStatus::WallClockTimeout: return "WallClockTimeout";
    case ExitStatus::Error: return "Error";
  }
  return "?";
}

ReplayPolicy::ReplayPolicy(std::vector<std::string> commands, std::string submit_sentinel)
    : commands_(std::move(commands)), sentinel_(std::move(submit_sentinel)) {}

PolicyReply ReplayPolicy::query(const std::vector<Message>&) {
  PolicyReply r;
  size_t i = next_++;
  std::string cmd = i < commands_.size() ? commands_[i] : "echo " + sentinel_;
  if (starts_with(cmd, "RAW:")) {
    r.content = cmd.substr(4);
  } else {
    r.content = "THOUGHT: scripted step " + std::to_string(i + 1) + "\n\n```bash\n" + cmd + "\n```";
  }
  r.completion_tokens = static_cast<int64_t>(count_words(r.content));
  return r;
}

std::vector<std::string> bash_blocks(const std::string& reply) {
  static const std::regex block(R"(```bash[ \t]*\n([\s\S]*?)\n?```)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(reply.begin(), reply.end(), block), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

std::string trajectory_json(const SessionResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"step", s.step}, {"thought", s.thought}, {"action", s.action}, {"observation", s.observation},
                     {"rc", s.rc}, {"tokens", s.tokens}, {"cost", s.cost}, {"step_seconds", s.step_seconds},
                     {"cumulative_seconds", s.cumulative_seconds}, {"recovery", s.recovery}});
  nlohmann::json j = {{"exit_status", exit_status_name(r.exit)}, {"steps", steps},
                      {"missing_artifacts", r.missing_artifacts}, {"recovery_turns_used", r.recovery_turns_used},
                      {"seconds", r.seconds}, {"cost", r.cost}, {"tokens", r.tokens}, {"error", r.error}};
  return j.dump(1);
}

SessionResult run_session(Policy& policy, const WorkspaceSandbox& sandbox, const std::string& task,
                          const HarnessConfig& cfg, const ArtifactCheck& missing, const std::string& trajectory_path) {
  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  SessionResult res;
  res.messages.push_back({"system", replace_all(cfg.system_prompt, "{sentinel}", cfg.submit_sentinel)});
  res.messages.push_back({"user", task});
  auto save = [&] {
    res.seconds = elapsed();
    if (!trajectory_path.empty()) write_file_atomic(trajectory_path, trajectory_json(res) + "\n");
  };
  int budget = cfg.step_limit;
  bool in_recovery = false;
  // Returns true when the session may go on (a recovery turn was granted).
  auto try_recover = [&]() {
    res.missing_artifacts = missing ? missing() : std::vector<std::string>{};
    if (res.missing_artifacts.empty() || res.recovery_turns_used >= cfg.recovery_turns) return false;
    ++res.recovery_turns_used;
    in_recovery = true;
    budget += cfg.recovery_steps;
    std::string names;
    for (const auto& m : res.missing_artifacts) names += "\n- " + m;
    res.messages.push_back({"user", "Recovery turn " + std::to_string(res.recovery_turns_used) + " of " +
                                        std::to_string(cfg.recovery_turns) + ": these required artifacts are missing:" + names +
                                        "\nCreate them, then submit again with: echo " + cfg.submit_sentinel});
    return true;
  };
  int step = 0;
  for (;;) {
    if (elapsed() >= cfg.wall_clock_s) {
      res.exit = ExitStatus::WallClockTimeout;
      break;
    }
    if (step >= budget) {
      if (try_recover()) continue;
      res.exit = ExitStatus::LimitsExceeded;
      break;
    }
    ++step;
    auto step_start = clock::now();
    TrajectoryStep ts;
    ts.step = step;
    ts.recovery = in_recovery;
    PolicyReply reply;
    try {
      reply = policy.query(res.messages);
    } catch (const std::exception& e) {
      res.exit = ExitStatus::Error;
      res.error = e.what();
      break;
    }
    ts.tokens = reply.prompt_tokens + reply.completion_tokens;
    ts.cost = reply.cost;
    res.cost += reply.cost;
    res.tokens += ts.tokens;
    res.messages.push_back({"assistant", reply.content});
    std::vector<std::string> blocks = bash_blocks(reply.content);
    bool submitted = false;
    if (blocks.size() != 1) {
      ts.thought = reply.content;
      ts.observation = "Format error: your reply must contain exactly one ```bash block (found " +
                       std::to_string(blocks.size()) + "). To finish, run: echo " + cfg.submit_sentinel;
      ts.rc = -2;
    } else {
      ts.action = blocks[0];
      std::string thought = reply.content;
      size_t fence = thought.find("```bash");
      ts.thought = trim(thought.substr(0, fence));
      SandboxLimits lim = cfg.command_limits;
      lim.timeout_s = std::max(0.5, std::min(lim.timeout_s, cfg.wall_clock_s - elapsed()));
      CommandResult cr = sandbox.run(ts.action, lim);
      ts.rc = cr.rc;
      std::string first_line = trim(cr.output.substr(0, cr.output.find('\n')));
      if (first_line == cfg.submit_sentinel) {
        submitted = true;
        ts.observation = "";
      } else {
        ts.observation = "<returncode>" + std::to_string(cr.rc) + "</returncode>\n" +
                         (cr.timed_out ? "<warning>The command timed out and was killed.</warning>\n" : "") +
                         "<output>\n" + truncate_middle(cr.output, cfg.observation_max_chars) + "</output>";
      }
    }
    ts.step_seconds = std::chrono::duration<double>(clock::now() - step_start).count();
    ts.cumulative_seconds = elapsed();
    if (!ts.observation.empty()) res.messages.push_back({"user", ts.observation});
    res.steps.push_back(std::move(ts));
    save();
    if (submitted) {
      if (try_recover()) continue;
      res.exit = ExitStatus::Submitted;
      break;
    }
  }
  if (res.exit != ExitStatus::Submitted || res.missing_artifacts.empty())
    res.missing_artifacts = missing ? missing() : std::vector<std::string>{};
  save();
  return res;
}

}  // namespace spade::evaldual
