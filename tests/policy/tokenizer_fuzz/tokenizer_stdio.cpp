// tokenizer_stdio DIR: loads the tokenizer of checkpoint directory DIR (Tokenizer::load_dir), prints
// {"ready":true}, then answers each stdin line (a JSON string) with one JSON line
// {"parsed": encode(text, true), "plain": encode(text, false), "dec": decode(parsed)}, or {"error": ...}.
// The spade side of the differential fuzz test (tests/policy/tokenizer_fuzz/fuzz.mjs); not a test itself.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tokenizer_stdio DIR\n";
    return 2;
  }
  const spade::policy::Tokenizer tok = spade::policy::Tokenizer::load_dir(argv[1]);
  std::cout << "{\"ready\":true}" << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    nlohmann::json out;
    try {
      const std::string text = nlohmann::json::parse(line).get<std::string>();
      const auto parsed = tok.encode(text, true);
      out["parsed"] = parsed;
      out["plain"] = tok.encode(text, false);
      try {
        out["dec"] = tok.decode(parsed);
      } catch (const std::exception& e) {
        out["dec_error"] = e.what();
      }
    } catch (const std::exception& e) {
      out["error"] = e.what();
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  }
  return 0;
}
