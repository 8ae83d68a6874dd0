// evaldual/ subprocesses: run a program with a host-side deadline, capped combined output and
// whole-process-group kill on timeout. The one place evaldual starts processes (posix_spawn, never
// fork: the `spade` binary may already run LibTorch threads, docs/design.md "Contracts").
//
// Thread-safety: run_process() is thread-safe (no shared state); each call owns its child.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace spade::evaldual {

/// How to run one process.
struct ProcessOptions {
  double timeout_s = 180.0;            // host deadline in seconds (reference §4: 180 s); <= 0: none
  size_t output_cap_bytes = 1 << 20;   // combined stdout+stderr kept: head half + tail half, bytes
  std::string cwd;                     // working directory; empty: inherit
  std::string stdin_data;              // written to the child's stdin, then closed
  bool merge_stderr = true;            // stderr into the same stream as stdout (the observation)
};

/// What a process did.
struct ProcessResult {
  int rc = -1;                 // exit status; 128+signal when killed by a signal; -1 on timeout
  bool timed_out = false;      // the deadline passed and the process group was SIGKILLed
  std::string output;          // stdout (+ stderr when merged), capped: "\n[... N bytes elided ...]\n"
  std::string error_output;    // stderr when not merged (capped the same way)
  bool output_truncated = false;
  double seconds = 0.0;        // wall clock, seconds
};

/// Runs argv[0] (looked up in PATH) with argv in its own process group. On timeout SIGKILLs the whole
/// group and reports rc -1 / timed_out. Output beyond the cap is dropped from the middle (the head and
/// tail are kept: test summaries are at the end). Sets SIGPIPE to SIG_IGN in this process (a child that
/// exits before reading its stdin must not kill the host). Throws spade::Error only when the program cannot be
/// started (message names argv[0] and errno); a non-zero exit is a value, not an error.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

/// Quotes `s` for /bin/sh (single quotes; embedded ' becomes '\'').
std::string shell_quote(const std::string& s);

}  // namespace spade::evaldual
