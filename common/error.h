// spade::Error: the one exception type the project throws for bad input.
// Messages follow a compiler's style: what is wrong, where (file, key, tensor), what would fix it.
#pragma once
#include <stdexcept>
#include <string>

namespace spade {

/// Thrown for invalid user input (configs, checkpoints, files) and broken invariants at a boundary.
/// what() names the offending file/key/tensor. Not thrown for expected per-environment failures:
/// those are reported as values (see envsandbox/).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace spade
