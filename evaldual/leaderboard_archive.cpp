#include "evaldual/leaderboard_archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "evaldual/input_fields.h"
#include "evaldual/task.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace spade::evaldual {
namespace {

const char* const kFolders[] = {"participants", "banks", "matches"};

// libarchive's message for the last error on `a` (it may have none).
std::string la_error(struct archive* a) {
  const char* m = archive_error_string(a);
  return m ? m : "unknown error";
}

// Files of a contribution, relative to the leaderboard root, in name order.
std::vector<std::string> contribution_files(const LeaderboardDir& board) {
  std::vector<std::string> files = {"leaderboard.json"};
  for (const char* folder : kFolders) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(board.root() + "/" + folder))
      if (e.is_regular_file()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) files.push_back(std::string(folder) + "/" + n);
  }
  return files;
}

// Whether archive path `p` is a legal contribution entry: "leaderboard.json", or FOLDER/NAME with
// FOLDER one of kFolders and NAME a plain file name not starting with '.' (or, for a directory, FOLDER).
bool legal_entry_path(const std::string& p, bool directory) {
  std::string s = p;
  while (directory && !s.empty() && s.back() == '/') s.pop_back();
  if (s.empty() || s[0] == '/' || s.find('\\') != std::string::npos || s.find('\0') != std::string::npos) return false;
  for (const auto& part : fs::path(s)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  if (directory) return std::find(std::begin(kFolders), std::end(kFolders), s) != std::end(kFolders);
  if (s == "leaderboard.json") return true;
  const size_t slash = s.find('/');
  if (slash == std::string::npos || s.find('/', slash + 1) != std::string::npos) return false;
  const std::string folder = s.substr(0, slash), name = s.substr(slash + 1);
  return !name.empty() && name[0] != '.' &&
         std::find(std::begin(kFolders), std::end(kFolders), folder) != std::end(kFolders);
}

// Extracts `archive` into `stage` under the import rules (path escape, links, caps). Returns the
// relative paths of the regular files extracted. Throws spade::Error naming the entry.
std::vector<std::string> extract_checked(const std::string& archive, const std::string& stage,
                                         const ImportLimits& limits) {
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_support_filter_all(a);  // .tar.gz, .tar.xz, ...: the caps apply to the bytes read out
  struct Closer {
    struct archive* a;
    ~Closer() { archive_read_free(a); }
  } closer{a};
  if (archive_read_open_filename(a, archive.c_str(), 1 << 16) != ARCHIVE_OK)
    throw Error("duel import " + archive + ": not a tar archive: " + la_error(a));
  std::vector<std::string> files;
  std::set<std::string> seen;
  uint64_t total = 0, entries = 0;
  struct archive_entry* e = nullptr;
  for (;;) {
    const int rc = archive_read_next_header(a, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      throw Error("duel import " + archive + ": unreadable archive: " + la_error(a));
    const char* raw = archive_entry_pathname(e);
    const std::string path = raw ? raw : "";
    const std::string where = "duel import " + archive + ": entry '" + path + "'";
    if (++entries > limits.max_entries)
      throw Error("duel import " + archive + ": more than " + std::to_string(limits.max_entries) + " entries");
    if (archive_entry_hardlink(e) || archive_entry_symlink(e) || archive_entry_filetype(e) == AE_IFLNK)
      throw Error(where + " is a link; a contribution holds only regular files");
    const auto type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR)
      throw Error(where + " is not a regular file or directory; a contribution holds only regular files");
    if (!legal_entry_path(path, type == AE_IFDIR))
      throw Error(where + ": refused; an entry must be leaderboard.json or a file directly under participants/, "
                          "banks/ or matches/ (no absolute path, no '..', no other folder)");
    if (type == AE_IFDIR) continue;
    if (!seen.insert(path).second) throw Error(where + " appears twice");
    const std::string dest = stage + "/" + path;
    fs::create_directories(fs::path(dest).parent_path());
    std::ofstream out(dest, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(where + ": cannot write " + dest);
    char buf[1 << 16];
    for (;;) {
      const la_ssize_t n = archive_read_data(a, buf, sizeof buf);
      if (n < 0) throw Error(where + ": unreadable data: " + la_error(a));
      if (n == 0) break;
      total += static_cast<uint64_t>(n);
      if (total > limits.max_bytes)
        throw Error("duel import " + archive + ": its entries hold more than the size cap of " +
                    std::to_string(limits.max_bytes) + " bytes (at entry '" + path + "')");
      out.write(buf, n);
    }
    if (!out.flush()) throw Error(where + ": cannot write " + dest);
    files.push_back(path);
  }
  return files;
}

// Copies `from` to `to` atomically.
void copy_in(const std::string& from, const std::string& to) { write_file_atomic(to, read_file(from)); }

}  // namespace

std::string export_contribution(const LeaderboardDir& board, const std::string& out) {
  const std::string tmp = out + ".partial";
  {
    struct archive* a = archive_write_new();
    struct Closer {
      struct archive* a;
      ~Closer() { archive_write_free(a); }
    } closer{a};
    archive_write_set_format_pax_restricted(a);
    if (archive_write_open_filename(a, tmp.c_str()) != ARCHIVE_OK)
      throw Error("duel export: cannot write " + tmp + ": " + la_error(a));
    for (const std::string& rel : contribution_files(board)) {
      const std::string data = read_file(board.root() + "/" + rel);
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, rel.c_str());
      archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      archive_entry_set_mtime(e, 0, 0);
      const bool ok = archive_write_header(a, e) == ARCHIVE_OK &&
                      archive_write_data(a, data.data(), data.size()) == static_cast<la_ssize_t>(data.size());
      archive_entry_free(e);
      if (!ok) throw Error("duel export: cannot write " + rel + " to " + tmp + ": " + la_error(a));
    }
    if (archive_write_close(a) != ARCHIVE_OK)
      throw Error("duel export: cannot finish " + tmp + ": " + la_error(a));
  }
  fs::rename(tmp, out);
  return file_sha256(out);
}

ImportResult import_contribution(const LeaderboardDir& board, const std::string& archive, const ImportLimits& limits) {
  std::error_code ec;
  if (!fs::is_regular_file(archive, ec)) throw Error("duel import " + archive + ": not a file");
  const uint64_t size = fs::file_size(archive);
  if (size > limits.max_bytes)
    throw Error("duel import " + archive + ": " + std::to_string(size) + " bytes, above the size cap of " +
                std::to_string(limits.max_bytes));
  ImportResult result;
  result.sha256 = file_sha256(archive);

  // Hash guard.
  json imports = json::array();
  if (fs::exists(board.imports_path())) {
    imports = read_json_document(board.imports_path());
    if (!imports.is_array()) throw Error(board.imports_path() + ": expected an array of import records");
  }
  for (const json& rec : imports)
    if (rec.value("sha256", "") == result.sha256)
      throw Error("duel import " + archive + ": this archive (sha256 " + result.sha256 + ") was already imported on " +
                  rec.value("imported_at", "?") + " from " + rec.value("archive", "?") +
                  "; importing it twice would count its matches twice");

  const std::string stage = board.work_path() + "/import-" + result.sha256.substr(0, 16);
  fs::remove_all(stage);
  struct StageRemover {
    std::string dir;
    ~StageRemover() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remover{stage};
  const std::vector<std::string> files = extract_checked(archive, stage, limits);

  // Consistency with the target's arena.
  const std::string manifest = stage + "/leaderboard.json";
  if (!fs::exists(manifest))
    throw Error("duel import " + archive + ": no leaderboard.json; make a contribution with `spade duel export`");
  const LeaderboardDir staged = LeaderboardDir::open(stage);
  if (!same_arena(staged.arena(), board.arena()))
    throw Error("duel import " + archive + ": its arena (" + describe_arena(staged.arena()) + ") differs from " +
                board.root() + "'s (" + describe_arena(board.arena()) + "): its matches were played on other tasks");
  std::set<std::string> known;  // participant files of the archive must be the ones participants() reads
  for (const std::string& f : files)
    if (starts_with(f, "participants/") && !ends_with(f, ".script.json")) known.insert(f);
  const std::vector<LeaderboardParticipant> incoming = staged.participants();  // checks each file's name
  if (incoming.size() != known.size())
    throw Error("duel import " + archive + ": participants/ holds files that are not participant records");
  std::set<std::string> ids;
  for (const LeaderboardParticipant& p : board.participants()) ids.insert(p.id);
  for (const LeaderboardParticipant& p : incoming) {
    ids.insert(p.id);
    if (!fs::exists(staged.bank_path(p.id)))
      throw Error("duel import " + archive + ": participant '" + p.id + "' has no bank (banks/" +
                  fs::path(staged.bank_path(p.id)).filename().string() + ")");
    if (file_sha256(staged.bank_path(p.id)) != p.bank_sha256)
      throw Error("duel import " + archive + ": the bank of '" + p.id + "' does not have the SHA-256 its record names");
  }
  const std::vector<MatchRecord> matches = staged.matches();
  for (const MatchRecord& m : matches) {
    for (const std::string& side : {m.model_a, m.model_b})
      if (!ids.count(side))
        throw Error("duel import " + archive + ": match '" + m.match_id + "' has participant '" + side +
                    "', who is neither in the archive nor on " + board.root());
  }
  size_t match_files = 0;
  for (const std::string& f : files) match_files += starts_with(f, "matches/");
  if (match_files != matches.size())
    throw Error("duel import " + archive + ": matches/ holds files that are not match records");

  // Additive merge: every file the archive brings, its target path, and whether it is already there.
  std::vector<std::pair<std::string, std::string>> plan;  // (staged file, target file), in commit order
  for (const LeaderboardParticipant& p : incoming) {
    plan.push_back({staged.bank_path(p.id), board.bank_path(p.id)});
    if (fs::exists(staged.script_path(p.id))) plan.push_back({staged.script_path(p.id), board.script_path(p.id)});
  }
  for (const MatchRecord& m : matches) plan.push_back({staged.match_path(m.match_id), board.match_path(m.match_id)});
  for (const LeaderboardParticipant& p : incoming)
    plan.push_back({staged.participant_path(p.id), board.participant_path(p.id)});
  std::vector<bool> skip(plan.size(), false);
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!fs::exists(plan[i].second)) continue;
    if (read_file(plan[i].first) != read_file(plan[i].second))
      throw Error("duel import " + archive + ": conflicting id: " + plan[i].second +
                  " exists with other content; an import never overwrites a participant, bank or match");
    skip[i] = true;
  }
  for (const LeaderboardParticipant& p : incoming)  // those not yet complete (recorded) in the target
    if (!fs::exists(board.participant_path(p.id))) result.participants_added.push_back(p.id);
  for (size_t i = 0; i < plan.size(); ++i) {
    if (skip[i]) {
      ++result.identical_skipped;
      continue;
    }
    copy_in(plan[i].first, plan[i].second);
    if (starts_with(plan[i].second, board.root() + "/matches/")) ++result.matches_added;
  }
  imports.push_back({{"sha256", result.sha256},
                     {"archive", fs::absolute(archive).string()},
                     {"imported_at", utc_now_iso()},
                     {"participants_added", result.participants_added},
                     {"matches_added", result.matches_added}});
  write_file_atomic(board.imports_path(), imports.dump(2) + "\n");
  return result;
}

}  // namespace spade::evaldual
