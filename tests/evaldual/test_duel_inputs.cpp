// Every duel input error names the file, the field and what was expected, and no raw nlohmann or
// yaml-cpp exception text reaches the user (issue 17): match lists, tournament state, repository
// specs, endpoints files, and the parsers' own syntax errors. The expected messages are written by
// hand from evaldual/input_fields.h's format "<where>: expected <what>, got <what was there>".
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/atomic_file.h"
#include "common/error.h"
#include "evaldual/input_fields.h"
#include "evaldual/match_record.h"
#include "evaldual/model_endpoints.h"
#include "evaldual/repo_spec.h"
#include "evaldual/schedule.h"
#include "tests/evaldual/duel_test_util.h"
#include "tests/testing/test_util.h"

using namespace spade::evaldual;
using nlohmann::json;

namespace {

// The spade::Error `f` throws, checked to carry no library text.
std::string error_of(const std::function<void()>& f) {
  std::string m = spade::fixtures::error_of(f);
  EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  EXPECT_EQ(m.find("yaml-cpp"), std::string::npos) << m;
  EXPECT_EQ(m.find("bad conversion"), std::string::npos) << m;
  return m.empty() ? "(no error)" : m;
}

const std::string kSpec =
    "name: pyfix\nsource: pyfix\nlanguage: python\ntest_command: python3 -m pytest -q\nadapter: pytest\n";

}  // namespace

TEST(DuelInputs, JsonSyntaxErrorsGiveLineAndColumn) {
  // Line 2, column 14 is the 'x' after "outcome": (1-based, counted by hand); the rest is the parser's
  // own description of what it read.
  EXPECT_EQ(error_of([] { parse_json_text("[{\"match_id\": \"m\",\n  \"outcome\": x}]", "m.json"); }),
            "m.json:2:14: not valid JSON: syntax error while parsing value - invalid literal; last read: '\"outcome\": x'");
  std::string e = error_of([] { parse_json_text("{\"a\": ", "r.json"); });
  EXPECT_EQ(e.rfind("r.json:1:7: not valid JSON: ", 0), 0u) << e;
  std::string dir = spade::evaldual::testing::fresh_dir("inputs");
  spade::write_file_atomic(dir + "/bad.json", "[1,]\n");
  e = error_of([&] { load_matches(dir + "/bad.json"); });
  EXPECT_EQ(e.rfind(dir + "/bad.json:1:4: not valid JSON", 0), 0u) << e;
}

TEST(DuelInputs, FieldAccessorsNameWhatWasThere) {
  EXPECT_EQ(error_of([] { json_int(json("3"), "f.json: budget"); }), "f.json: budget: expected an integer, got a string \"3\"");
  EXPECT_EQ(json_int(json(3.0), "x"), 3);
  EXPECT_EQ(error_of([] { json_u64(json(-1), "f.json: seed"); }),
            "f.json: seed: expected a non-negative integer, got a number -1");
  EXPECT_EQ(error_of([] { json_string_list(json::array({"a", 2}), "s.json: k"); }),
            "s.json: k[1]: expected a string, got a number 2");
  EXPECT_EQ(error_of([] { json_field(json::array(), "x", "r.json: rankings[0]"); }),
            "r.json: rankings[0]: expected an object, got an array of 0");
  EXPECT_EQ(describe_json(json{{"a", 1}, {"b", 2}}), "an object with keys a, b");
  EXPECT_EQ(error_of([] { yaml_number(YAML::Load("[1, 2]"), "s.yaml: timeout_s"); }),
            "s.yaml: timeout_s: expected a number, got a list");
  EXPECT_EQ(error_of([] { yaml_int(YAML::Load("1.5"), "e.yaml: max_retries"); }),
            "e.yaml: max_retries: expected an integer, got a scalar '1.5'");
}

TEST(DuelInputs, MatchListAndTournamentStateErrors) {
  EXPECT_EQ(error_of([] { matches_from_json(json{{"rankings", json::array()}}, "r.json"); }),
            "r.json: expected a match list (an array of match records, or an object with a \"matches\" array), got an "
            "object with keys rankings");
  json state = {{"tournament_id", "t"}, {"format", "round_robin"}, {"participants", json::array({"a", "b"})},
                {"schedule", json::array({{{"round", 0}, {"a", "a"}, {"b", "b"}, {"match_id", "t-0"}, {"done", "yes"}}})}};
  EXPECT_EQ(error_of([&] { tournament_state_from_json(state, "state.json"); }),
            "state.json: schedule[0].done: expected true or false, got a string \"yes\"");
  EXPECT_EQ(error_of([&] { matches_from_json(state, "state.json"); }),
            "state.json: this is a tournament state file (state.json), not a match list; its matches.json sits next to it");
  EXPECT_EQ(error_of([] { tournament_state_from_json(json::array(), "matches.json"); }),
            "matches.json: this is a match list, not a tournament state (state.json: tournament_id, format, participants, "
            "schedule)");
  state["schedule"][0]["done"] = false;
  state["participants"] = "a,b";
  EXPECT_EQ(error_of([&] { tournament_state_from_json(state, "state.json"); }),
            "state.json: participants: expected an array of strings, got a string \"a,b\"");
  state["participants"] = json::array({"a", "b"});
  state["format"] = "swiss";
  EXPECT_EQ(error_of([&] { tournament_state_from_json(state, "state.json"); }),
            "state.json: format: 'swiss' is not round_robin or active_sampling");
}

TEST(DuelInputs, RepoSpecErrors) {
  EXPECT_EQ(error_of([] { parse_repo_spec(kSpec + "timeout_s: soon\n", "r.yaml"); }),
            "r.yaml: timeout_s: expected a number, got a scalar 'soon'");
  EXPECT_EQ(error_of([] { parse_repo_spec(kSpec + "timeout_s: -1\n", "r.yaml"); }),
            "r.yaml: timeout_s: -1 is not positive; expected seconds > 0");
  EXPECT_EQ(error_of([] { parse_repo_spec(kSpec + "setup: {a: 1}\n", "r.yaml"); }),
            "r.yaml: setup: expected a list of strings, got a mapping");
  EXPECT_EQ(error_of([] { parse_repo_spec(kSpec + "exclude_paths: [build, [x]]\n", "r.yaml"); }),
            "r.yaml: exclude_paths[1]: expected a string, got a list");
  EXPECT_EQ(error_of([] { parse_repo_spec("name: [a]\n", "r.yaml"); }), "r.yaml: name: expected a string, got a list");
  EXPECT_EQ(error_of([] { parse_repo_spec(kSpec + "adapter2: x\n", "r.yaml"); }).rfind("r.yaml: unknown key 'adapter2'", 0), 0u);
  std::string e = error_of([] { parse_repo_spec("name: a\nsource: [unclosed\n", "r.yaml"); });
  EXPECT_EQ(e.rfind("r.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find(": invalid YAML: "), std::string::npos) << e;
  EXPECT_EQ(error_of([] { parse_repo_spec("- a\n- b\n", "r.yaml"); }),
            "r.yaml: a repository spec must be a YAML mapping, got a list");
}

TEST(DuelInputs, EndpointsErrors) {
  const std::string ok = "models:\n  m:\n    base_url: http://127.0.0.1:1/v1\n    model: x\n";
  EXPECT_EQ(error_of([&] { parse_endpoints(ok + "    temperature: warm\n", "e.yaml"); }),
            "e.yaml: models.m.temperature: expected a number, got a scalar 'warm'");
  EXPECT_EQ(error_of([&] { parse_endpoints(ok + "    max_tokens: [1]\n", "e.yaml"); }),
            "e.yaml: models.m.max_tokens: expected a scalar, got a list");
  EXPECT_EQ(error_of([&] { parse_endpoints(ok + "    providers: fast\n", "e.yaml"); }),
            "e.yaml: models.m.providers: expected a mapping, got a scalar 'fast'");
  EXPECT_EQ(error_of([] { parse_endpoints("models: []\n", "e.yaml"); }),
            "e.yaml: models: expected a non-empty mapping nickname -> endpoint, got a list");
  EXPECT_EQ(error_of([] { parse_endpoints("models:\n  m: 3\n", "e.yaml"); }).rfind("e.yaml: models.m: must be a mapping", 0), 0u);
  std::string e = error_of([] { parse_endpoints("models:\n  m: {base_url: a\n", "e.yaml"); });
  EXPECT_EQ(e.rfind("e.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}
