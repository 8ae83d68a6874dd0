#include "evaldual/adapters.h"

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "common/strings.h"

namespace spade::evaldual {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(l);
  }
  return out;
}

// Applies the shared pass rule; `extra_ok` carries the runner's own condition and its reason.
void finish(TestOutcome* o, int rc, bool extra_ok = true, const std::string& extra_reason = "") {
  apply_pass_rule(o);
  if (rc == -1) o->reason = "timed out";
  else if (o->total == 0 && !o->summary_found) o->reason = "no test summary found (rc " + std::to_string(rc) + ")";
  else if (o->reason.empty() && !extra_ok) o->reason = extra_reason;
  o->ok = o->reason.empty();
}

// Removes ANSI escape sequences (pytest --color=yes).
std::string strip_ansi(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
      i = j;
      continue;
    }
    out += s[i];
  }
  return out;
}

// The node id of a short-summary line's rest ("test_x.py::test_a[p - q] - AssertionError: ..."): up to
// the first " - " after which the id is complete: no parametrisation, or one that ends in ']' with
// balanced brackets. Falls back to the first " - " after a ']' (ids with unbalanced brackets), then
// to the whole rest (pytest leaves out the message when it does not fit).
std::string summary_node_id(const std::string& rest) {
  std::string fallback;
  for (size_t p = rest.find(" - "); p != std::string::npos; p = rest.find(" - ", p + 1)) {
    std::string id = rest.substr(0, p);
    size_t bracket = id.find('[');
    if (bracket == std::string::npos) return id;
    if (id.back() != ']') continue;
    int depth = 0;
    bool balanced = true;
    for (size_t k = bracket; k < id.size(); ++k) {
      depth += id[k] == '[' ? 1 : id[k] == ']' ? -1 : 0;
      if (depth == 0 && k + 1 < id.size()) balanced = false;  // closed before the end: not one group
      if (depth < 0) balanced = false;
    }
    if (balanced && depth == 0) return id;
    if (fallback.empty()) fallback = id;
  }
  return fallback.empty() ? rest : fallback;
}

}  // namespace

void apply_pass_rule(TestOutcome* o) {
  o->total = o->passed + o->failed + o->errors + o->xfailed + o->xpassed;
  o->reason.clear();
  if (o->failed > 0) o->reason = std::to_string(o->failed) + " failed";
  else if (o->errors > 0) o->reason = std::to_string(o->errors) + " error(s)";
  else if (o->total == 0)
    o->reason = o->skipped > 0 ? "no test ran to a verdict (" + std::to_string(o->skipped) + " skipped)" : "no tests ran";
  o->ok = o->reason.empty();
}

TestOutcome parse_pytest(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "pytest";
  // pytest's summary_stats line (adapters.h): counts, " in ", the duration, optional (H:MM:SS).
  static const std::regex summary(
      R"(^(?:=+ )?((?:\d+ [a-z]+(?: [a-z]+)?(?:, \d+ [a-z]+(?: [a-z]+)?)*)|no tests ran) in \d+(?:\.\d+)?(?:s| seconds)(?: \(\d+:\d\d:\d\d\))?(?: =+)?$)");
  static const std::regex count(R"((\d+) ([a-z]+(?: [a-z]+)?))");
  static const std::regex section(R"(^=+ (.+?) =+$)");
  std::vector<std::string> lines = lines_of(output);
  for (std::string& l : lines) l = trim(strip_ansi(l));
  size_t last = lines.size();
  while (last > 0 && lines[last - 1].empty()) --last;
  std::string title;        // the current '=' section
  std::string counts_text;  // the accepted summary's counts
  std::vector<std::string> ids;
  for (size_t k = 0; k < last; ++k) {
    const std::string& t = lines[k];
    const bool in_report = title == "FAILURES" || title == "ERRORS" || title == "PASSES" || title == "warnings summary";
    std::smatch m;
    if (std::regex_match(t, m, summary)) {
      if (!in_report || k + 1 == last) {
        o.summary_found = true;
        counts_text = m[1];
      }
      continue;
    }
    if (std::regex_match(t, m, section)) {
      title = m[1];
      continue;
    }
    if (title == "short test summary info" && (starts_with(t, "FAILED ") || starts_with(t, "ERROR "))) {
      ids.push_back(trim(summary_node_id(t.substr(t.find(' ') + 1))));
    }
  }
  o.failed_tests = ids;
  for (std::sregex_iterator it(counts_text.begin(), counts_text.end(), count), end; it != end; ++it) {
    int n = std::stoi((*it)[1]);
    std::string what = (*it)[2];
    if (what == "passed") o.passed += n;
    else if (what == "failed") o.failed += n;
    else if (what == "error" || what == "errors") o.errors += n;
    else if (what == "skipped") o.skipped += n;
    else if (what == "xfailed") o.xfailed += n;
    else if (what == "xpassed") o.xpassed += n;
    else if (what == "deselected") o.deselected += n;
    else if (what == "warning" || what == "warnings") o.warnings += n;
  }
  // rc 2/3/4 (interrupted, internal error, usage error) with no counted failure is still a failure.
  bool rc_ok = rc == 0 || (rc == 1 && (o.failed > 0 || o.errors > 0));
  finish(&o, rc, rc_ok, "pytest exited " + std::to_string(rc));
  return o;
}

TestOutcome parse_go_test_json(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "go";
  static const std::regex build_failed(R"(FAIL\s+(\S+)\s+\[(?:build|setup) failed\])");
  std::map<std::string, std::string> final_action;  // "pkg\ttest" -> action
  std::map<std::string, std::string> package_action;
  for (const std::string& l : lines_of(output)) {
    std::string t = trim(l);
    // A package that does not build prints no JSON (go <= 1.23): "FAIL\tPKG [build failed]" as text.
    std::smatch bf;
    if (std::regex_match(t, bf, build_failed)) {
      o.summary_found = true;
      package_action[bf[1]] = "fail";
      continue;
    }
    if (t.empty() || t[0] != '{') continue;
    nlohmann::json j = nlohmann::json::parse(t, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("Action")) continue;
    std::string action = j.value("Action", "");
    if (action != "pass" && action != "fail" && action != "skip") continue;
    o.summary_found = true;
    std::string pkg = j.value("Package", "");
    if (j.contains("Test") && j["Test"].is_string()) final_action[pkg + "\t" + j["Test"].get<std::string>()] = action;
    else package_action[pkg] = action;
  }
  std::map<std::string, int> failed_in_pkg;
  for (const auto& [key, action] : final_action) {
    std::string pkg = key.substr(0, key.find('\t'));
    std::string test = key.substr(key.find('\t') + 1);
    if (action == "pass") ++o.passed;
    else if (action == "skip") ++o.skipped;
    else {
      ++o.failed;
      ++failed_in_pkg[pkg];
      o.failed_tests.push_back(pkg + "." + test);
    }
  }
  for (const auto& [pkg, action] : package_action)
    if (action == "fail" && failed_in_pkg[pkg] == 0) {
      ++o.errors;
      o.failed_tests.push_back(pkg + " (package failed: build error or panic)");
    }
  finish(&o, rc, rc == 0, "go test exited " + std::to_string(rc));
  return o;
}

TestOutcome parse_maven(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "maven";
  static const std::regex run(R"(Tests run:\s*(\d+),\s*Failures:\s*(\d+),\s*Errors:\s*(\d+),\s*Skipped:\s*(\d+))");
  static const std::regex failed_id(R"(^\[ERROR\]\s{2,}([A-Za-z0-9_$.]+[.#][A-Za-z0-9_$]+)(:\d+)?)");
  bool in_results = false;
  for (const std::string& l : lines_of(output)) {
    std::smatch m;
    if (l.find("Results:") != std::string::npos) in_results = true;
    if (std::regex_search(l, m, run)) {
      o.summary_found = true;
      int n = std::stoi(m[1]), f = std::stoi(m[2]), e = std::stoi(m[3]), s = std::stoi(m[4]);
      o.failed = f;
      o.errors = e;
      o.skipped = s;
      o.passed = n - f - e - s;
      if (o.passed < 0) o.passed = 0;
    } else if (in_results && std::regex_search(l, m, failed_id)) {
      o.failed_tests.push_back(m[1]);
    }
  }
  if (!o.summary_found) {
    // Reference: no summary -> rc decides. Count the run as one test so the shared rule applies.
    if (rc == 0) o.passed = 1;
    else o.errors = 1;
    finish(&o, rc);
    if (!o.ok && rc != -1) o.reason = "no Surefire summary; mvn exited " + std::to_string(rc);
    return o;
  }
  finish(&o, rc);
  return o;
}

TestOutcome parse_junit(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "junit";
  static const std::regex ok_line(R"(^OK \((\d+) tests?\))");
  static const std::regex fail_line(R"(^Tests run:\s*(\d+),\s+Failures:\s*(\d+))");
  static const std::regex failed_id(R"(^\d+\) (.+)\(([A-Za-z0-9_$.]+)\)\s*$)");
  std::vector<std::string> ids;
  for (const std::string& l : lines_of(output)) {
    std::smatch m;
    if (std::regex_search(l, m, ok_line)) {
      o.summary_found = true;
      o.passed = std::stoi(m[1]);
      o.failed = 0;
      ids.clear();
    } else if (std::regex_search(l, m, fail_line)) {
      o.summary_found = true;
      int n = std::stoi(m[1]), f = std::stoi(m[2]);
      o.failed = f;
      o.passed = n > f ? n - f : 0;
      o.failed_tests = ids;
    } else if (std::regex_match(l, m, failed_id)) {
      ids.push_back(m[2].str() + "." + m[1].str());
    }
  }
  finish(&o, rc, rc == 0, "JUnitCore exited " + std::to_string(rc));
  return o;
}

TestOutcome parse_tap(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "tap";
  std::map<std::string, int> counts;
  int top_ok = 0, top_not_ok = 0, top_skip = 0;
  static const std::regex counter(R"(^# (tests|pass|fail|cancelled|skipped|todo|suites)\s+(\d+)\s*$)");
  static const std::regex result(R"(^(\s*)(ok|not ok)\s+\d+\s*(-\s*)?([^#]*)(#\s*(\w+).*)?$)");
  for (const std::string& l : lines_of(output)) {
    std::smatch m;
    if (std::regex_match(l, m, counter)) {
      counts[m[1]] = std::stoi(m[2]);
      continue;
    }
    if (!std::regex_match(l, m, result)) continue;
    bool top = m[1].length() == 0;
    bool ok = m[2] == "ok";
    std::string directive = m[6].matched ? std::string(m[6]) : "";
    for (char& c : directive) c = static_cast<char>(toupper(c));
    if (directive == "TODO") continue;
    if (directive == "SKIP") {
      if (top) ++top_skip;
      continue;
    }
    if (!ok) o.failed_tests.push_back(trim(std::string(m[4])));
    if (top) (ok ? top_ok : top_not_ok)++;
  }
  if (counts.count("pass") || counts.count("fail")) {
    o.summary_found = true;
    o.passed = counts["pass"];
    o.failed = counts["fail"] + counts["cancelled"];  // reference: cancelled = failed
    o.skipped = counts["skipped"];
  } else if (top_ok + top_not_ok + top_skip > 0) {
    o.summary_found = true;
    o.passed = top_ok;
    o.failed = top_not_ok;
    o.skipped = top_skip;
  }
  finish(&o, rc);
  return o;
}

TestOutcome parse_ctest(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "ctest";
  static const std::regex summary(R"((\d+)% tests passed, (\d+) tests? failed out of (\d+))");
  static const std::regex failed_line(R"(^\s*\d+ - (\S+) \(([^)]*)\))");
  bool in_list = false;
  for (const std::string& l : lines_of(output)) {
    std::smatch m;
    if (std::regex_search(l, m, summary)) {
      o.summary_found = true;
      int f = std::stoi(m[2]), t = std::stoi(m[3]);
      o.failed = f;
      o.passed = t - f;
    } else if (l.find("The following tests FAILED:") != std::string::npos) {
      in_list = true;
    } else if (in_list && std::regex_search(l, m, failed_line)) {
      o.failed_tests.push_back(m[1]);
    } else if (l.find("No tests were found") != std::string::npos) {
      o.summary_found = true;
    }
  }
  finish(&o, rc);
  return o;
}

TestOutcome parse_rc(const std::string& output, int rc) {
  TestOutcome o;
  o.adapter = "c";
  o.summary_found = true;
  if (rc == 0) o.passed = 1;
  else {
    o.failed = 1;
    o.failed_tests.push_back("exit status " + std::to_string(rc));
  }
  finish(&o, rc);
  return o;
}

TestOutcome parse_test_output(const std::string& adapter, const std::string& output, int rc) {
  if (adapter == "pytest") return parse_pytest(output, rc);
  if (adapter == "go") return parse_go_test_json(output, rc);
  if (adapter == "maven") return parse_maven(output, rc);
  if (adapter == "junit") return parse_junit(output, rc);
  if (adapter == "tap" || adapter == "node" || adapter == "mocha") return parse_tap(output, rc);
  if (adapter == "ctest") return parse_ctest(output, rc);
  if (adapter == "c" || adapter == "rc") return parse_rc(output, rc);
  throw Error("unknown test adapter '" + adapter + "' (known: pytest, go, maven, junit, tap, ctest, c)");
}

std::vector<std::string> adapter_names() { return {"pytest", "go", "maven", "junit", "tap", "ctest", "c"}; }

}  // namespace spade::evaldual
