#include "envsandbox/remove_tree.h"

#include <ftw.h>

#include <cstdio>

namespace spade::envsandbox {
namespace {

int remove_entry(const char* path, const struct stat*, int, FTW*) {
  std::remove(path);
  return 0;
}

}  // namespace

void remove_tree(const std::string& dir) {
  if (!dir.empty()) nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

}  // namespace spade::envsandbox
