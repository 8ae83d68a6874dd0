#include "common/output_path.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"

namespace fs = std::filesystem;

namespace spade {

namespace {

// A directory walk stops here: a target this large is refused rather than scanned for minutes.
constexpr size_t kMaxScannedEntries = 200000;

// `path` absolute and normal, without a trailing separator ("out/" names the directory out).
fs::path absolute_normal(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  return p;
}

// absolute_normal with existing symlinks resolved.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  const fs::path p = absolute_normal(path);
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p : absolute_normal(c.string());
}

// Whether `inner` is `outer` or lies below it (both resolved).
bool within(const fs::path& inner, const fs::path& outer) {
  const fs::path rel = inner.lexically_relative(outer);
  if (rel.empty()) return false;
  const std::string first = rel.begin()->string();
  return first != "..";
}

std::string describe_entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += ", ... (" + std::to_string(names.size()) + " entries)";
  return out;
}

bool is_empty(const fs::path& p, OutputKind kind) {
  std::error_code ec;
  if (kind == OutputKind::file) return fs::file_size(p, ec) == 0 && !ec;
  return fs::directory_iterator(p, ec) == fs::directory_iterator() && !ec;
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream s;
  s << ::getpid() << "." << std::hex << rng();
  return s.str();
}

// ".NAME.tmp.PID.HEX" and ".NAME.old.PID.HEX" siblings (write_file_atomic and StagedDir name their
// temporaries so) whose process is gone: a writer killed mid-write left them.
void remove_stale_siblings(const fs::path& target) {
  const fs::path parent = target.parent_path();
  const std::string name = target.filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string entry = e.path().filename().string();
    for (const char* kind : {".tmp.", ".old."}) {
      const std::string prefix = "." + name + kind;
      if (!starts_with(entry, prefix)) continue;
      const std::string rest = entry.substr(prefix.size());
      const size_t dot = rest.find('.');
      if (dot == std::string::npos || dot == 0) continue;
      const std::string pid_text = rest.substr(0, dot);
      if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stoll(pid_text));
      if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      std::error_code rm;
      fs::remove_all(e.path(), rm);
    }
  }
}

// The first spade run directory at or below `dir` ("" if none), `dir` itself only when `with_root`.
// Symlinks are not followed.
std::string find_run_directory(const fs::path& dir, bool with_root, const std::string& what, const std::string& shown) {
  if (with_root && is_run_directory(dir.string())) return dir.string();
  std::error_code ec;
  size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (++seen > kMaxScannedEntries)
      throw Error(what + " " + shown + ": holds more than " + std::to_string(kMaxScannedEntries) +
                  " entries; refusing to replace a directory that large (give a new or empty directory)");
    if (it->is_directory(ec) && !it->is_symlink(ec) && is_run_directory(it->path().string()))
      return it->path().string();
  }
  return "";
}

}  // namespace

bool is_run_directory(const std::string& dir) {
  std::error_code ec;
  const fs::path d(dir);
  return fs::is_directory(d, ec) && fs::is_regular_file(d / "config.yaml", ec) &&
         (fs::is_directory(d / "checkpoints", ec) || fs::is_regular_file(d / "metrics.jsonl", ec));
}

bool check_output(const std::string& path, OutputKind kind, const OutputRule& rule) {
  const std::string what = rule.what.empty() ? std::string("output") : rule.what;
  if (path.empty()) throw Error(what + ": the path is empty");
  const fs::path target = resolved(path);
  const fs::path parent = target.parent_path();
  std::error_code ec;
  if (!fs::exists(parent, ec)) {
    if (rule.may_create_parent) return false;
    throw Error(what + " " + path + ": the directory " + parent.string() +
                " does not exist; create it first, or give a path in an existing directory");
  }
  if (!fs::is_directory(parent, ec)) throw Error(what + " " + path + ": " + parent.string() + " is not a directory");
  remove_stale_siblings(target);
  if (!fs::exists(fs::symlink_status(target, ec))) return false;

  const bool is_dir = fs::is_directory(target, ec);
  if (kind == OutputKind::file && is_dir)
    throw Error(what + " " + path + ": is a directory; give the path of a file");
  if (kind == OutputKind::directory && !is_dir)
    throw Error(what + " " + path + ": exists and is not a directory; give a new or empty directory");
  if (is_empty(target, kind)) return false;

  // Never replaced, --overwrite or not: an input, a directory holding one, the working directory, a run.
  for (const std::string& input : rule.inputs) {
    if (input.empty()) continue;
    const fs::path in = resolved(input);
    if (in == target)
      throw Error(what + " " + path + ": is the input " + input + " of this command; write to another path");
    if (within(in, target))
      throw Error(what + " " + path + ": contains the input " + input +
                  " of this command and is never replaced; give a new or empty directory");
  }
  if (is_dir) {
    const fs::path cwd = resolved(fs::current_path(ec).string());
    if (!ec && (cwd == target || within(cwd, target)))
      throw Error(what + " " + path + ": contains the current directory and is never replaced; give a new or empty directory");
    const std::string run = find_run_directory(target, !rule.may_replace_run, what, path);
    if (!run.empty())
      throw Error(what + " " + path + ": " + (run == target.string() ? std::string("is a spade run directory")
                                                                    : "contains the spade run directory " + run) +
                  " and is never replaced (runs are replaced only by `spade train --overwrite`); "
                  "give a new or empty directory");
  }
  if (rule.own && rule.own(target.string())) return true;
  if (rule.overwrite) return true;
  const std::string held = is_dir ? " (holds " + describe_entries(target) + ")" : "";
  const std::string fix = rule.overwrite_flag.empty()
                              ? "give a new path"
                              : "pass " + rule.overwrite_flag + " to replace it, or give a new path";
  throw Error(what + " " + path + ": exists and is not empty" + held + "; " + fix);
}

void write_output_file(const std::string& path, std::string_view data, const OutputRule& rule) {
  check_output(path, OutputKind::file, rule);
  write_file_atomic(path, data);
}

StagedDir::StagedDir(const std::string& target, const OutputRule& rule) : target_(target) {
  check_output(target, OutputKind::directory, rule);
  const fs::path t = absolute_normal(target);
  std::error_code ec;
  if (!fs::exists(t.parent_path(), ec)) {
    fs::create_directories(t.parent_path(), ec);
    if (ec) throw Error(rule.what + " " + target + ": cannot create " + t.parent_path().string() + ": " + ec.message());
  }
  staging_ = (t.parent_path() / ("." + t.filename().string() + ".tmp." + random_suffix())).string();
  if (!fs::create_directory(staging_, ec) || ec)
    throw Error(rule.what + " " + target + ": cannot create the temporary directory " + staging_ + ": " +
                (ec ? ec.message() : "it exists"));
}

StagedDir::~StagedDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagedDir::commit() {
  const fs::path t = absolute_normal(target_);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(t, ec)) || (fs::is_directory(t, ec) && fs::is_empty(t, ec))) {
    // rename(2) replaces an empty directory in one step.
    if (::rename(staging_.c_str(), t.c_str()) != 0)
      throw Error("cannot rename " + staging_ + " to " + target_ + ": " + std::strerror(errno));
    committed_ = true;
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, t.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;  // staging_ now holds the old content
    fs::remove_all(staging_, ec);
    return;
  }
  // No RENAME_EXCHANGE on this file system: move the old target aside, then publish.
  const std::string aside = (t.parent_path() / ("." + t.filename().string() + ".old." + random_suffix())).string();
  if (::rename(t.c_str(), aside.c_str()) != 0)
    throw Error("cannot move " + target_ + " aside to " + aside + ": " + std::strerror(errno));
  if (::rename(staging_.c_str(), t.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::rename(aside.c_str(), t.c_str());
    throw Error("cannot rename " + staging_ + " to " + target_ + ": " + why);
  }
  committed_ = true;
  fs::remove_all(aside, ec);
}

}  // namespace spade
