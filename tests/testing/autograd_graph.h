// Test helper: inspect the autograd graph behind a tensor (header-only; namespace spade::fixtures).
#pragma once
#include <torch/torch.h>

#include <deque>
#include <set>
#include <string>

namespace spade::fixtures {

/// True when the autograd graph behind `t` (its grad_fn and everything reachable from it) has a node
/// whose name() contains `needle` (e.g. "CheckpointedLayer", "CopySlices").
inline bool graph_has(const torch::Tensor& t, const std::string& needle) {
  std::deque<torch::autograd::Node*> todo{t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!todo.empty()) {
    torch::autograd::Node* n = todo.front();
    todo.pop_front();
    if (!n || !seen.insert(n).second) continue;
    if (n->name().find(needle) != std::string::npos) return true;
    for (const auto& e : n->next_edges()) todo.push_back(e.function.get());
  }
  return false;
}

}  // namespace spade::fixtures
