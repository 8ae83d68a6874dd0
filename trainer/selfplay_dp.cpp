#include "trainer/selfplay_dp.h"

#include "common/error.h"

namespace spade::trainer {

namespace {
// splitmix64 (Steele et al. 2014): decorrelates the ranks' sampling seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

nlohmann::json episode_to_json(const rollout::EpisodeResult& r) {
  return {{"sample", sample_to_json(r.sample)}, {"reward", r.reward},   {"terminated", r.terminated},
          {"truncated", r.truncated},           {"turns", r.turns},     {"failure", r.failure},
          {"actions", r.actions}};
}

rollout::EpisodeResult episode_from_json(const nlohmann::json& j) {
  rollout::EpisodeResult r;
  r.sample = sample_from_json(j.at("sample"));
  j.at("reward").get_to(r.reward);
  j.at("terminated").get_to(r.terminated);
  j.at("truncated").get_to(r.truncated);
  j.at("turns").get_to(r.turns);
  j.at("failure").get_to(r.failure);
  j.at("actions").get_to(r.actions);
  return r;
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
  const size_t groups = specs.size() / group_size;
  std::vector<size_t> mine;  // spec indices of this rank's groups
  for (size_t g : owned_indices(groups, dist.rank(), dist.world_size()))
    for (int i = 0; i < group_size; ++i) mine.push_back(g * group_size + i);
  std::vector<rollout::EpisodeSpec> my_specs;
  for (size_t i : mine) my_specs.push_back(specs[i]);
  std::vector<rollout::EpisodeResult> played;
  if (!my_specs.empty())
    played = rollout::play_episodes(policy, server, my_specs, options, mix(seed ^ mix(dist.rank() + 1)));

  nlohmann::json msg = {{"index", mine}, {"results", nlohmann::json::array()}};
  for (const rollout::EpisodeResult& r : played) msg["results"].push_back(episode_to_json(r));
  const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(msg);
  const std::vector<std::string> all = dist.all_gather_strings(std::string(bytes.begin(), bytes.end()));

  std::vector<rollout::EpisodeResult> out(specs.size());
  std::vector<bool> seen(specs.size(), false);
  for (const std::string& part : all) {
    const nlohmann::json j = nlohmann::json::from_cbor(part);
    const std::vector<size_t> index = j.at("index").get<std::vector<size_t>>();
    const nlohmann::json& results = j.at("results");
    if (results.size() != index.size()) throw Error("play_groups_split: a rank sent unequal index/results");
    for (size_t k = 0; k < index.size(); ++k) {
      if (index[k] >= out.size() || seen[index[k]]) throw Error("play_groups_split: bad or repeated play index");
      out[index[k]] = episode_from_json(results[k]);
      seen[index[k]] = true;
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw Error("play_groups_split: play " + std::to_string(i) + " came back from no rank");
  return out;
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
