#include "apps/bench_work_dir.h"

#include <filesystem>

#include "common/error.h"
#include "common/output_path.h"

namespace fs = std::filesystem;

namespace spade::apps {

void prepare_bench_work_dir(const std::string& what, const std::string& work_dir, const std::vector<std::string>& names) {
  std::error_code ec;
  if (!fs::is_directory(work_dir, ec)) {
    fs::path parent = fs::absolute(work_dir).lexically_normal();
    parent = parent.has_filename() ? parent.parent_path() : parent.parent_path().parent_path();
    if (!fs::is_directory(parent, ec))
      throw Error(what + " --work-dir " + work_dir + ": the directory " + parent.string() +
                  " does not exist; create it first, or give a path in an existing directory");
    if (fs::exists(work_dir, ec)) throw Error(what + " --work-dir " + work_dir + ": exists and is not a directory");
  }
  OutputRule entry_rule;
  entry_rule.what = what + " --work-dir entry";
  entry_rule.overwrite_flag = "";
  entry_rule.may_create_parent = true;  // WORK itself, made below
  entry_rule.own = [](const std::string& p) { return fs::exists(fs::path(p) / "config.json"); };
  for (const std::string& name : names) check_output(work_dir + "/" + name, OutputKind::directory, entry_rule);
  fs::create_directory(work_dir, ec);
  if (ec) throw Error(what + " --work-dir " + work_dir + ": cannot create it: " + ec.message());
}

}  // namespace spade::apps
