#include "evaldual/leaderboard_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "evaldual/diff.h"
#include "evaldual/input_fields.h"
#include "evaldual/task.h"
#include "evaldual/leaderboard_page.h"
#include "evaldual/task_bank.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace spade::evaldual {
namespace {

constexpr const char* kFormat = "spade-duel-leaderboard";
constexpr int kVersion = 1;
const char* const kSubfolders[] = {"participants", "banks", "matches", "work"};

// Throws spade::Error naming `where` unless the arena has one spec per repository and turns >= 1.
void check_arena(const LeaderboardArena& a, const std::string& where) {
  if (a.repos.empty() || a.repos.size() != a.specs.size() || a.turns_per_player < 1)
    throw Error(where + ": an arena needs one spec per repository (at least one) and turns_per_player >= 1");
}

std::string get_string(const json& j, const char* key, const std::string& where) {
  return json_string(json_field(j, key, where), where + ": " + key);
}

json arena_to_json(const LeaderboardArena& a) {
  return {{"format", kFormat}, {"version", kVersion}, {"repos", a.repos}, {"specs", a.specs},
          {"turns_per_player", a.turns_per_player}};
}

LeaderboardArena arena_from_json(const json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw Error(where + ": not a leaderboard manifest (expected \"format\": \"" + kFormat + "\")");
  if (j.value("version", 0) != kVersion)
    throw Error(where + ": leaderboard version " + j.value("version", json()).dump() + ", this build reads " +
                std::to_string(kVersion));
  LeaderboardArena a;
  a.repos = json_string_list(j.value("repos", json()), where + ": repos");
  a.specs = json_string_list(j.value("specs", json()), where + ": specs");
  a.turns_per_player = json_int(json_field(j, "turns_per_player", where), where + ": turns_per_player");
  check_arena(a, where);
  return a;
}

}  // namespace

bool same_arena(const LeaderboardArena& a, const LeaderboardArena& b) {
  return a.repos == b.repos && a.turns_per_player == b.turns_per_player;
}

std::string describe_arena(const LeaderboardArena& a) {
  return "repos " + json(a.repos).dump() + ", " + std::to_string(a.turns_per_player) + " turns per player";
}

json to_json(const LeaderboardParticipant& p) {
  return {{"id", p.id}, {"source", p.source}, {"origin", p.origin}, {"added_at", p.added_at},
          {"bank_sha256", p.bank_sha256}};
}

LeaderboardParticipant leaderboard_participant_from_json(const json& j, const std::string& where) {
  LeaderboardParticipant p;
  p.id = get_string(j, "id", where);
  p.source = get_string(j, "source", where);
  p.origin = get_string(j, "origin", where);
  p.added_at = get_string(j, "added_at", where);
  p.bank_sha256 = get_string(j, "bank_sha256", where);
  return p;
}

std::string leaderboard_slug(const std::string& id) {
  std::string s = id;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (!s.empty() && s[0] == '.') s[0] = '_';
  if (s.size() > 80) s.resize(80);
  return s + "-" + sha256_hex(id).substr(0, 12);
}

std::string file_sha256(const std::string& path) { return sha256_hex(read_file(path)); }

bool LeaderboardDir::is_leaderboard(const std::string& dir) { return fs::exists(dir + "/leaderboard.json"); }

LeaderboardDir LeaderboardDir::create(const std::string& dir, const LeaderboardArena& arena) {
  if (is_leaderboard(dir)) {
    LeaderboardDir d = open(dir);
    if (!same_arena(d.arena_, arena))
      throw Error("leaderboard " + dir + ": holds a leaderboard of another arena (" + describe_arena(d.arena_) +
                  "; asked for " + describe_arena(arena) + "): use another directory");
    return d;
  }
  std::error_code ec;
  bool empty = true;  // but for the .lock a LeaderboardLock taken first made
  for (const auto& e : fs::directory_iterator(dir, ec)) empty = empty && e.path().filename() == ".lock";
  if (!empty)
    throw Error("leaderboard " + dir + ": exists and is neither empty nor a leaderboard (no leaderboard.json); "
                "give a new or empty directory");
  check_arena(arena, "leaderboard " + dir);
  for (const char* sub : kSubfolders) fs::create_directories(dir + "/" + sub);
  write_file_atomic(dir + "/leaderboard.json", arena_to_json(arena).dump(2) + "\n");
  return LeaderboardDir(dir, arena);
}

LeaderboardDir LeaderboardDir::open(const std::string& dir) {
  const std::string manifest = dir + "/leaderboard.json";
  if (!fs::exists(manifest))
    throw Error("leaderboard " + dir + ": no leaderboard.json; make one with `spade duel tournament ... "
                "--leaderboard " + dir + "`");
  LeaderboardDir d(dir, arena_from_json(read_json_document(manifest), manifest));
  for (const char* sub : kSubfolders) fs::create_directories(dir + "/" + sub);
  return d;
}

std::string LeaderboardDir::participant_path(const std::string& id) const {
  return root_ + "/participants/" + leaderboard_slug(id) + ".json";
}
std::string LeaderboardDir::script_path(const std::string& id) const {
  return root_ + "/participants/" + leaderboard_slug(id) + ".script.json";
}
std::string LeaderboardDir::bank_path(const std::string& id) const {
  return root_ + "/banks/" + leaderboard_slug(id) + ".sqlite";
}
std::string LeaderboardDir::match_path(const std::string& match_id) const {
  return root_ + "/matches/" + leaderboard_slug(match_id) + ".json";
}

std::vector<LeaderboardParticipant> LeaderboardDir::participants() const {
  std::vector<LeaderboardParticipant> out;
  for (const auto& e : fs::directory_iterator(root_ + "/participants")) {
    const std::string name = e.path().filename().string();
    if (!ends_with(name, ".json") || ends_with(name, ".script.json")) continue;
    const std::string path = e.path().string();
    LeaderboardParticipant p = leaderboard_participant_from_json(read_json_document(path), path);
    if (participant_path(p.id) != path)
      throw Error(path + ": holds participant '" + p.id + "', whose file is " + participant_path(p.id));
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

std::optional<LeaderboardParticipant> LeaderboardDir::find(const std::string& id) const {
  const std::string path = participant_path(id);
  if (!fs::exists(path)) return std::nullopt;
  return leaderboard_participant_from_json(read_json_document(path), path);
}

void LeaderboardDir::add_participant(LeaderboardParticipant p) const {
  if (find(p.id)) throw Error("leaderboard " + root_ + ": participant '" + p.id + "' is already on it");
  if (!fs::exists(bank_path(p.id)))
    throw Error("leaderboard " + root_ + ": participant '" + p.id + "' has no bank at " + bank_path(p.id));
  if (p.added_at.empty()) p.added_at = utc_now_iso();
  write_file_atomic(participant_path(p.id), to_json(p).dump(2) + "\n");
}

bool assemble_bank(const std::string& dest, const std::vector<std::pair<std::string, std::string>>& sides,
                   const std::string& scratch_dir) {
  if (fs::exists(dest)) return false;
  fs::create_directories(scratch_dir);
  const std::string tmp = scratch_dir + "/assembling.sqlite", copy = scratch_dir + "/source.sqlite";
  auto remove_db = [](const std::string& db) {
    for (const char* ext : {"", "-wal", "-shm"}) fs::remove(db + ext);
  };
  remove_db(tmp);
  {
    TaskBank to(tmp);
    for (const auto& [file, red] : sides) {
      remove_db(copy);
      fs::copy_file(file, copy);
      if (fs::exists(file + "-wal")) fs::copy_file(file + "-wal", copy + "-wal");  // what is not checkpointed yet
      {
        TaskBank from(copy);
        copy_red_tasks(from, to, red);
      }
      remove_db(copy);
    }
  }  // closing checkpoints the WAL into the main file: one self-contained file remains
  fs::rename(tmp, dest);
  return true;
}

std::string LeaderboardDir::install_bank(const std::string& source_bank, const std::string& red) const {
  const std::string dest = bank_path(red);
  if (!assemble_bank(dest, {{source_bank, red}}, work_path() + "/bank-" + leaderboard_slug(red)))
    throw Error("leaderboard " + root_ + ": " + red + " already has a bank at " + dest);
  return file_sha256(dest);
}

std::vector<MatchRecord> LeaderboardDir::matches() const {
  std::vector<MatchRecord> out;
  for (const auto& e : fs::directory_iterator(root_ + "/matches")) {
    if (e.path().extension() != ".json") continue;
    const std::string path = e.path().string();
    MatchRecord m = match_from_json(read_json_document(path), path);
    if (match_path(m.match_id) != path)
      throw Error(path + ": holds match '" + m.match_id + "', whose file is " + match_path(m.match_id));
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.match_id < b.match_id; });
  return out;
}

void LeaderboardDir::put_match(const MatchRecord& m) const {
  const std::string path = match_path(m.match_id);
  const std::string text = match_to_json(m).dump(2) + "\n";
  if (fs::exists(path)) {
    if (read_file(path) == text) return;
    throw Error("leaderboard " + root_ + ": match '" + m.match_id + "' already exists at " + path +
                " with other content; a match record is never overwritten");
  }
  write_file_atomic(path, text);
}

Rankings LeaderboardDir::refresh(RankingOptions options) const {
  options.participants.clear();
  for (const LeaderboardParticipant& p : participants()) options.participants.push_back(p.id);
  options.targets_per_repo = arena_.turns_per_player;
  options.repos = arena_.repos;
  Rankings r = compute_rankings(matches(), options);
  write_file_atomic(rankings_path(), rankings_to_json(r).dump(2) + "\n");
  write_file_atomic(page_path(), leaderboard_html(r));
  return r;
}

LeaderboardLock::LeaderboardLock(const std::string& dir) {
  fs::create_directories(dir);
  const std::string path = dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("leaderboard " + dir + ": cannot open " + path + ": " + std::strerror(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw Error("leaderboard " + dir + ": another process is writing to it (it holds " + path +
                  "); wait for it to finish and run this again");
    throw Error("leaderboard " + dir + ": cannot lock " + path + ": " + std::strerror(err));
  }
}

LeaderboardLock::~LeaderboardLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

}  // namespace spade::evaldual
