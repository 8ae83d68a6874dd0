#include "apps/json_io.h"

#include <cstdio>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"

namespace spade::apps {

nlohmann::json read_json_file(const std::string& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path + ": not valid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
}

nlohmann::json last_json_line_of(const std::string& command, const std::string& what) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) throw Error(what + ": cannot run " + command);
  std::string out, last;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') last = line;
  if (rc != 0 || last.empty()) throw Error(what + ": the reference failed (" + command + "):\n" + out);
  try {
    return nlohmann::json::parse(last);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(what + ": the reference printed malformed JSON (" + e.what() + "): " + last);
  }
}

}  // namespace spade::apps
