// Small helpers shared by test files (header-only; namespace spade::fixtures).
#pragma once
#include <filesystem>
#include <functional>
#include <string>

#include "common/error.h"

namespace spade::fixtures {

/// An empty directory SPADE_TEST_TMP/<group>/<name> (removed first if it exists).
inline std::string fresh_test_dir(const std::string& group, const std::string& name) {
  std::string d = std::string(SPADE_TEST_TMP) + "/" + group + "/" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// The message of the spade::Error that `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const spade::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace spade::fixtures
