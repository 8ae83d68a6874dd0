#include "policy/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <tuple>

#include "common/error.h"
#include "policy/byte_level.h"

namespace spade::policy {

BpeModel::BpeModel(std::unordered_map<std::string, int64_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                   int64_t unk_id, const std::string& where, BpeSpelling spelling)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges), unk_id_(unk_id), spelling_(spelling) {
  int64_t end = 0;
  // The tables below are indexed by id, so ids far beyond the number of pieces would cost memory for
  // nothing (2^31 entries: tens of GB); real files are dense (Gemma 3: ids 0..262143, no gaps).
  const int64_t max_id = std::min<int64_t>(INT32_MAX, static_cast<int64_t>(vocab_.size()) + kMaxIdGap);
  for (const auto& [p, id] : vocab_) {
    if (id < 0 || id > max_id)
      throw spade::Error(where + ": model.vocab: id " + std::to_string(id) + " of '" + p + "' is out of range (0.." +
                         std::to_string(max_id) + ": the number of pieces + 2^20)");
    end = std::max(end, id + 1);
  }
  pieces_.assign(end, "");
  bytes_.assign(end, "");
  has_.assign(end, 0);
  for (const auto& [p, id] : vocab_) {
    pieces_[id] = p;
    bytes_[id] = spelling == BpeSpelling::kByteLevel ? byte_level::decode(p) : p;
    has_[id] = 1;
  }
  for (int b = 0; b < 256; ++b) {
    if (spelling != BpeSpelling::kByteLevel) {
      byte_id_[b] = -1;
      continue;
    }
    std::string s;
    byte_level::append_utf8(s, byte_level::byte_to_char(static_cast<uint8_t>(b)));
    auto it = vocab_.find(s);
    byte_id_[b] = it == vocab_.end() ? -1 : it->second;
  }
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [l, rt] = merges[r];
    const std::string at = where + ": model.merges[" + std::to_string(r) + "] ('" + l + " " + rt + "')";
    auto li = vocab_.find(l), ri = vocab_.find(rt), mi = vocab_.find(l + rt);
    if (li == vocab_.end()) throw spade::Error(at + ": '" + l + "' is not in model.vocab");
    if (ri == vocab_.end()) throw spade::Error(at + ": '" + rt + "' is not in model.vocab");
    if (mi == vocab_.end()) throw spade::Error(at + ": the merged piece '" + l + rt + "' is not in model.vocab");
    // A repeated pair keeps its first (lowest) rank, as HF's merge map does when built in order.
    merges_.emplace(key(li->second, ri->second), Merge{static_cast<int32_t>(r), mi->second});
  }
}

const std::string* BpeModel::piece(int64_t id) const {
  return id >= 0 && id < id_end() && has_[id] ? &pieces_[id] : nullptr;
}

const std::string* BpeModel::bytes(int64_t id) const {
  return id >= 0 && id < id_end() && has_[id] ? &bytes_[id] : nullptr;
}

void BpeModel::encode_word(const std::string& word, std::vector<int64_t>& out) const {
  if (word.empty()) return;
  if (spelling_ != BpeSpelling::kByteLevel)
    throw spade::Error("BpeModel::encode_word: the vocabulary is not spelled in the byte-level alphabet");
  if (ignore_merges_) {
    auto it = vocab_.find(byte_level::encode(word));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int64_t> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(word[i]);
    symbols[i] = byte_id_[b];
    if (symbols[i] < 0) {
      if (unk_id_ < 0) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02X", b);
        throw spade::Error(std::string("BPE encode: byte ") + hex +
                           " has no one-character piece in the vocabulary and the model has no unk_token");
      }
      symbols[i] = unk_id_;
    }
  }
  merge_all(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeModel::merge_all(std::vector<int64_t>& id) const {
  const int n = static_cast<int>(id.size());
  if (n < 2) return;
  std::vector<int> next(n), prev(n);
  for (int i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  // Min-heap of candidate merges (rank, left position, left id, right id); stale entries (a side already
  // merged into something else) are skipped when popped.
  using Cand = std::tuple<int32_t, int, int64_t, int64_t>;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    auto it = merges_.find(key(id[left], id[next[left]]));
    if (it != merges_.end()) heap.emplace(it->second.rank, left, id[left], id[next[left]]);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<char> alive(n, 1);
  while (!heap.empty()) {
    auto [rank, left, lid, rid] = heap.top();
    heap.pop();
    const int right = next[left];
    if (!alive[left] || right < 0 || id[left] != lid || id[right] != rid) continue;
    id[left] = merges_.at(key(lid, rid)).id;
    alive[right] = 0;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left]);
    push(left);
  }
  size_t k = 0;
  for (int i = 0; i >= 0; i = next[i]) id[k++] = id[i];
  id.resize(k);
}

}  // namespace spade::policy
