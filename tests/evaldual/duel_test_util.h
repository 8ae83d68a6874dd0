// Helpers shared by the duel protocol tests (tests/evaldual/test_duel_*.cpp).
#pragma once
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "common/atomic_file.h"

namespace spade::evaldual::testing {

/// A fresh empty directory under SPADE_TEST_TMP, unique per call (pid + counter + name).
inline std::string fresh_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  std::string d = std::string(SPADE_TEST_TMP) + "/duel/" + std::to_string(getpid()) + "-" +
                  std::to_string(counter++) + "-" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline void put(const std::string& dir, const std::string& rel, const std::string& text) {
  spade::write_file_atomic(dir + "/" + rel, text);
}

inline std::string fixture(const std::string& rel) {
  return std::string(SPADE_SOURCE_DIR) + "/tests/evaldual/fixtures/" + rel;
}

}  // namespace spade::evaldual::testing
