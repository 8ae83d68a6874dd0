// Memory figures of this process from /proc/self (Linux), for metrics and benchmarks.
#pragma once
#include <cstdint>

namespace spade {

/// Peak resident set size of this process in bytes (VmHWM of /proc/self/status: since start, or since
/// the last reset_peak_rss()); 0 when unavailable.
int64_t peak_rss_bytes();

/// Resets the peak to the current resident set ("5" to /proc/self/clear_refs, Linux >= 4.0); best
/// effort, silent when not permitted.
void reset_peak_rss();

}  // namespace spade
