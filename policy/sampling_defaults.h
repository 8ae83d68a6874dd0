// The sampling defaults of SPADE (docs/sources.md, reference §5): the one copy, read by
// rollout::SamplingParams, the generation_config.json of saved checkpoints (policy/checkpoint.h) and
// the run config's selfplay.<role> sections (trainer/config.h).
// Torch-free; constants only.
#pragma once

namespace spade::policy::sampling_defaults {

inline constexpr double kTemperature = 0.6;      // reference §5: temperature 0.6 (designer and agent)
inline constexpr double kHintTemperature = 0.3;  // reference §5: hint/validator temperature 0.3
inline constexpr double kTopP = 0.95;            // reference §5: top-p 0.95
inline constexpr int kTopK = 20;                 // reference §5: top-k 20
inline constexpr double kMinP = 0.0;             // off

}  // namespace spade::policy::sampling_defaults
