#include "evaldual/match_record.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "common/error.h"
#include "evaldual/input_fields.h"
#include "evaldual/participant.h"

using nlohmann::json;

namespace spade::evaldual {
namespace {

const json& require(const json& j, const char* key, const std::string& where) { return json_field(j, key, where); }

std::string require_string(const json& j, const char* key, const std::string& where) {
  return json_string(require(j, key, where), where + "." + key);
}

std::string participant_at(const json& j, const char* key, const std::string& where) {
  std::string s = require_string(j, key, where);
  try {
    return canonical_participant_id(s);
  } catch (const Error& e) {
    throw Error(where + "." + key + ": " + e.what());
  }
}

// A number, or a boolean as 1/0 (blue_composite is often written as true/false).
double number_at(const json& v, const std::string& where) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return json_number(v, where);
}

json without(const json& j, std::initializer_list<const char*> keys) {
  json extra = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) == keys.end()) {
      extra[it.key()] = it.value();
    }
  }
  return extra;
}

TurnRecord turn_from_json(const json& j, const std::string& where) {
  expect_object(j, where);
  TurnRecord t;
  t.red = participant_at(j, "red", where);
  t.blue = participant_at(j, "blue", where);
  if (j.contains("repo")) t.repo = require_string(j, "repo", where);
  if (j.contains("task_id")) t.task_id = require_string(j, "task_id", where);
  t.blue_composite = number_at(require(j, "blue_composite", where), where + ".blue_composite");
  if (!(t.blue_composite >= 0.0 && t.blue_composite <= 1.0)) {
    throw Error(where + ".blue_composite: " + std::to_string(t.blue_composite) + " is outside [0, 1]");
  }
  if (j.contains("auto_win")) {
    t.auto_win = json_bool(j["auto_win"], where + ".auto_win");
  }
  t.extra = without(j, {"red", "blue", "repo", "task_id", "blue_composite", "auto_win"});
  return t;
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kAWins: return "a_wins";
    case Outcome::kBWins: return "b_wins";
    case Outcome::kDraw: return "draw";
  }
  return "draw";
}

Outcome parse_outcome(const std::string& s, const std::string& where) {
  if (s == "a_wins") return Outcome::kAWins;
  if (s == "b_wins") return Outcome::kBWins;
  if (s == "draw") return Outcome::kDraw;
  throw Error(where + ": unknown outcome '" + s + "'; expected a_wins, b_wins or draw");
}

double outcome_score_a(Outcome o) {
  return o == Outcome::kAWins ? 1.0 : o == Outcome::kDraw ? 0.5 : 0.0;
}

json turn_to_json(const TurnRecord& t) {
  json j = t.extra.is_object() ? t.extra : json::object();
  j["red"] = t.red;
  j["blue"] = t.blue;
  if (!t.repo.empty()) j["repo"] = t.repo;
  if (!t.task_id.empty()) j["task_id"] = t.task_id;
  j["blue_composite"] = t.blue_composite;
  j["auto_win"] = t.auto_win;
  return j;
}

json match_to_json(const MatchRecord& m) {
  json j = m.extra.is_object() ? m.extra : json::object();
  j["match_id"] = m.match_id;
  j["model_a"] = m.model_a;
  j["model_b"] = m.model_b;
  j["outcome"] = outcome_name(m.outcome);
  if (!m.timestamp.empty()) j["timestamp"] = m.timestamp;
  if (m.score_a) j["score_a"] = *m.score_a;
  if (m.score_b) j["score_b"] = *m.score_b;
  if (!m.turns.empty()) {
    json turns = json::array();
    for (const TurnRecord& t : m.turns) turns.push_back(turn_to_json(t));
    j["turns"] = std::move(turns);
  }
  return j;
}

json matches_to_json(const std::vector<MatchRecord>& ms) {
  json a = json::array();
  for (const MatchRecord& m : ms) a.push_back(match_to_json(m));
  return a;
}

MatchRecord match_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a match object, got " + describe_json(j));
  MatchRecord m;
  m.match_id = require_string(j, "match_id", where);
  if (m.match_id.empty()) throw Error(where + ".match_id: empty; every match needs a unique id");
  m.model_a = participant_at(j, "model_a", where);
  m.model_b = participant_at(j, "model_b", where);
  if (m.model_a == m.model_b) {
    throw Error(where + ": model_a and model_b are both '" + m.model_a + "'; a match needs two participants");
  }
  m.outcome = parse_outcome(require_string(j, "outcome", where), where + ".outcome");
  if (j.contains("timestamp") && !j["timestamp"].is_null()) m.timestamp = require_string(j, "timestamp", where);
  if (j.contains("score_a") && !j["score_a"].is_null()) m.score_a = number_at(j["score_a"], where + ".score_a");
  if (j.contains("score_b") && !j["score_b"].is_null()) m.score_b = number_at(j["score_b"], where + ".score_b");
  if (j.contains("turns") && !j["turns"].is_null()) {
    const json& turns = j["turns"];
    if (!turns.is_array()) throw Error(where + ".turns: expected an array, got " + describe_json(turns));
    for (size_t i = 0; i < turns.size(); ++i) {
      std::string tw = where + ".turns[" + std::to_string(i) + "]";
      TurnRecord t = turn_from_json(turns[i], tw);
      bool ok = (t.red == m.model_a && t.blue == m.model_b) || (t.red == m.model_b && t.blue == m.model_a);
      if (!ok) {
        throw Error(tw + ": red '" + t.red + "' and blue '" + t.blue + "' are not the match's participants '" +
                    m.model_a + "' and '" + m.model_b + "'");
      }
      m.turns.push_back(std::move(t));
    }
  }
  m.extra = without(j, {"match_id", "model_a", "model_b", "outcome", "timestamp", "score_a", "score_b", "turns"});
  return m;
}

std::vector<MatchRecord> matches_from_json(const json& doc, const std::string& source) {
  const json* arr = &doc;
  std::string prefix = source + ": ";
  if (doc.is_object()) {
    auto it = doc.find("matches");
    if (it == doc.end()) {
      if (doc.contains("schedule") && doc.contains("participants"))
        throw Error(source + ": this is a tournament state file (state.json), not a match list; its matches.json sits next to it");
      throw Error(source + ": expected a match list (an array of match records, or an object with a \"matches\" array), got " +
                  describe_json(doc));
    }
    arr = &*it;
    prefix = source + ": matches";
  } else {
    prefix = source + ": ";
  }
  if (!arr->is_array())
    throw Error(source + ": expected an array of matches (or {\"matches\": [...]}), got " + describe_json(*arr));
  std::vector<MatchRecord> out;
  out.reserve(arr->size());
  std::set<std::string> ids;
  for (size_t i = 0; i < arr->size(); ++i) {
    std::string where = prefix + "[" + std::to_string(i) + "]";
    out.push_back(match_from_json((*arr)[i], where));
    if (!ids.insert(out.back().match_id).second) {
      throw Error(where + ": duplicate match_id '" + out.back().match_id + "'; match ids must be unique");
    }
  }
  return out;
}

std::vector<MatchRecord> load_matches(const std::string& path) { return matches_from_json(read_json_document(path), path); }

std::vector<size_t> match_time_order(const std::vector<MatchRecord>& ms) {
  std::vector<size_t> order(ms.size());
  std::iota(order.begin(), order.end(), size_t{0});
  bool all = std::all_of(ms.begin(), ms.end(), [](const MatchRecord& m) { return !m.timestamp.empty(); });
  if (all) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return ms[x].timestamp < ms[y].timestamp; });
  }
  return order;
}

}  // namespace spade::evaldual
