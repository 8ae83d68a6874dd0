#include "trainer/run_open.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/output_path.h"
#include "common/strings.h"

namespace fs = std::filesystem;

namespace spade::trainer {

namespace {

// The run.out_dir that is created when missing: the default root under the current directory.
constexpr const char* kDefaultOutDir = "runs";

void flatten(const YAML::Node& node, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it)
      flatten(it->second, prefix.empty() ? it->first.as<std::string>() : prefix + "." + it->first.as<std::string>(), out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out[prefix] = e.c_str();
}

std::map<std::string, std::string> flat(const Config& c) {
  std::map<std::string, std::string> out;
  flatten(YAML::Load(to_yaml(c)), "", out);
  return out;
}

bool has_prefix(const std::string& key, const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return true;
  for (const std::string& p : prefixes)
    if (ends_with(p, ".") ? starts_with(key, p) : key == p) return true;
  return false;
}

// The entries a run writes at the top of its directory (run_dir.h, train.cpp, selfplay.cpp,
// rollout_log.cpp), and hidden temporaries of atomic writes.
bool run_entry(const std::string& name) {
  static const std::set<std::string> known = {
      "config.yaml", "metrics.jsonl", "warm_start.jsonl", "summary.json", "tb",              "rollouts.h5",
      "rollouts.h5.tmp", "rollouts.h5.corrupt", "envs", "rejected",     "memory.json",     "checkpoints",
      "corpus.jsonl", "tokenizer.model",       "tokenizer.vocab", "duel"};
  return known.count(name) > 0 || starts_with(name, ".");
}

// Paths `config` reads: a run that holds one of them is never replaced.
std::vector<std::string> config_inputs(const Config& c, const std::vector<std::string>& extra) {
  std::vector<std::string> in = {c.corpus.path, c.tokenizer.path, c.model.init_checkpoint, c.loss.kl_reference,
                                 c.seed_envs.dir};
  in.insert(in.end(), c.corpus.build_from.begin(), c.corpus.build_from.end());
  in.insert(in.end(), extra.begin(), extra.end());
  return in;
}

OutputRule replace_rule(const RunDirPlan& plan) {
  OutputRule rule;
  rule.what = plan.command + " --overwrite: the run directory";
  rule.overwrite = true;
  rule.may_replace_run = true;
  rule.inputs = plan.inputs;
  return rule;
}

std::string describe(const std::map<std::string, std::pair<std::string, std::string>>& diffs, const char* there,
                     const char* here) {
  std::string out;
  int n = 0;
  for (const auto& [key, values] : diffs) {
    if (++n > 4) {
      out += ", ... (" + std::to_string(diffs.size()) + " keys)";
      break;
    }
    out += (out.empty() ? "" : ", ") + key + " (" + values.first + " " + there + ", " + values.second + " " + here + ")";
  }
  return out;
}

bool is_empty_dir(const fs::path& p) {
  std::error_code ec;
  return fs::directory_iterator(p, ec) == fs::directory_iterator() && !ec;
}

}  // namespace

const std::vector<std::string>& run_identity_keys() {
  static const std::vector<std::string> keys = {"tokenizer.", "model.", "corpus.path", "corpus.build_from",
                                                "corpus.max_words", "corpus.min_words"};
  return keys;
}

std::map<std::string, std::pair<std::string, std::string>> config_differences(const Config& a, const Config& b,
                                                                              const std::vector<std::string>& prefixes) {
  const std::map<std::string, std::string> fa = flat(a), fb = flat(b);
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& [key, va] : fa) {
    auto it = fb.find(key);
    const std::string vb = it == fb.end() ? "" : it->second;
    if (va != vb && has_prefix(key, prefixes)) out[key] = {va, vb};
  }
  return out;
}

RunDirPlan plan_run_dir(const Config& config, RunMode mode, const std::string& command, bool offer_resume,
                        const std::vector<std::string>& extra_inputs) {
  const std::string& name = config.run.name;
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw Error(command + ": run.name '" + name + "' must be a plain directory name (no '/'), e.g. --name my-run");
  RunDirPlan plan;
  plan.mode = mode;
  plan.root = config.run.out_dir + "/" + name;
  plan.command = command;
  plan.inputs = config_inputs(config, extra_inputs);
  std::error_code ec;
  const fs::path out_dir(config.run.out_dir);
  if (!fs::is_directory(out_dir, ec)) {
    if (fs::exists(out_dir, ec)) throw Error(command + ": run.out_dir " + config.run.out_dir + " is not a directory");
    if (config.run.out_dir != kDefaultOutDir || mode == RunMode::resume)
      throw Error(command + ": run.out_dir " + config.run.out_dir + " does not exist; create it first (only the "
                  "default runs/ is created, under the current directory)");
    plan.create_out_dir = true;
    return plan;  // nothing below it exists yet
  }
  const fs::path root(plan.root);
  const bool exists = fs::exists(fs::symlink_status(root, ec));
  if (exists && !fs::is_directory(root, ec))
    throw Error(command + ": the run directory " + plan.root + " exists and is not a directory; choose another --name");
  const std::string saved_path = plan.root + "/config.yaml";

  if (mode == RunMode::resume) {
    if (!fs::exists(saved_path, ec))
      throw Error("resume: " + saved_path + " does not exist (is " + plan.root + " a run directory?)");
    const Config saved = load_config(saved_path);
    const auto diffs = config_differences(saved, config, run_identity_keys());
    if (!diffs.empty()) {
      const auto& [key, values] = *diffs.begin();
      throw Error("resume " + plan.root + ": " + key + " is " + values.first + " in " + saved_path + " but " +
                  values.second + " here; the run's files (tokenizer, corpus, checkpoints) were made with the saved "
                  "value, so continue it without changing " + key + ", or start a new run with --name" +
                  (diffs.size() > 1 ? " (also differing: " + describe(diffs, "saved", "here") + ")" : ""));
    }
    return plan;
  }
  if (!exists || is_empty_dir(root)) return plan;

  if (mode == RunMode::create) {
    std::string detail;
    if (fs::exists(saved_path, ec)) {
      try {
        const auto diffs = config_differences(load_config(saved_path), config);
        detail = diffs.empty() ? " (a run of this same config)"
                               : " (a run whose config.yaml differs from this one in " +
                                     describe(diffs, "there", "here") + ")";
      } catch (const Error&) {
        detail = " (its config.yaml is not a valid config)";
      }
    }
    throw Error(command + ": the run directory " + plan.root + " already exists and is not empty" + detail +
                "; pass --name NEW for a new run" + (offer_resume ? ", --resume " + plan.root + " to continue it," : "") +
                " or --overwrite to replace it");
  }

  // Overwrite: only a run this program recognises, and never one holding an input.
  if (!fs::exists(saved_path, ec))
    throw Error(command + " --overwrite: " + plan.root + " is not a spade run directory (no config.yaml); --overwrite "
                "replaces runs only: choose another --name, or empty it yourself");
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string entry = e.path().filename().string();
    if (!run_entry(entry))
      throw Error(command + " --overwrite: " + plan.root + " holds " + entry + ", which no spade run writes; "
                  "--overwrite replaces runs only: move " + entry + " out of it, or choose another --name");
  }
  check_output(plan.root, OutputKind::directory, replace_rule(plan));
  plan.replace = true;
  return plan;
}

RunDir open_run_dir(const RunDirPlan& plan, const Config& config, const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  if (plan.create_out_dir) {
    fs::create_directories(config.run.out_dir, ec);
    if (ec) throw Error("cannot create run.out_dir " + config.run.out_dir + ": " + ec.message());
    log("created " + fs::absolute(config.run.out_dir).lexically_normal().string() +
        "/ (the default run.out_dir, under the current directory)");
  }
  if (plan.replace) {
    StagedDir staged(plan.root, replace_rule(plan));  // checked again: nothing changed since the plan
    staged.commit();  // the new, empty run takes the old one's place in one exchange; the old is removed
    log("--overwrite: replaced the run in " + plan.root);
  }
  return RunDir::create(config.run.out_dir, config.run.name);
}

}  // namespace spade::trainer
