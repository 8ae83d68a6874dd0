// Removes a directory tree without following symlinks or crossing mount points (the tree may have been
// written by an untrusted program). Shared by spade-envd and the host library.
#pragma once
#include <string>

namespace spade::envsandbox {

/// Best effort: entries that cannot be removed are left. No-op for "".
void remove_tree(const std::string& dir);

}  // namespace spade::envsandbox
