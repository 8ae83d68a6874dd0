// The episode defaults of SPADE (docs/sources.md, reference §3 and §5): the one copy, read by
// rollout::EpisodeOptions and the run config's selfplay section (trainer/config.h). Torch-free;
// constants only.
#pragma once

namespace spade::rollout::episode_defaults {

inline constexpr int kMaxTurns = 25;          // reference §3: 25 turns per episode (and the constructor cap)
inline constexpr int kContextTokens = 32768;  // reference §5: context 32768 tokens per episode
inline constexpr int kMaxBatch = 64;          // sequences decoded together (a throughput knob, not the paper's)

}  // namespace spade::rollout::episode_defaults
