#include "evaldual/task_bank.h"

#include <sqlite3.h>

#include <filesystem>

#include "common/error.h"
#include "evaldual/diff.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

// A prepared statement bound left to right; finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw Error("task bank " + path + ": " + sqlite3_errmsg(db) + " in: " + sql);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(const std::string& v) {
    sqlite3_bind_text(s_, ++i_, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int64_t v) {
    sqlite3_bind_int64(s_, ++i_, v);
    return *this;
  }
  Stmt& bind(int v) { return bind(static_cast<int64_t>(v)); }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("task bank: ") + sqlite3_errmsg(db_));
  }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, col))) : "";
  }
  int64_t integer(int col) const { return sqlite3_column_int64(s_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int i_ = 0;
};

const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS tasks(task_id TEXT PRIMARY KEY, red TEXT NOT NULL, repo TEXT NOT NULL,
  slot INTEGER NOT NULL, attempt INTEGER NOT NULL, repo_pin TEXT NOT NULL, record_json TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS public_bundles(task_id TEXT PRIMARY KEY REFERENCES tasks(task_id),
  json TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sealed_bundles(task_id TEXT PRIMARY KEY REFERENCES tasks(task_id),
  json TEXT NOT NULL, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts(id INTEGER PRIMARY KEY AUTOINCREMENT, red TEXT NOT NULL,
  repo TEXT NOT NULL, slot INTEGER NOT NULL, attempt INTEGER NOT NULL, status TEXT NOT NULL,
  kind TEXT NOT NULL, gate TEXT NOT NULL, reason TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gate_logs(attempt_id INTEGER NOT NULL REFERENCES attempts(id), seq INTEGER NOT NULL,
  gate TEXT NOT NULL, passed INTEGER NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trajectories(attempt_id INTEGER NOT NULL REFERENCES attempts(id),
  session TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS slots(red TEXT NOT NULL, repo TEXT NOT NULL, slot INTEGER NOT NULL,
  state TEXT NOT NULL, task_id TEXT, PRIMARY KEY(red, repo, slot));
CREATE TABLE IF NOT EXISTS defenses(task_id TEXT NOT NULL, blue TEXT NOT NULL, score_json TEXT NOT NULL,
  created_at TEXT NOT NULL, PRIMARY KEY(task_id, blue));
)";

// slot_state_name()'s inverse; anything else reads as open.
SlotState parse_slot_state(const std::string& st) {
  return st == "admitted" ? SlotState::admitted : st == "exhausted" ? SlotState::exhausted : SlotState::open;
}

}  // namespace

const char* slot_state_name(SlotState s) {
  switch (s) {
    case SlotState::open: return "open";
    case SlotState::admitted: return "admitted";
    case SlotState::exhausted: return "exhausted";
  }
  return "open";
}

TaskBank::TaskBank(const std::string& path) : path_(path) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("task bank " + path + ": cannot open: " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  exec(kSchema);
}

TaskBank::~TaskBank() { sqlite3_close(db_); }

void TaskBank::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw Error("task bank " + path_ + ": " + msg);
  }
}

void TaskBank::put_task(const TaskRecord& r, const PublicBundle& pub, const SealedBundle& sealed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string pj = to_json(pub).dump(), sj = to_json(sealed).dump();
  exec("BEGIN IMMEDIATE");
  try {
    Stmt(db_, "INSERT INTO tasks VALUES(?,?,?,?,?,?,?,?)", path_)
        .bind(r.task_id).bind(r.red).bind(r.repo).bind(r.slot).bind(r.attempt).bind(r.repo_pin)
        .bind(to_json(r).dump()).bind(r.created_at).step();
    Stmt(db_, "INSERT INTO public_bundles VALUES(?,?,?)", path_).bind(r.task_id).bind(pj).bind(sha256_hex(pj)).step();
    Stmt(db_, "INSERT INTO sealed_bundles VALUES(?,?,?)", path_).bind(r.task_id).bind(sj).bind(sha256_hex(sj)).step();
    Stmt(db_, "INSERT OR REPLACE INTO slots VALUES(?,?,?,?,?)", path_)
        .bind(r.red).bind(r.repo).bind(r.slot).bind(std::string("admitted")).bind(r.task_id).step();
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

std::vector<std::string> TaskBank::task_ids(const std::string& red, const std::string& repo) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT task_id FROM tasks WHERE red=? AND repo=? ORDER BY slot, attempt, task_id", path_);
  s.bind(red).bind(repo);
  std::vector<std::string> ids;
  while (s.step()) ids.push_back(s.text(0));
  return ids;
}

TaskRecord TaskBank::load_record(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT record_json FROM tasks WHERE task_id=?", path_);
  s.bind(id);
  if (!s.step()) throw Error("task bank " + path_ + ": unknown task '" + id + "'");
  return record_from_json(json::parse(s.text(0)));
}

namespace {
json load_hashed(sqlite3* db, const std::string& path, const std::string& table, const std::string& id) {
  Stmt s(db, "SELECT json, sha256 FROM " + table + " WHERE task_id=?", path);
  s.bind(id);
  if (!s.step()) throw Error("task bank " + path + ": unknown task '" + id + "' in " + table);
  std::string text = s.text(0);
  if (sha256_hex(text) != s.text(1))
    throw Error("task bank " + path + ": " + table + " of task '" + id + "' does not match its stored SHA-256 (tampered or corrupt)");
  return json::parse(text);
}
}  // namespace

PublicBundle TaskBank::load_public(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return public_from_json(load_hashed(db_, path_, "public_bundles", id));
}

SealedBundle TaskBank::load_sealed(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return sealed_from_json(load_hashed(db_, path_, "sealed_bundles", id));
}

std::string TaskBank::public_hash(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT sha256 FROM public_bundles WHERE task_id=?", path_);
  s.bind(id);
  return s.step() ? s.text(0) : "";
}

std::string TaskBank::sealed_hash(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT sha256 FROM sealed_bundles WHERE task_id=?", path_);
  s.bind(id);
  return s.step() ? s.text(0) : "";
}

int64_t TaskBank::record_attempt(const AttemptRecord& a) {
  std::lock_guard<std::mutex> lock(mu_);
  exec("BEGIN IMMEDIATE");
  try {
    Stmt(db_, "INSERT INTO attempts(red, repo, slot, attempt, status, kind, gate, reason, created_at) VALUES(?,?,?,?,?,?,?,?,?)", path_)
        .bind(a.red).bind(a.repo).bind(a.slot).bind(a.attempt).bind(a.status).bind(a.kind).bind(a.gate).bind(a.reason)
        .bind(utc_now_iso()).step();
    int64_t id = sqlite3_last_insert_rowid(db_);
    int seq = 0;
    for (const auto& g : a.gates)
      Stmt(db_, "INSERT INTO gate_logs VALUES(?,?,?,?,?)", path_).bind(id).bind(seq++).bind(g.gate).bind(g.passed ? 1 : 0).bind(g.detail).step();
    for (const auto& [session, tj] : a.trajectories)
      Stmt(db_, "INSERT INTO trajectories VALUES(?,?,?)", path_).bind(id).bind(session).bind(tj).step();
    exec("COMMIT");
    return id;
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

int TaskBank::attempts_used(const std::string& red, const std::string& repo, int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM attempts WHERE red=? AND repo=? AND slot=?", path_);
  s.bind(red).bind(repo).bind(slot);
  s.step();
  return static_cast<int>(s.integer(0));
}

std::vector<AttemptRecord> TaskBank::attempts(const std::string& red, const std::string& repo) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT id, slot, attempt, status, kind, gate, reason FROM attempts WHERE red=? AND repo=? ORDER BY id", path_);
  s.bind(red).bind(repo);
  std::vector<AttemptRecord> out;
  while (s.step()) {
    AttemptRecord a;
    a.red = red;
    a.repo = repo;
    int64_t id = s.integer(0);
    a.slot = static_cast<int>(s.integer(1));
    a.attempt = static_cast<int>(s.integer(2));
    a.status = s.text(3);
    a.kind = s.text(4);
    a.gate = s.text(5);
    a.reason = s.text(6);
    Stmt g(db_, "SELECT gate, passed, detail FROM gate_logs WHERE attempt_id=? ORDER BY seq", path_);
    g.bind(id);
    while (g.step()) a.gates.push_back({g.text(0), g.integer(1) != 0, g.text(2)});
    Stmt t(db_, "SELECT session, json FROM trajectories WHERE attempt_id=?", path_);
    t.bind(id);
    while (t.step()) a.trajectories.emplace_back(t.text(0), t.text(1));
    out.push_back(std::move(a));
  }
  return out;
}

SlotState TaskBank::slot_state(const std::string& red, const std::string& repo, int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT state FROM slots WHERE red=? AND repo=? AND slot=?", path_);
  s.bind(red).bind(repo).bind(slot);
  return s.step() ? parse_slot_state(s.text(0)) : SlotState::open;
}

int TaskBank::slot_count(const std::string& red, const std::string& repo) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM slots WHERE red=? AND repo=?", path_);
  s.bind(red).bind(repo);
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

void TaskBank::set_slot_state(const std::string& red, const std::string& repo, int slot, SlotState st) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt(db_, "INSERT INTO slots(red, repo, slot, state) VALUES(?,?,?,?) ON CONFLICT(red, repo, slot) DO UPDATE SET state=excluded.state", path_)
      .bind(red).bind(repo).bind(slot).bind(std::string(slot_state_name(st))).step();
}

std::vector<TaskBank::Slot> TaskBank::slots(const std::string& red) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT repo, slot, state FROM slots WHERE red=? ORDER BY repo, slot", path_);
  s.bind(red);
  std::vector<Slot> out;
  while (s.step()) out.push_back({s.text(0), static_cast<int>(s.integer(1)), parse_slot_state(s.text(2))});
  return out;
}

void copy_red_tasks(const TaskBank& from, TaskBank& to, const std::string& red) {
  std::vector<std::string> repos;
  for (const TaskBank::Slot& s : from.slots(red)) {
    if (repos.empty() || repos.back() != s.repo) repos.push_back(s.repo);
    to.set_slot_state(red, s.repo, s.slot, s.state);
  }
  for (const std::string& repo : repos)
    for (const std::string& id : from.task_ids(red, repo))
      to.put_task(from.load_record(id), from.load_public(id), from.load_sealed(id));
}

std::optional<std::string> TaskBank::cached_defense(const std::string& task_id, const std::string& blue) const {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT score_json FROM defenses WHERE task_id=? AND blue=?", path_);
  s.bind(task_id).bind(blue);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

void TaskBank::put_defense(const std::string& task_id, const std::string& blue, const std::string& score_json) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt(db_, "INSERT OR REPLACE INTO defenses VALUES(?,?,?,?)", path_).bind(task_id).bind(blue).bind(score_json).bind(utc_now_iso()).step();
}

}  // namespace spade::evaldual
