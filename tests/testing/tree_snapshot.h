// A directory tree as a map (relative path -> file content, or "<dir>" / "<link>"), to check that a
// command left a tree untouched (header-only; namespace spade::fixtures).
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace spade::fixtures {

/// Every entry under `root` (hidden ones included); empty when `root` does not exist. A regular
/// file's value is its content. Symlinks are recorded, not followed.
inline std::map<std::string, std::string> tree_snapshot(const std::string& root) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  if (!fs::exists(root)) return out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_symlink()) {
      out[rel] = "<link>";
    } else if (it->is_directory()) {
      out[rel] = "<dir>";
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      out[rel] = s.str();
    }
  }
  return out;
}

/// The names directly in `dir` that start with `prefix` (e.g. "." + name + ".tmp."): temporary
/// siblings a writer must not leave behind.
inline int count_entries_with_prefix(const std::string& dir, const std::string& prefix) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

}  // namespace spade::fixtures
