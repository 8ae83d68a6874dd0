// JSON that comes from outside the process, for the `spade` commands.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace spade::apps {

/// Parses the file at `path`. Throws spade::Error naming the path when it cannot be read, and the path
/// and the byte offset when it is not valid JSON.
nlohmann::json read_json_file(const std::string& path);

/// Runs `command` with popen (stdout and whatever the command redirects into it), and returns the
/// last output line that starts with '{', parsed: the JSON result a reference script prints last
/// (bench/sampler_ref.py, bench/trainer_reference.py). Throws spade::Error starting with `what`, with
/// the command and its whole output, when it cannot start, exits non-zero, or prints no JSON line.
nlohmann::json last_json_line_of(const std::string& command, const std::string& what);

}  // namespace spade::apps
