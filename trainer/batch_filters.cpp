#include "trainer/batch_filters.h"

#include <algorithm>
#include <map>

#include "common/error.h"

namespace spade::trainer {

double BatchFilterResult::frac_zero_std() const {
  return groups > 0 ? static_cast<double>(zero_std_groups) / static_cast<double>(groups) : 0.0;
}

double BatchFilterResult::truncated_frac() const {
  return plays > 0 ? static_cast<double>(truncated_plays) / static_cast<double>(plays) : 0.0;
}

BatchFilterResult filter_agent_plays(const std::vector<double>& rewards, const std::vector<std::string>& group_ids,
                                     const std::vector<bool>& truncated, const BatchFilterOptions& options) {
  if (group_ids.size() != rewards.size() || truncated.size() != rewards.size())
    throw Error("filter_agent_plays: " + std::to_string(rewards.size()) + " rewards, " +
                std::to_string(group_ids.size()) + " group ids and " + std::to_string(truncated.size()) +
                " truncated flags: one of each per play expected");
  BatchFilterResult out;
  out.plays = static_cast<int64_t>(rewards.size());
  // Zero-std exactly as reward::group_advantages decides "all equal": every reward == the first.
  std::map<std::string, bool> all_equal;  // group id -> its rewards so far are all equal
  std::map<std::string, double> first;
  for (size_t i = 0; i < rewards.size(); ++i) {
    const auto [it, fresh] = first.emplace(group_ids[i], rewards[i]);
    bool& eq = all_equal[group_ids[i]];
    eq = fresh ? true : eq && rewards[i] == it->second;
  }
  out.groups = static_cast<int64_t>(all_equal.size());
  for (const auto& [id, eq] : all_equal) out.zero_std_groups += eq;
  out.keep.assign(rewards.size(), true);
  for (size_t i = 0; i < rewards.size(); ++i) {
    out.truncated_plays += truncated[i];
    if (options.filter_zero_std_groups && all_equal[group_ids[i]]) out.keep[i] = false;
    if (options.mask_truncated && truncated[i]) out.keep[i] = false;
    if (out.keep[i]) out.kept.push_back(i);
  }
  out.dropped = out.plays - static_cast<int64_t>(out.kept.size());
  return out;
}

std::vector<rollout::Sample> blank_dropped(const std::vector<rollout::Sample>& batch, size_t n_designer,
                                           const std::vector<bool>& keep) {
  if (batch.size() != n_designer + keep.size())
    throw Error("blank_dropped: a batch of " + std::to_string(batch.size()) + " samples is not " +
                std::to_string(n_designer) + " designer samples + " + std::to_string(keep.size()) + " agent plays");
  std::vector<rollout::Sample> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (i < n_designer || keep[i - n_designer]) {
      out.push_back(batch[i]);
    } else {
      rollout::Sample blank;  // no tokens: trains nothing, counts in no normaliser
      blank.role = batch[i].role;
      blank.env_id = batch[i].env_id;
      out.push_back(std::move(blank));
    }
  }
  return out;
}

void remove_empty(std::vector<rollout::Sample>& samples) {
  samples.erase(std::remove_if(samples.begin(), samples.end(),
                               [](const rollout::Sample& s) { return s.tokens.empty(); }),
                samples.end());
}

double learnable_share(const std::vector<double>& success_rates, double low, double high) {
  if (low > high)
    throw Error("learnable_share: band [" + std::to_string(low) + ", " + std::to_string(high) + "] is empty");
  if (success_rates.empty()) return 0.0;
  size_t in_band = 0;
  for (double s : success_rates) in_band += s >= low && s <= high;
  return static_cast<double>(in_band) / static_cast<double>(success_rates.size());
}

}  // namespace spade::trainer
