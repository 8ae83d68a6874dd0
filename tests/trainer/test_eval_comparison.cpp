// trainer/eval_comparison.h on hand-written `spade eval --json` objects: differences, intervals and
// up / down / same counts computed by hand (in the comments beside them), pairing by temperature, set
// name and skill/name whatever the order, and every error naming the file and what differs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "trainer/eval_comparison.h"

namespace spade::trainer {
namespace {

namespace fs = std::filesystem;

struct Env {
  std::string skill, name;
  int plays, wins;
};

nlohmann::json set_json(const std::string& name, int plays, const std::vector<Env>& envs,
                        const std::string& seeds = "heldout") {
  nlohmann::json e = nlohmann::json::array();
  for (const Env& v : envs)
    e.push_back({{"skill", v.skill}, {"name", v.name}, {"path", name + "/" + v.skill + "/" + v.name + ".py"},
                 {"plays", v.plays}, {"wins", v.wins}, {"success", static_cast<double>(v.wins) / v.plays}});
  return {{"set", name}, {"plays", plays}, {"reset_seeds", seeds}, {"environments", e}};
}

nlohmann::json pass_json(double temperature, const std::vector<nlohmann::json>& sets) {
  return {{"temperature", temperature}, {"sets", sets}};
}

EvalFile eval_file(const std::string& file, const std::vector<nlohmann::json>& passes) {
  return {file, {{"checkpoint", "ckpt_" + file}, {"episode_settings_from", "test"}, {"passes", passes}}};
}

// The message of the spade::Error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(EvalComparison, ThreeEnvironmentsByHand) {
  // 4 plays each. logic/a 1 -> 3 wins (+0.5, up), logic/b 2 -> 2 (0, same), math/c 4 -> 3 (-0.25, down).
  const EvalFile before = eval_file("before.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 1},
                                                                                  {"logic", "b", 4, 2},
                                                                                  {"math", "c", 4, 4}})})});
  // The after file lists the environments in another order: they pair by skill and name.
  const EvalFile after = eval_file("after.json", {pass_json(0, {set_json("s", 4, {{"math", "c", 4, 3},
                                                                                {"logic", "b", 4, 2},
                                                                                {"logic", "a", 4, 3}})})});
  const EvalComparison c = compare_evaluations(before, after, 10000, 42);
  EXPECT_EQ(c.before_checkpoint, "ckpt_before.json");
  EXPECT_EQ(c.after_checkpoint, "ckpt_after.json");
  ASSERT_EQ(c.passes.size(), 1u);
  ASSERT_EQ(c.passes[0].sets.size(), 1u);
  const SetComparison& s = c.passes[0].sets[0];
  EXPECT_EQ(s.set, "s");
  EXPECT_EQ(s.plays, 4);
  EXPECT_EQ(s.reset_seeds, "heldout");
  ASSERT_EQ(s.environments.size(), 3u);
  EXPECT_EQ(s.environments[0].name, "a");  // the before file's order
  EXPECT_EQ(s.environments[0].after_wins, 3);
  EXPECT_DOUBLE_EQ(s.environments[2].difference, -0.25);
  // Overall, by hand: before 1 + 2 + 4 = 7 of 12, after 3 + 2 + 3 = 8 of 12; the mean difference is
  // (0.5 + 0 - 0.25) / 3 = 1/12, which is also 8/12 - 7/12.
  EXPECT_EQ(s.overall.environments, 3);
  EXPECT_EQ(s.overall.plays, 12);
  EXPECT_EQ(s.overall.before_wins, 7);
  EXPECT_EQ(s.overall.after_wins, 8);
  EXPECT_DOUBLE_EQ(s.overall.before_success, 7.0 / 12);
  EXPECT_DOUBLE_EQ(s.overall.after_success, 8.0 / 12);
  EXPECT_NEAR(s.overall.difference.mean, 1.0 / 12, 1e-15);
  EXPECT_EQ(s.overall.up, 1);
  EXPECT_EQ(s.overall.down, 1);
  EXPECT_EQ(s.overall.same, 1);
  // The interval, by hand: a resample of 3 is all math/c (mean -0.25, the lowest possible) with
  // probability 1/27 = 3.7%, and all logic/a (mean +0.5, the highest) with probability 1/27. Of 10000
  // resamples about 370 (sd 19) are each, so both the 250th lowest and the 250th highest means are
  // those extremes: the 2.5% and 97.5% quantiles are -0.25 and +0.5 (for any seed but a 6-sd fluke).
  EXPECT_DOUBLE_EQ(s.overall.difference.low, -0.25);
  EXPECT_DOUBLE_EQ(s.overall.difference.high, 0.5);
  // Per skill, sorted by slug. logic: a and b, before 3/8, after 5/8, mean (0.5 + 0) / 2 = 0.25; a
  // resample of 2 is all b (mean 0) or all a (mean 0.5) with probability 1/4 each, so the interval is
  // [0, 0.5]. math: c alone, -0.25, and every resample of one environment is c: [-0.25, -0.25].
  ASSERT_EQ(s.skills.size(), 2u);
  const GroupComparison& logic = s.skills[0];
  const GroupComparison& math = s.skills[1];
  EXPECT_EQ(logic.name, "logic");
  EXPECT_EQ(logic.plays, 8);
  EXPECT_EQ(logic.before_wins, 3);
  EXPECT_EQ(logic.after_wins, 5);
  EXPECT_DOUBLE_EQ(logic.difference.mean, 0.25);
  EXPECT_DOUBLE_EQ(logic.difference.low, 0.0);
  EXPECT_DOUBLE_EQ(logic.difference.high, 0.5);
  EXPECT_EQ(logic.up, 1);
  EXPECT_EQ(logic.same, 1);
  EXPECT_EQ(logic.down, 0);
  EXPECT_EQ(math.name, "math");
  EXPECT_DOUBLE_EQ(math.difference.mean, -0.25);
  EXPECT_DOUBLE_EQ(math.difference.low, -0.25);
  EXPECT_DOUBLE_EQ(math.difference.high, -0.25);
  EXPECT_EQ(math.down, 1);

  // The table and the JSON carry the same numbers: 7/12 = 58.3%, 8/12 = 66.7%, +8.3 pts [-25.0, +50.0].
  const std::string text = format_eval_comparison(c);
  EXPECT_TRUE(has(text, "paired percentile")) << text;
  EXPECT_TRUE(has(text, "overall: before 7/12 = 58.3%, after 8/12 = 66.7%, difference +8.3 pts [-25.0, +50.0] "
                        "(paired bootstrap over 3 environments, 10000 resamples), up 1 / down 1 / same 1"))
      << text;
  EXPECT_TRUE(has(text, "math (1 environment): before 4/4 = 100.0%, after 3/4 = 75.0%, difference -25.0 pts "
                        "[-25.0, -25.0], up 0 / down 1 / same 0"))
      << text;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j["before"], "before.json");
  EXPECT_EQ(j["resamples"], 10000);
  const nlohmann::json& o = j["passes"][0]["sets"][0]["overall"];
  EXPECT_EQ(o["before"]["wins"], 7);
  EXPECT_EQ(o["after"]["wins"], 8);
  EXPECT_DOUBLE_EQ(o["difference"]["ci95"][0].get<double>(), -0.25);
  EXPECT_EQ(o["up"], 1);
  EXPECT_EQ(j["passes"][0]["sets"][0]["skills"][1]["name"], "math");
}

TEST(EvalComparison, EqualDifferencesGiveAPointInterval) {
  // Every environment gains exactly one win of 4 (+0.25): every resample's mean is 0.25, so the mean and
  // both bounds are 0.25, and all four environments are up.
  const EvalFile before = eval_file("b.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 1},
                                                                             {"logic", "b", 4, 0},
                                                                             {"math", "c", 4, 3},
                                                                             {"pattern", "d", 4, 2}})})});
  const EvalFile after = eval_file("a.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 2},
                                                                            {"logic", "b", 4, 1},
                                                                            {"math", "c", 4, 4},
                                                                            {"pattern", "d", 4, 3}})})});
  const GroupComparison& o = compare_evaluations(before, after, 500, 7).passes[0].sets[0].overall;
  EXPECT_DOUBLE_EQ(o.difference.mean, 0.25);
  EXPECT_DOUBLE_EQ(o.difference.low, 0.25);
  EXPECT_DOUBLE_EQ(o.difference.high, 0.25);
  EXPECT_EQ(o.up, 4);
  EXPECT_EQ(o.down, 0);
  EXPECT_EQ(o.same, 0);
}

TEST(EvalComparison, PassesAndSetsPairByTemperatureAndName) {
  // Two passes and two sets, listed in the other order in the after file. By hand: at temperature 0,
  // set x: 0 -> 2 of 2 (+1.0); set y: 1 -> 0 of 2 (-0.5). At 0.6, set x: 1 -> 1 (0); set y: 0 -> 1 (+0.5).
  const EvalFile before = eval_file(
      "b.json", {pass_json(0, {set_json("x", 2, {{"logic", "e", 2, 0}}), set_json("y", 2, {{"math", "f", 2, 1}})}),
                 pass_json(0.6, {set_json("x", 2, {{"logic", "e", 2, 1}}), set_json("y", 2, {{"math", "f", 2, 0}})})});
  const EvalFile after = eval_file(
      "a.json", {pass_json(0.6, {set_json("y", 2, {{"math", "f", 2, 1}}), set_json("x", 2, {{"logic", "e", 2, 1}})}),
                 pass_json(0, {set_json("y", 2, {{"math", "f", 2, 0}}), set_json("x", 2, {{"logic", "e", 2, 2}})})});
  const EvalComparison c = compare_evaluations(before, after, 100, 1);
  ASSERT_EQ(c.passes.size(), 2u);
  EXPECT_EQ(c.passes[0].temperature, 0.0);
  EXPECT_EQ(c.passes[0].sets[0].set, "x");
  EXPECT_DOUBLE_EQ(c.passes[0].sets[0].overall.difference.mean, 1.0);
  EXPECT_DOUBLE_EQ(c.passes[0].sets[1].overall.difference.mean, -0.5);
  EXPECT_EQ(c.passes[1].temperature, 0.6);
  EXPECT_DOUBLE_EQ(c.passes[1].sets[0].overall.difference.mean, 0.0);
  EXPECT_EQ(c.passes[1].sets[0].overall.same, 1);
  EXPECT_DOUBLE_EQ(c.passes[1].sets[1].overall.difference.mean, 0.5);
}

TEST(EvalComparison, ErrorsNameTheFileAndWhatDiffers) {
  const std::vector<Env> envs = {{"logic", "a", 4, 1}, {"math", "c", 4, 2}};
  const EvalFile before = eval_file("before.json", {pass_json(0, {set_json("s", 4, envs)}),
                                                     pass_json(0.6, {set_json("s", 4, envs)})});
  auto compare = [&](const EvalFile& after) { return error_of([&] { compare_evaluations(before, after, 100, 1); }); };

  // Different plays of one environment (the set's plays agree).
  std::string e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 1}, {"math", "c", 8, 2}})}),
                                                   pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "different plays of environment math/c")) << e;
  EXPECT_TRUE(has(e, "4 in before.json, 8 in after.json")) << e;
  // Different plays per environment of the set.
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 8, {{"logic", "a", 8, 1}, {"math", "c", 8, 2}})}),
                                       pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "different plays per environment in set s of the pass at temperature 0 (greedy): 4 in before.json, "
                     "8 in after.json")) << e;
  // Different reset seeds.
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, envs, "training")}),
                                       pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "different reset seeds in set s")) << e;
  EXPECT_TRUE(has(e, "heldout in before.json, training in after.json")) << e;
  // An environment missing from the after file, then one only the after file has.
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 1}})}),
                                       pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "environment math/c of set s of the pass at temperature 0 (greedy) is in before.json and not in "
                     "after.json")) << e;
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 1}, {"math", "c", 4, 2},
                                                                       {"math", "z", 4, 0}})}),
                                       pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "environment math/z")) << e;
  EXPECT_TRUE(has(e, "is in after.json and not in before.json")) << e;
  // A pass missing from the after file.
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "the pass at temperature 0.6 is in before.json and not in after.json")) << e;
  // A set only the after file has.
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, envs), set_json("t", 4, envs)}),
                                       pass_json(0.6, {set_json("s", 4, envs)})}));
  EXPECT_TRUE(has(e, "set t of the pass at temperature 0 (greedy) is in after.json and not in before.json")) << e;
  // Malformed: a missing field, wins above plays, no passes.
  nlohmann::json broken = eval_file("after.json", {pass_json(0, {set_json("s", 4, envs)})}).json;
  broken["passes"][0]["sets"][0]["environments"][1].erase("wins");
  e = compare({"after.json", broken});
  EXPECT_TRUE(has(e, "after.json: passes[0].sets[0].environments[1]: missing \"wins\"")) << e;
  e = compare(eval_file("after.json", {pass_json(0, {set_json("s", 4, {{"logic", "a", 4, 5}, {"math", "c", 4, 2}})})}));
  EXPECT_TRUE(has(e, "after.json: passes[0].sets[0].environments[0]: \"wins\" is 5, outside 0..4")) << e;
  e = compare({"after.json", {{"checkpoint", "x"}, {"passes", nlohmann::json::array()}}});
  EXPECT_TRUE(has(e, "after.json: \"passes\" is empty")) << e;
  e = compare({"after.json", nlohmann::json::array()});
  EXPECT_TRUE(has(e, "after.json: expected a JSON object")) << e;
  EXPECT_TRUE(has(error_of([&] { compare_evaluations(before, before, 0, 1); }), "resamples must be >= 1"));

  // A file that is not JSON, read from disk.
  const fs::path dir = fs::path(SPADE_TEST_TMP) / "eval_comparison";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_file_atomic((dir / "good.json").string(), before.json.dump());
  write_file_atomic((dir / "bad.json").string(), "{\"passes\": [");
  e = error_of([&] { compare_evaluation_files((dir / "good.json").string(), (dir / "bad.json").string()); });
  EXPECT_TRUE(has(e, (dir / "bad.json").string() + ": not valid JSON")) << e;
  EXPECT_NO_THROW(compare_evaluation_files((dir / "good.json").string(), (dir / "good.json").string(), 10, 1));
}

}  // namespace
}  // namespace spade::trainer
