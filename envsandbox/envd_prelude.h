// spade-envd: what the zygote prepares once, before any fork, so every child starts warm.
//  - the modules environment programs may use, imported (their pages are then shared copy-on-write);
//  - the names the reference loader pre-injects into a program's namespace (reference §2);
//  - small Python helpers the child calls (namespace creation, class lookup, instantiation,
//    exception description, f-string brace repair, global RNG reseeding, the tool-use report) and the
//    tool-use base class ToolUseEnv (reference §7), injected into every program.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

namespace spade::envsandbox::envd {

struct Prelude {
  pybind11::dict names;      // copied into each program's fresh module dict
  pybind11::module_ helpers; // the `_spade_envd_helpers` module (see envd_prelude.cpp)
  bool numpy = false;        // numpy importable (injected as `np`)
};

/// Imports the allowed modules and builds the prelude. Requires the GIL. Throws pybind11::error_already_set
/// if a required standard module fails to import (a broken Python installation).
Prelude load_prelude();

}  // namespace spade::envsandbox::envd
