// spade-envd: a capped sink that replaces sys.stdout and sys.stderr inside a child, so a program's
// printing is kept (up to a cap) for error details and can never reach the protocol channel.
// File descriptors 1 and 2 point at /dev/null as well, so os.write(1, ...) is discarded.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace spade::envsandbox::envd {

class OutputSink {
 public:
  explicit OutputSink(int64_t cap_bytes) : cap_(cap_bytes) {}

  /// file.write(s): keeps at most the cap over the child's lifetime, then one truncation marker.
  /// Returns len(s) like io.TextIOBase.write. Raises TypeError for non-str, as TextIOWrapper does.
  int64_t write(const pybind11::handle& text);

  /// Output written since the previous take() (C++ only; never calls Python code).
  std::string take();

 private:
  int64_t cap_;
  int64_t kept_ = 0;
  bool truncated_ = false;
  std::string pending_;
};

/// Registers the `_spade_envd_output.OutputSink` Python type (call once, before forking).
void register_output_sink_type();

/// Creates a sink (cap >= 0), installs it as sys.stdout and sys.stderr, and returns a C++ pointer to it (owned by
/// the returned Python object, which the caller must keep alive).
pybind11::object install_output_sink(int64_t cap_bytes, OutputSink** sink);

}  // namespace spade::envsandbox::envd
