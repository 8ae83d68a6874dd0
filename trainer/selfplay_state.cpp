#include "trainer/selfplay_state.h"

#include "common/error.h"

using nlohmann::json;

namespace spade::trainer {

namespace {

json live_to_json(const LiveEnv& e) {
  return {{"id", e.id},         {"skill", e.skill},
          {"code", e.code},     {"path", e.path},
          {"hint", e.hint},     {"born", e.born},
          {"r_hint", e.r_hint}, {"r_nohint", e.r_nohint},
          {"regret", e.regret}, {"window_rewards", e.window_rewards},
          {"step_timeout", e.step_timeout}, {"from_seed", e.from_seed}};
}

LiveEnv live_from_json(const json& j) {
  LiveEnv e;
  j.at("id").get_to(e.id);
  j.at("skill").get_to(e.skill);
  j.at("code").get_to(e.code);
  j.at("path").get_to(e.path);
  j.at("hint").get_to(e.hint);
  j.at("born").get_to(e.born);
  j.at("r_hint").get_to(e.r_hint);
  j.at("r_nohint").get_to(e.r_nohint);
  j.at("regret").get_to(e.regret);
  j.at("window_rewards").get_to(e.window_rewards);
  j.at("step_timeout").get_to(e.step_timeout);
  j.at("from_seed").get_to(e.from_seed);
  return e;
}

// Tool segments as [[begin, end, kind], ...] (kind: 1 call, 2 result; rollout::ToolSegment).
json tool_segments_to_json(const std::vector<rollout::ToolSegment>& segments) {
  json out = json::array();
  for (const rollout::ToolSegment& g : segments) out.push_back({g.begin, g.end, static_cast<int>(g.kind)});
  return out;
}

std::vector<rollout::ToolSegment> tool_segments_from_json(const json& j, size_t tokens) {
  std::vector<rollout::ToolSegment> out;
  for (const json& row : j) {
    const int64_t begin = row.at(0).get<int64_t>(), end = row.at(1).get<int64_t>();
    const int kind = row.at(2).get<int>();
    if (begin < 0 || begin > end || end > static_cast<int64_t>(tokens) || (kind != 1 && kind != 2))
      throw Error("malformed tool segment " + row.dump() + " of a sample of " + std::to_string(tokens) + " tokens");
    out.push_back({begin, end, static_cast<rollout::ToolSegment::Kind>(kind)});
  }
  return out;
}

}  // namespace

json sample_to_json(const rollout::Sample& s) {
  return {{"role", rollout::role_name(s.role)},
          {"tokens", s.tokens},
          {"loss_mask", s.loss_mask},
          {"rollout_logprobs", s.rollout_logprobs},
          {"reward", s.reward},
          {"advantage", s.advantage},
          {"env_id", s.env_id},
          {"skill", s.skill},
          {"rollout_id", s.rollout_id},
          {"temperature", s.temperature},
          {"tool_segments", tool_segments_to_json(s.tool_segments)}};
}

rollout::Sample sample_from_json(const json& j) {
  rollout::Sample s;
  s.role = rollout::parse_role(j.at("role").get<std::string>());
  j.at("tokens").get_to(s.tokens);
  j.at("loss_mask").get_to(s.loss_mask);
  j.at("rollout_logprobs").get_to(s.rollout_logprobs);
  j.at("reward").get_to(s.reward);
  j.at("advantage").get_to(s.advantage);
  j.at("env_id").get_to(s.env_id);
  j.at("skill").get_to(s.skill);
  j.at("rollout_id").get_to(s.rollout_id);
  j.at("temperature").get_to(s.temperature);
  if (j.contains("tool_segments")) s.tool_segments = tool_segments_from_json(j.at("tool_segments"), s.tokens.size());
  if (s.loss_mask.size() != s.tokens.size() || s.rollout_logprobs.size() != s.tokens.size())
    throw Error("sample arrays tokens/loss_mask/rollout_logprobs differ in length");
  return s;
}

json state_to_json(const SelfPlayState& s) {
  json live = json::array(), buffer = json::array(), ema = json::object();
  for (const LiveEnv& e : s.live) live.push_back(live_to_json(e));
  for (const rollout::Sample& x : s.designer_buffer) buffer.push_back(sample_to_json(x));
  for (const auto& [skill, e] : s.skill_ema)
    ema[skill] = {{"initialised", e.initialised}, {"mu_fast", e.mu_fast}, {"mu_slow", e.mu_slow}};
  const SelfPlaySummary& m = s.summary;
  json summary = {{"steps", m.steps},
                  {"attempts", m.attempts},
                  {"admitted", m.admitted},
                  {"rejected", m.rejected},
                  {"rejected_by_reason", m.rejected_by_reason},
                  {"hint_success_sum", m.hint_success_sum},
                  {"nohint_success_sum", m.nohint_success_sum},
                  {"hint_plays", m.hint_plays},
                  {"nohint_plays", m.nohint_plays},
                  {"seconds", m.seconds}};
  return {{"format", "spade-trainer-state-1"},
          {"next_step", s.next_step},
          {"rng", s.rng},
          {"corpus_position", s.corpus_position},
          {"live", live},
          {"designer_buffer", buffer},
          {"skill_ema", ema},
          {"summary", summary},
          {"last_valid_rate", s.last_valid_rate},
          {"last_regret", s.last_regret},
          {"lr", s.lr}};
}

SelfPlayState state_from_json(const json& j) {
  if (j.value("format", "") != "spade-trainer-state-1")
    throw Error("not a spade trainer state (format key is not spade-trainer-state-1)");
  SelfPlayState s;
  j.at("next_step").get_to(s.next_step);
  j.at("rng").get_to(s.rng);
  j.at("corpus_position").get_to(s.corpus_position);
  for (const json& e : j.at("live")) s.live.push_back(live_from_json(e));
  for (const json& x : j.at("designer_buffer")) s.designer_buffer.push_back(sample_from_json(x));
  for (const auto& [skill, e] : j.at("skill_ema").items())
    s.skill_ema[skill] = {e.at("initialised").get<bool>(), e.at("mu_fast").get<double>(),
                          e.at("mu_slow").get<double>()};
  const json& m = j.at("summary");
  m.at("steps").get_to(s.summary.steps);
  m.at("attempts").get_to(s.summary.attempts);
  m.at("admitted").get_to(s.summary.admitted);
  m.at("rejected").get_to(s.summary.rejected);
  m.at("rejected_by_reason").get_to(s.summary.rejected_by_reason);
  m.at("hint_success_sum").get_to(s.summary.hint_success_sum);
  m.at("nohint_success_sum").get_to(s.summary.nohint_success_sum);
  m.at("hint_plays").get_to(s.summary.hint_plays);
  m.at("nohint_plays").get_to(s.summary.nohint_plays);
  m.at("seconds").get_to(s.summary.seconds);
  j.at("last_valid_rate").get_to(s.last_valid_rate);
  j.at("last_regret").get_to(s.last_regret);
  j.at("lr").get_to(s.lr);
  return s;
}

}  // namespace spade::trainer
