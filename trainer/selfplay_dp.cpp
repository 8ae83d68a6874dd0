#include "trainer/selfplay_dp.h"

#include "common/error.h"
#include "common/splitmix64.h"

namespace spade::trainer {

nlohmann::json episode_to_json(const rollout::EpisodeResult& r) {
  return {{"sample", sample_to_json(r.sample)}, {"reward", r.reward},   {"terminated", r.terminated},
          {"truncated", r.truncated},           {"turns", r.turns},     {"failure", r.failure},
          {"process", static_cast<int>(r.process)}, {"actions", r.actions}, {"first_observation", r.first_observation},
          {"tool_calls", r.tool_calls},           {"malformed_tool_calls", r.malformed_tool_calls}};
}

rollout::EpisodeResult episode_from_json(const nlohmann::json& j) {
  rollout::EpisodeResult r;
  r.sample = sample_from_json(j.at("sample"));
  j.at("reward").get_to(r.reward);
  j.at("terminated").get_to(r.terminated);
  j.at("truncated").get_to(r.truncated);
  j.at("turns").get_to(r.turns);
  j.at("failure").get_to(r.failure);
  r.process = static_cast<envsandbox::CallStatus>(j.at("process").get<int>());
  j.at("actions").get_to(r.actions);
  j.at("first_observation").get_to(r.first_observation);
  j.at("tool_calls").get_to(r.tool_calls);
  j.at("malformed_tool_calls").get_to(r.malformed_tool_calls);
  return r;
}

uint64_t rank_seed(const DistributedContext& dist, uint64_t seed) {
  return dist.active() ? splitmix64(seed ^ splitmix64(static_cast<uint64_t>(dist.rank()) + 1)) : seed;
}

std::vector<nlohmann::json> gather_indexed(const DistributedContext& dist, size_t n, const std::vector<size_t>& mine,
                                           std::vector<nlohmann::json> results, const std::string& what) {
  if (results.size() != mine.size()) throw Error(what + ": " + std::to_string(mine.size()) + " indices but " +
                                                 std::to_string(results.size()) + " results");
  std::vector<nlohmann::json> parts;
  if (dist.active()) {
    const std::vector<uint8_t> bytes = nlohmann::json::to_cbor({{"index", mine}, {"results", std::move(results)}});
    for (const std::string& part : dist.all_gather_strings(std::string(bytes.begin(), bytes.end())))
      parts.push_back(nlohmann::json::from_cbor(part));
  } else {
    parts.push_back({{"index", mine}, {"results", std::move(results)}});
  }
  std::vector<nlohmann::json> out(n);
  std::vector<bool> seen(n, false);
  for (nlohmann::json& j : parts) {
    const std::vector<size_t> index = j.at("index").get<std::vector<size_t>>();
    nlohmann::json& got = j.at("results");
    if (got.size() != index.size()) throw Error(what + ": a rank sent unequal index/results");
    for (size_t k = 0; k < index.size(); ++k) {
      if (index[k] >= n || seen[index[k]]) throw Error(what + ": bad or repeated index " + std::to_string(index[k]));
      out[index[k]] = std::move(got[k]);
      seen[index[k]] = true;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (!seen[i]) throw Error(what + ": item " + std::to_string(i) + " came back from no rank");
  return out;
}

nlohmann::json design_attempt_to_json(const rollout::DesignAttempt& a) {
  return {{"slot", a.slot}, {"attempt", a.attempt}, {"skill", a.skill},           {"doc_id", a.doc_id},
          {"code", a.code}, {"report", a.report.to_json()}, {"sample", sample_to_json(a.sample)},
          {"self_validation", static_cast<int>(a.self_validation)}};
}

rollout::DesignAttempt design_attempt_from_json(const nlohmann::json& j) {
  rollout::DesignAttempt a;
  j.at("slot").get_to(a.slot);
  j.at("attempt").get_to(a.attempt);
  j.at("skill").get_to(a.skill);
  j.at("doc_id").get_to(a.doc_id);
  j.at("code").get_to(a.code);
  a.report = envsandbox::ValidationReport::from_json(j.at("report"));
  a.sample = sample_from_json(j.at("sample"));
  a.self_validation = static_cast<rollout::SelfValidation>(j.at("self_validation").get<int>());
  return a;
}

namespace {
// The shape of every split below: this rank runs `local(its items, rank_seed(seed))` on items[mine]
// (nothing when it owns none), and every rank gets all results back in item order through JSON.
// One process: local(items, seed) itself, without the exchange.
template <class In, class Local, class ToJson, class FromJson>
auto split_and_gather(const DistributedContext& dist, const std::vector<In>& items, const std::vector<size_t>& mine,
                      uint64_t seed, const Local& local, const ToJson& to_json, const FromJson& from_json,
                      const std::string& what) -> decltype(local(items, seed)) {
  if (!dist.active()) return local(items, seed);
  std::vector<In> my_items;
  for (size_t i : mine) my_items.push_back(items[i]);
  std::vector<nlohmann::json> results;
  if (!my_items.empty())
    for (const auto& r : local(my_items, rank_seed(dist, seed))) results.push_back(to_json(r));
  decltype(local(items, seed)) out;
  for (const nlohmann::json& j : gather_indexed(dist, items.size(), mine, std::move(results), what))
    out.push_back(from_json(j));
  return out;
}
}  // namespace

std::vector<rollout::DesignAttempt> design_round_split(const DistributedContext& dist,
                                                       const std::vector<rollout::DesignRequest>& requests,
                                                       uint64_t seed, const rollout::DesignRoundFn& local) {
  return split_and_gather(dist, requests, owned_indices(requests.size(), dist.rank(), dist.world_size()), seed, local,
                          design_attempt_to_json, design_attempt_from_json, "designer round");
}

std::vector<std::string> write_hints_split(const DistributedContext& dist, const std::vector<std::string>& programs,
                                           uint64_t seed, const HintWriterFn& local) {
  return split_and_gather(
      dist, programs, owned_indices(programs.size(), dist.rank(), dist.world_size()), seed, local,
      [](const std::string& hint) { return nlohmann::json(hint); },
      [](const nlohmann::json& j) { return j.get<std::string>(); }, "hints");
}

std::vector<rollout::EpisodeResult> play_groups_split(const DistributedContext& dist, rollout::PolicyRef policy,
                                                      envsandbox::EnvServer& server,
                                                      const std::vector<rollout::EpisodeSpec>& specs,
                                                      int group_size, const rollout::EpisodeOptions& options,
                                                      uint64_t seed) {
  if (!dist.active()) return rollout::play_episodes(policy, server, specs, options, seed);
  if (group_size < 1 || specs.size() % static_cast<size_t>(group_size) != 0)
    throw Error("play_groups_split: " + std::to_string(specs.size()) + " plays are not whole groups of " +
                std::to_string(group_size));
  std::vector<size_t> mine;  // spec indices of this rank's groups
  for (size_t g : owned_indices(specs.size() / group_size, dist.rank(), dist.world_size()))
    for (int i = 0; i < group_size; ++i) mine.push_back(g * group_size + i);
  const auto local = [&](const std::vector<rollout::EpisodeSpec>& my_specs, uint64_t s) {
    return rollout::play_episodes(policy, server, my_specs, options, s);
  };
  return split_and_gather(dist, specs, mine, seed, local, episode_to_json, episode_from_json, "play_groups_split");
}

std::vector<rollout::Sample> batch_share(const DistributedContext& dist, const std::vector<rollout::Sample>& batch,
                                         size_t n_designer, int group_size) {
  if (!dist.active()) return batch;
  const size_t W = static_cast<size_t>(dist.world_size()), r = static_cast<size_t>(dist.rank());
  std::vector<rollout::Sample> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    const bool mine = i < n_designer ? i % W == r : ((i - n_designer) / std::max(1, group_size)) % W == r;
    if (mine) out.push_back(batch[i]);
  }
  return out;
}

SelfPlayState broadcast_state(const DistributedContext& dist, const SelfPlayState& state) {
  if (!dist.active()) return state;
  std::string bytes;
  if (dist.is_main()) {
    const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(state_to_json(state));
    bytes.assign(cbor.begin(), cbor.end());
  }
  return state_from_json(nlohmann::json::from_cbor(dist.broadcast_string(bytes, 0)));
}

}  // namespace spade::trainer
