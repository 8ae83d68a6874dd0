// Outputs at paths the user names (an --out file or directory, a run, tournament or work directory):
// the one rule every writer of `spade` follows, so that no command deletes or mixes what the user did
// not ask it to.
//
// The rule, checked before any work is done:
//   - the parent directory must exist (no silent `mkdir -p`), unless the caller allows creating it
//     (a default root such as runs/, said so where it is created);
//   - an absent target, an empty file or an empty directory is written;
//   - a non-empty target is refused unless it is the command's own earlier output (OutputRule::own,
//     e.g. a tournament directory it resumes) or the user passed --overwrite;
//   - even with --overwrite, a target is never replaced when it is, or contains, one of the command's
//     inputs, a spade run directory (is_run_directory; only `spade train --overwrite` replaces a run
//     it recognises), or the current working directory;
//   - what is written goes to a temporary sibling (.NAME.tmp.PID.RANDOM in the same directory) that
//     is renamed over the target: a crash or an error mid-write leaves the old content whole, and the
//     sibling is removed (an error) or removed by the next writer of that target (a kill).
// Thread-safety: the functions are thread-safe for distinct targets; a StagedDir is used by one thread.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace spade {

enum class OutputKind { file, directory };

/// What a writer may do to its target. Plain data; the default refuses every non-empty target.
struct OutputRule {
  std::string what;                   // the target as the messages name it, e.g. "export --out"
  bool overwrite = false;             // the user asked to replace a non-empty target
  std::string overwrite_flag = "--overwrite";  // named in the refusal; "" when the command has none
  std::vector<std::string> inputs;    // paths the command reads: never replaced, never inside the target
  bool may_create_parent = false;     // a missing parent directory is created (a default root)
  /// The target itself may be a spade run directory (set only by `spade train --overwrite`, after it
  /// has recognised the run); run directories below it are still refused.
  bool may_replace_run = false;
  /// An existing non-empty target this command may write over without --overwrite (its own earlier
  /// output, recognised by its content). Null: none is.
  std::function<bool(const std::string& path)> own;
};

/// Checks that `path` may be written as `kind` under `rule` (the rule above). Also removes temporary
/// siblings of `path` left by writers that were killed (their process no longer exists).
/// Returns true when the target exists and is not empty (it will be replaced), false otherwise.
/// Throws spade::Error naming rule.what, the path and what would fix it.
bool check_output(const std::string& path, OutputKind kind, const OutputRule& rule);

/// check_output(path, OutputKind::file, rule), then write_file_atomic(path, data) (a temporary
/// sibling, fsync, rename). Creates the parent only when rule.may_create_parent. Throws spade::Error.
void write_output_file(const std::string& path, std::string_view data, const OutputRule& rule);

/// A directory written whole in a temporary sibling of its target and renamed over it by commit().
/// Not copyable; one thread.
class StagedDir {
 public:
  /// check_output(target, OutputKind::directory, rule), creates the parent when the rule allows it,
  /// then creates the empty sibling. Throws spade::Error.
  StagedDir(const std::string& target, const OutputRule& rule);
  /// Removes the sibling and everything in it unless commit() succeeded.
  ~StagedDir();
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  /// Where to write: the temporary sibling (an empty directory at construction).
  const std::string& path() const { return staging_; }
  /// Publishes the sibling as the target: one atomic exchange with an existing target (renameat2
  /// RENAME_EXCHANGE; where the file system lacks it, the old target is moved aside first and moved
  /// back if the second rename fails), then the old content is removed. Throws spade::Error.
  void commit();

 private:
  std::string target_, staging_;
  bool committed_ = false;
};

/// Whether `dir` is a spade run directory (trainer/run_dir.h): it holds config.yaml and either
/// checkpoints/ or metrics.jsonl. False for anything else, including a missing path.
bool is_run_directory(const std::string& dir);

}  // namespace spade
