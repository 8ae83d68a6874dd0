#include "trainer/eval_comparison.h"

#include <cstdio>
#include <map>
#include <tuple>

#include "common/atomic_file.h"
#include "common/error.h"

namespace spade::trainer {

namespace {

// A field of `j` (an object at `where` in `file`): present and of the kind asked for, else an error
// naming the file, the place and the field.
const nlohmann::json& field(const EvalFile& f, const nlohmann::json& j, const std::string& where, const char* key) {
  const std::string at = f.file + ": " + (where.empty() ? "" : where + ": ");
  if (!j.is_object()) throw Error(at + "expected a JSON object (is this a `spade eval --json` file?)");
  const auto it = j.find(key);
  if (it == j.end()) throw Error(at + "missing \"" + key + "\" (is this a `spade eval --json` file?)");
  return *it;
}

const nlohmann::json& array_field(const EvalFile& f, const nlohmann::json& j, const std::string& where, const char* key) {
  const nlohmann::json& v = field(f, j, where, key);
  if (!v.is_array()) throw Error(f.file + ": " + (where.empty() ? "" : where + ": ") + "\"" + key + "\" is not an array");
  return v;
}

std::string string_field(const EvalFile& f, const nlohmann::json& j, const std::string& where, const char* key) {
  const nlohmann::json& v = field(f, j, where, key);
  if (!v.is_string()) throw Error(f.file + ": " + (where.empty() ? "" : where + ": ") + "\"" + key + "\" is not a string");
  return v.get<std::string>();
}

int int_field(const EvalFile& f, const nlohmann::json& j, const std::string& where, const char* key) {
  const nlohmann::json& v = field(f, j, where, key);
  if (!v.is_number_integer()) throw Error(f.file + ": " + where + ": \"" + key + "\" is not an integer");
  return v.get<int>();
}

double number_field(const EvalFile& f, const nlohmann::json& j, const std::string& where, const char* key) {
  const nlohmann::json& v = field(f, j, where, key);
  if (!v.is_number()) throw Error(f.file + ": " + where + ": \"" + key + "\" is not a number");
  return v.get<double>();
}

std::string temperature_text(double t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g%s", t, t == 0 ? " (greedy)" : "");
  return buf;
}

// One file's environments of a set, keyed by "skill/name", with their order.
struct ParsedEnv {
  std::string skill, name;
  int plays = 0, wins = 0;
};
struct ParsedSet {
  std::string where;  // "passes[i].sets[j]"
  int plays = 0;
  std::string reset_seeds;
  std::vector<std::string> order;
  std::map<std::string, ParsedEnv> envs;
};
struct ParsedPass {
  double temperature = 0;
  std::vector<std::string> order;
  std::map<std::string, ParsedSet> sets;
};

std::vector<ParsedPass> parse_passes(const EvalFile& f) {
  const nlohmann::json& passes = array_field(f, f.json, "", "passes");
  if (passes.empty()) throw Error(f.file + ": \"passes\" is empty: the evaluation played nothing");
  std::vector<ParsedPass> out;
  for (size_t i = 0; i < passes.size(); ++i) {
    const std::string pw = "passes[" + std::to_string(i) + "]";
    ParsedPass p;
    p.temperature = number_field(f, passes[i], pw, "temperature");
    for (const ParsedPass& q : out)
      if (q.temperature == p.temperature)
        throw Error(f.file + ": two passes at temperature " + temperature_text(p.temperature));
    const nlohmann::json& sets = array_field(f, passes[i], pw, "sets");
    for (size_t k = 0; k < sets.size(); ++k) {
      ParsedSet s;
      s.where = pw + ".sets[" + std::to_string(k) + "]";
      const std::string name = string_field(f, sets[k], s.where, "set");
      if (p.sets.count(name))
        throw Error(f.file + ": set " + name + " twice in the pass at temperature " + temperature_text(p.temperature));
      s.plays = int_field(f, sets[k], s.where, "plays");
      s.reset_seeds = string_field(f, sets[k], s.where, "reset_seeds");
      const nlohmann::json& envs = array_field(f, sets[k], s.where, "environments");
      if (envs.empty()) throw Error(f.file + ": " + s.where + ": set " + name + " has no environments");
      for (size_t e = 0; e < envs.size(); ++e) {
        const std::string ew = s.where + ".environments[" + std::to_string(e) + "]";
        ParsedEnv env;
        env.skill = string_field(f, envs[e], ew, "skill");
        env.name = string_field(f, envs[e], ew, "name");
        env.plays = int_field(f, envs[e], ew, "plays");
        env.wins = int_field(f, envs[e], ew, "wins");
        if (env.plays < 1) throw Error(f.file + ": " + ew + ": \"plays\" is " + std::to_string(env.plays) + ", need >= 1");
        if (env.wins < 0 || env.wins > env.plays)
          throw Error(f.file + ": " + ew + ": \"wins\" is " + std::to_string(env.wins) + ", outside 0.." +
                      std::to_string(env.plays));
        const std::string key = env.skill + "/" + env.name;
        if (s.envs.count(key)) throw Error(f.file + ": " + ew + ": environment " + key + " twice in set " + name);
        s.order.push_back(key);
        s.envs[key] = env;
      }
      p.order.push_back(name);
      p.sets[name] = std::move(s);
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The first key of `a` (in `order`) that `b` lacks, or "".
template <class Map>
std::string first_missing(const std::vector<std::string>& order, const Map& b) {
  for (const std::string& k : order)
    if (!b.count(k)) return k;
  return "";
}

GroupComparison group(const std::string& name, const std::vector<const EnvComparison*>& envs, int resamples, uint64_t seed) {
  GroupComparison g;
  g.name = name;
  g.environments = static_cast<int>(envs.size());
  std::vector<double> diffs;
  for (const EnvComparison* e : envs) {
    g.plays += e->plays;
    g.before_wins += e->before_wins;
    g.after_wins += e->after_wins;
    diffs.push_back(e->difference);
    if (e->after_wins > e->before_wins) ++g.up;
    else if (e->after_wins < e->before_wins) ++g.down;
    else ++g.same;
  }
  if (g.plays > 0) {
    g.before_success = static_cast<double>(g.before_wins) / g.plays;
    g.after_success = static_cast<double>(g.after_wins) / g.plays;
  }
  g.difference = bootstrap_mean_interval(diffs, resamples, seed);
  return g;
}

SetComparison compare_set(const EvalFile& before, const EvalFile& after, const std::string& name, const ParsedSet& b,
                          const ParsedSet& a, double temperature, int resamples, uint64_t seed) {
  const std::string in = "set " + name + " of the pass at temperature " + temperature_text(temperature);
  if (b.reset_seeds != a.reset_seeds)
    throw Error("eval compare: different reset seeds in " + in + ": " + b.reset_seeds + " in " + before.file + ", " +
                a.reset_seeds + " in " + after.file + " (the same instances must be played: --reset-seeds)");
  if (b.plays != a.plays)
    throw Error("eval compare: different plays per environment in " + in + ": " + std::to_string(b.plays) + " in " +
                before.file + ", " + std::to_string(a.plays) + " in " + after.file + " (--plays)");
  for (const auto& [first, second, fa, fb] :
       {std::tuple{&b, &a, &before, &after}, std::tuple{&a, &b, &after, &before}}) {
    const std::string missing = first_missing(first->order, second->envs);
    if (!missing.empty())
      throw Error("eval compare: environment " + missing + " of " + in + " is in " + fa->file + " and not in " +
                  fb->file + " (both evaluations must play the same environments)");
  }
  SetComparison s;
  s.set = name;
  s.plays = b.plays;
  s.reset_seeds = b.reset_seeds;
  for (const std::string& key : b.order) {
    const ParsedEnv& eb = b.envs.at(key);
    const ParsedEnv& ea = a.envs.at(key);
    if (eb.plays != ea.plays)
      throw Error("eval compare: different plays of environment " + key + " in " + in + ": " + std::to_string(eb.plays) +
                  " in " + before.file + ", " + std::to_string(ea.plays) + " in " + after.file);
    EnvComparison e;
    e.skill = eb.skill;
    e.name = eb.name;
    e.plays = eb.plays;
    e.before_wins = eb.wins;
    e.after_wins = ea.wins;
    e.difference = static_cast<double>(ea.wins - eb.wins) / eb.plays;
    s.environments.push_back(e);
  }
  std::vector<const EnvComparison*> all;
  std::map<std::string, std::vector<const EnvComparison*>> by_skill;
  for (const EnvComparison& e : s.environments) {
    all.push_back(&e);
    by_skill[e.skill].push_back(&e);
  }
  s.overall = group("overall", all, resamples, seed);
  for (const auto& [skill, envs] : by_skill) s.skills.push_back(group(skill, envs, resamples, seed));
  return s;
}

nlohmann::json group_json(const GroupComparison& g) {
  return {{"name", g.name},
          {"environments", g.environments},
          {"plays", g.plays},
          {"before", {{"wins", g.before_wins}, {"success", g.before_success}}},
          {"after", {{"wins", g.after_wins}, {"success", g.after_success}}},
          {"difference", {{"mean", g.difference.mean}, {"ci95", {g.difference.low, g.difference.high}}}},
          {"up", g.up},
          {"down", g.down},
          {"same", g.same}};
}

// "+8.7" for 0.0868: percentage points with a sign (no "-0.0").
std::string points(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f", 100 * d + 0.0);
  if (std::string(buf) == "-0.0") return "+0.0";
  return buf;
}

// "before 37/1152 = 3.2%, after 137/1152 = 11.9%, difference +8.7 pts [+3.3, +15.8]<how>, up 15 / down 0 / same 21".
std::string group_line(const GroupComparison& g, const std::string& how) {
  char line[512];
  std::snprintf(line, sizeof line,
                "before %d/%d = %.1f%%, after %d/%d = %.1f%%, difference %s pts [%s, %s]%s, up %d / down %d / same %d\n",
                g.before_wins, g.plays, 100 * g.before_success, g.after_wins, g.plays, 100 * g.after_success,
                points(g.difference.mean).c_str(), points(g.difference.low).c_str(), points(g.difference.high).c_str(),
                how.c_str(), g.up, g.down, g.same);
  return line;
}

}  // namespace

nlohmann::json EvalComparison::to_json() const {
  nlohmann::json passes_j = nlohmann::json::array();
  for (const PassComparison& p : passes) {
    nlohmann::json sets_j = nlohmann::json::array();
    for (const SetComparison& s : p.sets) {
      nlohmann::json skills_j = nlohmann::json::array(), envs_j = nlohmann::json::array();
      for (const GroupComparison& g : s.skills) skills_j.push_back(group_json(g));
      for (const EnvComparison& e : s.environments)
        envs_j.push_back({{"skill", e.skill},
                          {"name", e.name},
                          {"plays", e.plays},
                          {"before_wins", e.before_wins},
                          {"after_wins", e.after_wins},
                          {"difference", e.difference}});
      sets_j.push_back({{"set", s.set},
                        {"plays", s.plays},
                        {"reset_seeds", s.reset_seeds},
                        {"overall", group_json(s.overall)},
                        {"skills", skills_j},
                        {"environments", envs_j}});
    }
    passes_j.push_back({{"temperature", p.temperature}, {"sets", sets_j}});
  }
  return {{"before", before_file},
          {"after", after_file},
          {"before_checkpoint", before_checkpoint},
          {"after_checkpoint", after_checkpoint},
          {"interval", kComparisonInterval},
          {"resamples", resamples},
          {"seed", seed},
          {"passes", passes_j}};
}

EvalComparison compare_evaluations(const EvalFile& before, const EvalFile& after, int resamples, uint64_t seed) {
  if (resamples < 1) throw Error("eval compare: resamples must be >= 1, got " + std::to_string(resamples));
  const std::vector<ParsedPass> bp = parse_passes(before), ap = parse_passes(after);
  auto find_pass = [](const std::vector<ParsedPass>& ps, double t) -> const ParsedPass* {
    for (const ParsedPass& p : ps)
      if (p.temperature == t) return &p;
    return nullptr;
  };
  for (const auto& [first, second, fa, fb] :
       {std::tuple{&bp, &ap, &before, &after}, std::tuple{&ap, &bp, &after, &before}})
    for (const ParsedPass& p : *first)
      if (find_pass(*second, p.temperature) == nullptr)
        throw Error("eval compare: the pass at temperature " + temperature_text(p.temperature) + " is in " + fa->file +
                    " and not in " + fb->file + " (run both evaluations with the same --temperature and --no-greedy)");
  EvalComparison c;
  c.before_file = before.file;
  c.after_file = after.file;
  auto checkpoint = [](const EvalFile& f) {
    const auto it = f.json.find("checkpoint");
    return it != f.json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  c.before_checkpoint = checkpoint(before);
  c.after_checkpoint = checkpoint(after);
  c.resamples = resamples;
  c.seed = seed;
  for (const ParsedPass& b : bp) {
    const ParsedPass& a = *find_pass(ap, b.temperature);
    const std::string in = " of the pass at temperature " + temperature_text(b.temperature);
    for (const auto& [first, second, fa, fb] :
         {std::tuple{&b, &a, &before, &after}, std::tuple{&a, &b, &after, &before}}) {
      const std::string missing = first_missing(first->order, second->sets);
      if (!missing.empty())
        throw Error("eval compare: set " + missing + in + " is in " + fa->file + " and not in " + fb->file +
                    " (run both evaluations on the same --envs)");
    }
    PassComparison pc;
    pc.temperature = b.temperature;
    for (const std::string& name : b.order)
      pc.sets.push_back(compare_set(before, after, name, b.sets.at(name), a.sets.at(name), b.temperature, resamples, seed));
    c.passes.push_back(std::move(pc));
  }
  return c;
}

EvalComparison compare_evaluation_files(const std::string& before_path, const std::string& after_path, int resamples,
                                        uint64_t seed) {
  auto load = [](const std::string& path) {
    EvalFile f;
    f.file = path;
    const std::string text = read_file(path);
    try {
      f.json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(path + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
    }
    return f;
  };
  return compare_evaluations(load(before_path), load(after_path), resamples, seed);
}

std::string format_eval_comparison(const EvalComparison& c) {
  std::string out;
  out += "before: " + c.before_file + (c.before_checkpoint.empty() ? "" : " (checkpoint " + c.before_checkpoint + ")") + "\n";
  out += "after:  " + c.after_file + (c.after_checkpoint.empty() ? "" : " (checkpoint " + c.after_checkpoint + ")") + "\n";
  out += "difference: after - before success in percentage points, with its 95% interval: a paired percentile\n"
         "  bootstrap over environments (" + std::to_string(c.resamples) + " resamples of the environments with "
         "replacement, seed " + std::to_string(c.seed) + "; each the mean of after - before success per environment)\n";
  out += "up / down / same: environments whose wins rose / fell / stayed\n";
  for (const PassComparison& p : c.passes)
    for (const SetComparison& s : p.sets) {
      out += "\ntemperature " + temperature_text(p.temperature) + ", " + s.set + ": " +
             std::to_string(s.environments.size()) + " environments x " + std::to_string(s.plays) + " plays, " +
             s.reset_seeds + " reset seeds\n";
      out += "  overall: " + group_line(s.overall, " (paired bootstrap over " + std::to_string(s.overall.environments) +
                                                      " environments, " + std::to_string(c.resamples) + " resamples)");
      for (const GroupComparison& g : s.skills)
        out += "  " + g.name + " (" + std::to_string(g.environments) + (g.environments == 1 ? " environment): " : " environments): ") +
               group_line(g, "");
    }
  return out;
}

}  // namespace spade::trainer
