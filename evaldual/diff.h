// SWE-Duel diffs: per-file unified diffs of a workspace against its pristine copy, parsing and
// validation, stats, and per-file hunk application (reference §4 "Diff utilities"; unlike the
// reference, which replays the whole multi-file patch once per file, apply_patch() applies each file's
// own hunks exactly once).
//
// A diff is the concatenation of per-file unified diffs, paths sorted bytewise, headers
// "--- a/PATH" / "+++ b/PATH" ("/dev/null" for an added or deleted side), produced by GNU `diff -u`.
//
// Patches read (parse_patch, apply_patch) may also be git's extended format (git diff, format-patch),
// applied as `git apply` and GNU patch 2.7 apply them: "diff --git a/P b/Q" starts a file; "rename
// from/to", "copy from/to" (with "similarity index"), "old mode"/"new mode", "new file mode" and
// "deleted file mode" are applied, also without any hunk (a pure rename, copy, mode change, empty new
// or deleted file); "index" and "dissimilarity index" are informational; C-quoted paths
// (""a/caf\303\251"") are unquoted. Refused with a named spade::Error (patch line and path):
// binary patches ("GIT binary patch", "Binary files ... differ"), symlink (120000) and submodule
// (160000) modes, a mode that is not 100644/100755, conflicting or incomplete headers.
// "\ No newline at end of file" is respected on both sides: after an old-side line the hunk matches
// only at the end of a file that lacks its final newline (and an old side without the marker does not
// match such an end); after a new-side line the result ends without one, and without the marker it
// ends with one.
//
// Thread-safety: all functions are thread-safe; they touch only the directories passed in.
#pragma once
#include <string>
#include <vector>

namespace spade::evaldual {

/// Which files a workspace diff considers.
struct DiffOptions {
  /// Paths left out of the diff (and of scrubbing): an entry matches a relative path equal to it,
  /// any path below it ("build" matches "build/x.o"), or as an fnmatch(3) glob on the whole path or the
  /// base name ("*.pyc"). ".git" is always excluded.
  std::vector<std::string> exclude;
  /// Remove backup/scratch files (*.bak *.orig *~ *.tmp *.rej) that are not in the pristine tree
  /// before diffing (reference §2: "Backup/scratch files ... are scrubbed before the diff is taken").
  bool scrub_backups = true;
};

/// One file's unified diff.
struct FileDiff {
  std::string path;     // relative path, '/'-separated
  std::string text;     // "--- a/P\n+++ b/P\n@@ ...", ends with '\n'
  bool added = false;   // absent in pristine
  bool deleted = false; // absent in the workspace
};

/// One hunk: old/new ranges (1-based starts as in the header) and its body lines with their prefix
/// character (' ', '-', '+').
struct Hunk {
  int old_start = 0, old_count = 0, new_start = 0, new_count = 0;
  std::vector<std::string> lines;  // each begins with ' ', '-' or '+', no trailing '\n'
  bool old_no_newline = false;     // "\ No newline at end of file" after the last old-side line
  bool new_no_newline = false;     // ... after the last new-side line
};

/// One file of a parsed patch.
struct FilePatch {
  std::string path;      // target path without the a/ b/ prefix (the old path for a deletion)
  std::string old_path;  // the file it starts from: == path except for renames and copies
  bool added = false;    // "--- /dev/null" or "new file mode"
  bool deleted = false;  // "+++ /dev/null" or "deleted file mode"
  bool renamed = false;  // git "rename from/to": old_path is removed
  bool copied = false;   // git "copy from/to": old_path is kept
  std::string old_mode, new_mode;  // git modes ("100644" / "100755") when the patch gives them, else ""
  std::vector<Hunk> hunks;
  size_t first_line = 0, end_line = 0;  // the patch lines [first_line, end_line) of this file, 0-based
};

/// Counts of a patch (reference §4 "stats (+/- lines, hunks, files)").
struct DiffStats {
  int files = 0;
  int hunks = 0;
  int added_lines = 0;
  int removed_lines = 0;
};

/// True for the backup/scratch names *.bak *.orig *~ *.tmp *.rej (base name).
bool is_backup_file(const std::string& path);

/// True if `rel_path` is excluded by `options` (see DiffOptions::exclude).
bool is_excluded(const std::string& rel_path, const DiffOptions& options);

/// Deletes backup/scratch files under `workspace` that do not exist in `pristine`; returns their
/// relative paths, sorted. Excluded paths are left alone.
std::vector<std::string> scrub_backup_files(const std::string& pristine, const std::string& workspace,
                                            const DiffOptions& options = {});

/// Per-file diffs of `workspace` against `pristine` (both directories), sorted by path; excluded
/// paths, symlinks and binary files (a NUL byte in the first 8000 bytes of either side) skipped.
/// Scrubs backups first when options.scrub_backups. Throws spade::Error if a directory is missing or
/// `diff` cannot run.
std::vector<FileDiff> diff_files(const std::string& pristine, const std::string& workspace,
                                 const DiffOptions& options = {});

/// diff_files() concatenated: the workspace's whole patch ("" when nothing differs).
std::string diff_workspace(const std::string& pristine, const std::string& workspace,
                           const DiffOptions& options = {});

/// Parses a unified diff, plain or git-extended (see the file comment). Throws spade::Error naming the
/// 1-based line of `patch` and what was expected (a hunk whose body does not match its header counts,
/// a hunk before any file header, a binary or symlink patch, a rename without its target, ...).
std::vector<FilePatch> parse_patch(const std::string& patch);

/// The diff_valid check (reference §2): non-empty and parses. Returns true, or false with the reason
/// in `*why` (if given).
bool validate_patch(const std::string& patch, std::string* why = nullptr);

/// Stats of a parsed or textual patch. The textual form throws like parse_patch().
DiffStats patch_stats(const std::vector<FilePatch>& files);
DiffStats patch_stats(const std::string& patch);

/// Splits a patch into its per-file chunks (path as in FilePatch::path, chunk text: the file's lines,
/// from its "diff --git" or "--- " header to its last hunk line), in patch order. Throws like
/// parse_patch() when the patch does not parse.
std::vector<std::pair<std::string, std::string>> split_patch(const std::string& patch);

/// Paths touched by a patch (both sides of a rename or copy), sorted.
std::vector<std::string> patch_paths(const std::string& patch);

/// Applies `patch` to the tree at `dir`, file by file: each file's hunks are applied once, in order,
/// each at its header position shifted by the offset of the earlier hunks, searching offsets
/// 0, -1, +1, ... within [-max_fuzz_before, +max_fuzz_after] lines (reference §4: -5..+10) for an exact
/// context match, the final newline included (see the file comment). Renames, copies and modes as in
/// the file comment (a new file is created 0644 or 0755 less the umask's bits, like git). Files are
/// applied in patch order on the tree as the earlier files left it. All-or-nothing: every file's new
/// content is computed before anything is written. Throws spade::Error naming the file and hunk that
/// does not apply, a file to create that exists, a file to patch, rename or copy that does not, and
/// a deletion that would leave content.
void apply_patch(const std::string& dir, const std::string& patch, int max_fuzz_before = 5,
                 int max_fuzz_after = 10);

/// Copies the directory tree `from` to `to` (created; regular files, directories and symlinks;
/// permissions kept), skipping paths excluded by `options` (".git" included only if `keep_git`).
/// Throws spade::Error on I/O failure.
void copy_tree(const std::string& from, const std::string& to, const DiffOptions& options = {},
               bool keep_git = false);

/// Content hash of a tree (SHA-256 over sorted relative paths and file bytes, excluded paths
/// skipped), lower-case hex. Used to pin repositories and detect stale tasks.
std::string tree_hash(const std::string& dir, const DiffOptions& options = {});

/// SHA-256 of bytes, lower-case hex.
std::string sha256_hex(const std::string& data);

}  // namespace spade::evaldual
