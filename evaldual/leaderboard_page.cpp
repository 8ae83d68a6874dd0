#include "evaldual/leaderboard_page.h"

#include "common/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace spade::evaldual {
namespace {

const char* kDash = "\xE2\x80\x93";  // en dash: a missing value (report.h)

std::string num(const char* format, double v) {
  if (!std::isfinite(v)) return v > 0 ? "+inf" : (v < 0 ? "-inf" : "nan");
  return format_number(format, v);
}

std::string ci_text(const std::optional<std::pair<double, double>>& ci, const char* format) {
  if (!ci) return kDash;
  return "[" + num(format, ci->first) + ", " + num(format, ci->second) + "]";
}

std::string pct(int k, int n) { return n == 0 ? std::string(kDash) : num("%.0f%%", 100.0 * k / n); }

// ---------------------------------------------------------------- interval chart (BT, contested BT)

struct IntervalRow {
  std::string id;
  double value = 0;
  std::optional<std::pair<double, double>> ci;
  bool marked = false;  // not a valid rating or interval (rankings.h bt_value_mark / bt_interval_mark)
};

std::string interval_chart(const std::string& css_class, const std::string& axis_label,
                           const std::vector<IntervalRow>& rows) {
  double lo = 0, hi = 0;  // 0 (the mean log-strength) is always on the axis
  for (const IntervalRow& r : rows) {
    for (double v : {r.value, r.ci ? r.ci->first : r.value, r.ci ? r.ci->second : r.value})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi - lo < 1e-9) lo -= 1, hi += 1;
  const double pad = 0.05 * (hi - lo);
  lo -= pad, hi += pad;
  const int label_w = 240, plot_w = 440, row_h = 24, top = 10, width = label_w + plot_w + 20;
  const int height = top + row_h * static_cast<int>(rows.size()) + 40;
  auto x = [&](double v) { return label_w + plot_w * (std::clamp(v, lo, hi) - lo) / (hi - lo); };
  std::string s = "<svg class=\"" + css_class + "\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height) + "\" role=\"img\" aria-label=\"" + html_escape(axis_label) + "\">\n";
  const int axis_y = top + row_h * static_cast<int>(rows.size()) + 4;
  for (double t : chart_ticks(lo, hi)) {
    s += "<line x1=\"" + num("%.1f", x(t)) + "\" x2=\"" + num("%.1f", x(t)) + "\" y1=\"" + std::to_string(top) +
         "\" y2=\"" + std::to_string(axis_y) + "\" class=\"" + (t == 0 ? "zero" : "grid") + "\"/>\n";
    s += "<text x=\"" + num("%.1f", x(t)) + "\" y=\"" + std::to_string(axis_y + 14) +
         "\" text-anchor=\"middle\" class=\"tick\">" + num("%+.2g", t) + "</text>\n";
  }
  s += "<text x=\"" + std::to_string(label_w + plot_w / 2) + "\" y=\"" + std::to_string(axis_y + 32) +
       "\" text-anchor=\"middle\" class=\"axis\">" + html_escape(axis_label) + "</text>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const IntervalRow& r = rows[i];
    const int y = top + row_h * static_cast<int>(i) + row_h / 2;
    s += "<g class=\"bar\" data-participant=\"" + html_escape(r.id) + "\">";
    s += "<text x=\"" + std::to_string(label_w - 8) + "\" y=\"" + std::to_string(y + 4) +
         "\" text-anchor=\"end\">" + html_escape(r.id) + (r.marked ? " *" : "") + "</text>";
    if (r.ci && std::isfinite(r.ci->first) && std::isfinite(r.ci->second))
      s += "<line class=\"ci\" x1=\"" + num("%.1f", x(r.ci->first)) + "\" x2=\"" + num("%.1f", x(r.ci->second)) +
           "\" y1=\"" + std::to_string(y) + "\" y2=\"" + std::to_string(y) + "\"/>";
    if (std::isfinite(r.value))
      s += "<circle class=\"point\" cx=\"" + num("%.1f", x(r.value)) + "\" cy=\"" + std::to_string(y) + "\" r=\"5\"/>";
    s += "<title>" + html_escape(r.id) + ": " + num("%+.2f", r.value) + " " + ci_text(r.ci, "%+.2f") + "</title>";
    s += "</g>\n";
  }
  s += "</svg>\n";
  if (std::any_of(rows.begin(), rows.end(), [](const IntervalRow& r) { return r.marked; }))
    s += "<p class=\"marked\">* not a valid rating, or an interval that is not one: see the notes under the table.</p>\n";
  return s;
}

// ---------------------------------------------------------------- per-role turn counts

struct RoleCounts {
  int red_turns = 0, red_won = 0;    // contested turns as Red, and those Red won
  int blue_turns = 0, blue_won = 0;  // contested turns as Blue, and those Blue won
  int auto_wins = 0;                 // turns won as Blue because the Red task was missing
};

std::map<std::string, RoleCounts> role_counts(const Rankings& r) {
  std::map<std::string, RoleCounts> c;
  for (const MatchRecord& m : r.matches)
    for (const TurnRecord& t : m.turns) {
      if (!t.contested()) {
        ++c[t.blue].auto_wins;
        continue;
      }
      ++c[t.red].red_turns, ++c[t.blue].blue_turns;
      if (t.blue_wins())
        ++c[t.blue].blue_won;
      else
        ++c[t.red].red_won;
    }
  return c;
}

std::string rate_bar(int k, int n) {
  if (n == 0) return kDash;
  const double w = 100.0 * k / n;
  return "<svg class=\"rate\" width=\"104\" height=\"12\"><rect x=\"0\" y=\"1\" width=\"100\" height=\"10\" "
         "class=\"track\"/><rect x=\"0\" y=\"1\" width=\"" + num("%.1f", w) + "\" height=\"10\" class=\"fill\"/></svg> " +
         pct(k, n) + " (" + std::to_string(k) + "/" + std::to_string(n) + ")";
}

// ---------------------------------------------------------------- sections

std::string leaderboard_table(const Rankings& r) {
  std::string s =
      "<table class=\"leaderboard\">\n<thead><tr><th>Rank</th><th class=\"id\">Participant</th><th>BT</th><th>95% CI</th>"
      "<th>Elo</th><th>Elo 95% CI</th><th>Red Elo</th><th>Blue Elo</th><th>TrueSkill</th><th>Contested BT</th>"
      "<th>W-D-L</th><th>Points</th><th>Median rank</th><th>Rank interval</th><th>Note</th></tr></thead>\n<tbody>\n";
  for (const RankingEntry& e : r.rankings) {
    std::string note = bt_value_mark(e.bradley_terry), ci_note = bt_interval_mark(e.bradley_terry, r.bootstrap_samples);
    if (!note.empty() && !ci_note.empty()) note += "; ";
    note += ci_note;
    s += "<tr class=\"participant\" data-rank=\"" + std::to_string(e.rank) + "\"><td>" + std::to_string(e.rank) +
         "</td><td class=\"id\">" + html_escape(e.participant.id()) + "</td><td>" + num("%+.2f", e.bradley_terry.value) +
         "</td><td>" + ci_text(e.bradley_terry.ci, "%+.2f") + "</td><td>" + num("%.0f", e.elo.value) + "</td><td>" +
         ci_text(e.elo.ci, "%.0f") + "</td><td>" + (e.red_elo ? num("%.0f", *e.red_elo) : kDash) + "</td><td>" +
         (e.blue_elo ? num("%.0f", *e.blue_elo) : kDash) + "</td><td>" +
         (e.trueskill ? num("%.1f", e.trueskill->mu) + " \xC2\xB1 " + num("%.1f", e.trueskill->sigma) : kDash) +
         "</td><td>" +
         (e.contested_bt ? num("%+.2f", e.contested_bt->value) + " " + ci_text(e.contested_bt->ci, "%+.2f") : kDash) +
         "</td><td>" + std::to_string(e.wins) + "-" + std::to_string(e.draws) + "-" + std::to_string(e.losses) +
         "</td><td>" + num("%g", e.points) + "</td><td>" +
         (e.bootstrap_median_rank ? num("%.1f", *e.bootstrap_median_rank) : kDash) + "</td><td>" +
         (e.rank_interval ? std::to_string(e.rank_interval->first) + "&ndash;" + std::to_string(e.rank_interval->second)
                          : kDash) +
         "</td><td class=\"note\">" + html_escape(note) + "</td></tr>\n";
  }
  s += "</tbody>\n</table>\n";
  const std::vector<std::string> notes = rankings_notes(r);
  if (!notes.empty()) {
    s += "<ul class=\"notes\">\n";
    for (const std::string& n : notes) s += "<li>" + html_escape(n) + "</li>\n";
    s += "</ul>\n";
  }
  return s;
}

std::string bt_charts(const Rankings& r) {
  std::vector<IntervalRow> bt, contested;
  auto marked = [&](const RatedValue& v) {
    return !bt_value_mark(v).empty() || !bt_interval_mark(v, r.bootstrap_samples).empty();
  };
  for (const RankingEntry& e : r.rankings) {
    bt.push_back({e.participant.id(), e.bradley_terry.value, e.bradley_terry.ci, marked(e.bradley_terry)});
    if (e.contested_bt)
      contested.push_back({e.participant.id(), e.contested_bt->value, e.contested_bt->ci, marked(*e.contested_bt)});
  }
  std::string s = "<h2>Bradley-Terry log-strength</h2>\n<p>Dots: the fit on all matches; bars: 95% bootstrap "
                  "intervals (" + std::to_string(r.bootstrap_samples) + " resamples of the matches). 0 is the mean.</p>\n";
  s += interval_chart("chart bt", "Bradley-Terry log-strength", bt);
  s += "<h2>Contested Bradley-Terry</h2>\n";
  if (contested.empty())
    s += "<p class=\"empty\">No match record carries turns: no contested fit.</p>\n";
  else
    s += "<p>A fit on contested turns only (Red vs Blue; missing-task auto-wins left out).</p>\n" +
         interval_chart("chart contested", "contested Bradley-Terry log-strength", contested);
  return s;
}

std::string role_section(const Rankings& r) {
  std::map<std::string, RoleCounts> c = role_counts(r);
  std::string s = "<h2>Win rates by role</h2>\n";
  if (c.empty()) return s + "<p class=\"empty\">No match record carries turns.</p>\n";
  s += "<table class=\"roles\">\n<thead><tr><th class=\"id\">Participant</th><th>As Red (turns won)</th><th>As Blue (turns won)</th>"
       "<th>Auto-wins as Blue</th></tr></thead>\n<tbody>\n";
  for (const RankingEntry& e : r.rankings) {
    const RoleCounts& k = c[e.participant.id()];
    s += "<tr><td class=\"id\">" + html_escape(e.participant.id()) + "</td><td>" + rate_bar(k.red_won, k.red_turns) +
         "</td><td>" + rate_bar(k.blue_won, k.blue_turns) + "</td><td>" + std::to_string(k.auto_wins) + "</td></tr>\n";
  }
  return s + "</tbody>\n</table>\n";
}

std::string histogram_section(const Rankings& r) {
  std::string s = "<h2>Rank histograms</h2>\n";
  if (r.bootstrap_samples <= 0) return s + "<p class=\"empty\">No bootstrap: no rank histograms.</p>\n";
  const int n = static_cast<int>(r.rankings.size());
  const int bar_w = 18, h = 60;
  s += "<p>Share of the " + std::to_string(r.bootstrap_samples) + " bootstrap draws at each rank (1 on the left).</p>\n";
  s += "<div class=\"hists\">\n";
  for (const RankingEntry& e : r.rankings) {
    s += "<figure><svg class=\"hist\" width=\"" + std::to_string(bar_w * n + 4) + "\" height=\"" + std::to_string(h + 16) +
         "\" data-participant=\"" + html_escape(e.participant.id()) + "\">";
    for (int k = 0; k < n; ++k) {
      const int count = k < static_cast<int>(e.rank_histogram.size()) ? e.rank_histogram[k] : 0;
      const double bh = static_cast<double>(h) * count / r.bootstrap_samples;
      s += "<rect x=\"" + std::to_string(2 + k * bar_w) + "\" y=\"" + num("%.1f", h - bh) + "\" width=\"" +
           std::to_string(bar_w - 3) + "\" height=\"" + num("%.1f", bh) + "\"><title>rank " + std::to_string(k + 1) + ": " +
           std::to_string(count) + " draws</title></rect>";
      s += "<text x=\"" + std::to_string(2 + k * bar_w + (bar_w - 3) / 2) + "\" y=\"" + std::to_string(h + 12) +
           "\" text-anchor=\"middle\">" + std::to_string(k + 1) + "</text>";
    }
    s += "</svg><figcaption>" + html_escape(e.participant.id()) + "</figcaption></figure>\n";
  }
  return s + "</div>\n";
}

// A matrix table over the participants in rank order; cell(row, col) returns the text and a share in
// [0, 1] for its colour (nullopt: no games, blank cell).
template <class Cell>
std::string matrix(const Rankings& r, const std::string& css_class, const std::string& corner, Cell cell) {
  std::string s = "<table class=\"matrix " + css_class + "\">\n<thead><tr><th>" + corner + "</th>";
  for (const RankingEntry& e : r.rankings) s += "<th>" + html_escape(e.participant.id()) + "</th>";
  s += "</tr></thead>\n<tbody>\n";
  for (const RankingEntry& row : r.rankings) {
    s += "<tr><th>" + html_escape(row.participant.id()) + "</th>";
    for (const RankingEntry& col : r.rankings) {
      if (row.participant.id() == col.participant.id()) {
        s += "<td class=\"self\"></td>";
        continue;
      }
      std::optional<std::pair<std::string, double>> c = cell(row.participant.id(), col.participant.id());
      if (!c) {
        s += "<td></td>";
        continue;
      }
      s += "<td style=\"background: hsl(" + num("%.0f", 120.0 * c->second) + ", 55%, 82%)\">" + c->first + "</td>";
    }
    s += "</tr>\n";
  }
  return s + "</tbody>\n</table>\n";
}

std::string matrices_section(const Rankings& r) {
  std::map<std::pair<std::string, std::string>, const HeadToHead*> h2h;
  for (const HeadToHead& h : r.head_to_head) h2h[{h.model_a, h.model_b}] = &h;
  std::string s = "<h2>Head to head</h2>\n<p>Row against column: wins-draws-losses in matches; colour: the row's "
                  "points share (green: all won).</p>\n";
  s += matrix(r, "h2h", "row vs column", [&](const std::string& a, const std::string& b)
                                            -> std::optional<std::pair<std::string, double>> {
    const bool swap = b < a;
    auto it = h2h.find(swap ? std::make_pair(b, a) : std::make_pair(a, b));
    if (it == h2h.end() || it->second->matches == 0) return std::nullopt;
    const HeadToHead& h = *it->second;
    const int w = swap ? h.b_wins : h.a_wins, l = swap ? h.a_wins : h.b_wins;
    return std::make_pair(std::to_string(w) + "-" + std::to_string(h.draws) + "-" + std::to_string(l),
                          (w + 0.5 * h.draws) / h.matches);
  });
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> rb;  // (red, blue) -> (blue wins, contested)
  for (const MatchRecord& m : r.matches)
    for (const TurnRecord& t : m.turns)
      if (t.contested()) {
        auto& c = rb[{t.red, t.blue}];
        c.first += t.blue_wins();
        ++c.second;
      }
  s += "<h2>Red x Blue</h2>\n";
  if (rb.empty()) return s + "<p class=\"empty\">No match record carries contested turns.</p>\n";
  s += "<p>Row as Red, column as Blue: Blue's wins / contested turns; colour: Red's share (green: Red won all).</p>\n";
  s += matrix(r, "redblue", "Red \\ Blue", [&](const std::string& red, const std::string& blue)
                                               -> std::optional<std::pair<std::string, double>> {
    auto it = rb.find({red, blue});
    if (it == rb.end()) return std::nullopt;
    const auto [won, n] = it->second;
    return std::make_pair(std::to_string(won) + "/" + std::to_string(n), 1.0 - static_cast<double>(won) / n);
  });
  return s;
}

// A match's `key` ("tokens" or "cost"): its own value, else the sum over its turns; nullopt when absent.
std::optional<double> match_amount(const MatchRecord& m, const std::string& key) {
  if (m.extra.contains(key) && m.extra[key].is_number()) return m.extra[key].get<double>();
  std::optional<double> sum;
  for (const TurnRecord& t : m.turns)
    if (t.extra.contains(key) && t.extra[key].is_number()) sum = sum.value_or(0) + t.extra[key].get<double>();
  return sum;
}

std::string cost_section(const Rankings& r) {
  std::string s = "<h2>Tokens and cost per match</h2>\n";
  bool any = false;
  for (const MatchRecord& m : r.matches) any = any || match_amount(m, "tokens") || match_amount(m, "cost");
  if (!any) return s + "<p class=\"empty\">No match record carries tokens or cost.</p>\n";
  s += "<table class=\"costs\">\n<thead><tr><th class=\"id\">Match</th><th>A</th><th>B</th><th>Outcome</th><th>Tokens</th>"
       "<th>Cost (USD)</th></tr></thead>\n<tbody>\n";
  double tokens = 0, cost = 0;
  for (const MatchRecord& m : r.matches) {
    std::optional<double> t = match_amount(m, "tokens"), c = match_amount(m, "cost");
    tokens += t.value_or(0), cost += c.value_or(0);
    s += "<tr><td>" + html_escape(m.match_id) + "</td><td>" + html_escape(m.model_a) + "</td><td>" +
         html_escape(m.model_b) + "</td><td>" + outcome_name(m.outcome) + "</td><td>" +
         (t ? num("%.0f", *t) : kDash) + "</td><td>" + (c ? num("%.4f", *c) : kDash) + "</td></tr>\n";
  }
  s += "<tr class=\"total\"><td>all</td><td></td><td></td><td></td><td>" + num("%.0f", tokens) + "</td><td>" +
       num("%.4f", cost) + "</td></tr>\n";
  return s + "</tbody>\n</table>\n";
}

const char* kStyle = R"(td.id, th.id, td.note { text-align: left; }
td.note { white-space: normal; min-width: 16em; }
.matrix td, .matrix th { text-align: center; border: 1px solid #ddd; }
.matrix td.self { background: #eee; }
svg line.ci { stroke: #4e79a7; stroke-width: 4; stroke-linecap: round; }
svg circle.point { fill: #e15759; }
svg.hist rect { fill: #76b7b2; }
svg.rate { vertical-align: middle; } svg.rate .track { fill: #eee; } svg.rate .fill { fill: #59a14f; }
.hists { display: flex; flex-wrap: wrap; gap: 12px; } figure { margin: 0; } figcaption { font-size: 12px; }
.marked { color: #777; font-style: italic; }
)";

}  // namespace

std::string leaderboard_html(const Rankings& r) {
  const std::string title = "SWE-Duel leaderboard" + (r.tournament_id.empty() ? "" : ": " + r.tournament_id);
  std::string s = "<h1>" + html_escape(title) + "</h1>\n";
  s += "<p class=\"meta\">" + std::to_string(r.rankings.size()) + " participants, " + std::to_string(r.matches.size()) +
       " matches; format " + html_escape(r.format.empty() ? std::string(kDash) : r.format) + "; " +
       std::to_string(r.bootstrap_samples) + " bootstrap samples (seed " + std::to_string(r.seed) + ")" +
       (r.bootstrap_unconverged > 0
            ? "; " + std::to_string(r.bootstrap_unconverged) + " bootstrap fits stopped at the iteration cap"
            : "") +
       "; exported " + html_escape(r.exported_at.empty() ? std::string(kDash) : r.exported_at) + ".</p>\n";
  s += leaderboard_table(r);
  s += bt_charts(r);
  s += role_section(r);
  s += histogram_section(r);
  s += matrices_section(r);
  s += cost_section(r);
  return html_page(title, kStyle, s);
}

}  // namespace spade::evaldual
