// The machine a benchmark ran on, for its JSON report. Thread-safety: reads /proc; thread-safe.
#pragma once
#include <string>

namespace spade::apps {

/// The CPU's "model name" from /proc/cpuinfo, or "unknown".
std::string cpu_model();

}  // namespace spade::apps
