// Encode throughput of spade's tokenizer on one text file, per tokenizer directory (bench/RESULTS.md,
// "Tokenizer encode throughput"; the tokenizers.js side is `node tests/policy/tokenizer_reference.mjs
// --bench FILE`). Prints one JSON line per directory: bytes, tokens, load time, and tokens/s of the first
// encode ("cold") and of the best of 3 more ("warm"; spade keeps no word cache, so both measure the same
// work), plus a checksum of the ids (h = (31 h + id) mod 1e9+7, the same formula as the .mjs bench) so
// the implementations can be seen to produce the same ids on the whole file, for encode(text, false) and
// (ids_checksum_parse_special, not timed) encode(text, true).
// Usage: bench_tokenizer TEXT_FILE DIR...   (DIR as for Tokenizer::load_dir)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/error.h"
#include "policy/tokenizer.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: bench_tokenizer TEXT_FILE DIR...\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "bench_tokenizer: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  try {
    for (int a = 2; a < argc; ++a) {
      auto t0 = std::chrono::steady_clock::now();
      const spade::policy::Tokenizer tok = spade::policy::Tokenizer::load_dir(argv[a]);
      const double load_s = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      const std::vector<int64_t> ids = tok.encode(text, false);
      const double cold_s = seconds_since(t0);
      double warm_s = 1e30;
      for (int r = 0; r < 3; ++r) {
        t0 = std::chrono::steady_clock::now();
        const size_t n = tok.encode(text, false).size();
        warm_s = std::min(warm_s, seconds_since(t0));
        if (n != ids.size()) throw spade::Error("bench_tokenizer: encode is not deterministic");
      }
      int64_t h = 0, hp = 0;
      for (int64_t id : ids) h = (h * 31 + id) % 1000000007;
      for (int64_t id : tok.encode(text, true)) hp = (hp * 31 + id) % 1000000007;
      std::printf(
          "{\"impl\": \"spade\", \"dir\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, \"ids_checksum\": %lld, "
          "\"ids_checksum_parse_special\": %lld, \"load_ms\": %.1f, \"cold_tokens_per_s\": %.0f, \"warm_tokens_per_s\": %.0f, \"cold_s\": %.3f, "
          "\"warm_s\": %.3f}\n",
          argv[a], text.size(), ids.size(), static_cast<long long>(h), static_cast<long long>(hp), load_s * 1e3, ids.size() / cold_s,
          ids.size() / warm_s, cold_s, warm_s);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
