#include "policy/sp_bpe_model.h"

#include <cstdio>

#include "policy/byte_level.h"

namespace spade::policy {

SpBpeModel::SpBpeModel(tokenizer_json::BpeModelParts parts, const Options& options, const std::string& where)
    : model_(std::move(parts.vocab), parts.merges, false, -1, where, BpeSpelling::kText),
      options_(options),
      unk_id_(parts.unk_id) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);  // HF: format!("<{:#04X}>", b)
    byte_id_[b] = model_.find(name);
  }
}

void SpBpeModel::encode(const std::string& text, std::vector<int64_t>& out) const {
  if (text.empty()) return;
  if (options_.ignore_merges) {
    const int64_t whole = model_.find(text);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  std::vector<int64_t> symbols;
  symbols.reserve(text.size());
  bool unk_pending = false;  // an unk symbol not yet added (HF keeps it aside to fuse the next one into)
  for (size_t i = 0; i < text.size();) {
    int32_t cp;
    const size_t len = static_cast<size_t>(byte_level::utf8_next(text, i, cp));
    const int64_t id = model_.find(text.substr(i, len));
    if (id >= 0) {
      if (unk_pending) symbols.push_back(unk_id_);
      unk_pending = false;
      symbols.push_back(id);
    } else {
      bool fell_back = false;
      if (options_.byte_fallback) {
        fell_back = true;
        for (size_t k = i; k < i + len; ++k) fell_back = fell_back && byte_id_[static_cast<uint8_t>(text[k])] >= 0;
        if (fell_back)
          for (size_t k = i; k < i + len; ++k) symbols.push_back(byte_id_[static_cast<uint8_t>(text[k])]);
      }
      if (!fell_back && unk_id_ >= 0) {
        if (unk_pending && !options_.fuse_unk) symbols.push_back(unk_id_);
        unk_pending = true;
      }
    }
    i += len;
  }
  if (unk_pending) symbols.push_back(unk_id_);
  model_.merge_all(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace spade::policy
