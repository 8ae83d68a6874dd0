#include "evaldual/report.h"

#include <cstdio>

namespace spade::evaldual {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string ci_text(const std::optional<std::pair<double, double>>& ci, const std::string& missing) {
  if (!ci) return missing;
  return "[" + fmt("%+.2f", ci->first) + ", " + fmt("%+.2f", ci->second) + "]";
}

// "mu<sep>sigma" with one decimal each (report.h), or `missing`.
std::string trueskill_text(const RankingEntry& e, const std::string& sep, const std::string& missing) {
  if (!e.trueskill) return missing;
  return fmt("%.1f", e.trueskill->mu) + sep + fmt("%.1f", e.trueskill->sigma);
}

std::string wdl(const RankingEntry& e) {
  return std::to_string(e.wins) + "-" + std::to_string(e.draws) + "-" + std::to_string(e.losses);
}

// The row's marks (rankings.h bt_value_mark / bt_interval_mark), "; "-joined; "" when none.
std::string row_note(const RankingEntry& e, int samples) {
  std::string v = bt_value_mark(e.bradley_terry), c = bt_interval_mark(e.bradley_terry, samples);
  return v + (!v.empty() && !c.empty() ? "; " : "") + c;
}

std::string upper_first(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

bool any_note(const Rankings& r) {
  for (const RankingEntry& e : r.rankings)
    if (!row_note(e, r.bootstrap_samples).empty()) return true;
  return false;
}

std::string markdown_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string latex_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\textbackslash{}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '{': case '}': case '$': case '&': case '#': case '_': case '%':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string rankings_markdown(const Rankings& r) {
  const std::string dash = "\xE2\x80\x93";  // en dash
  std::string out;
  if (!r.tournament_id.empty()) out += "## " + markdown_escape(r.tournament_id) + "\n\n";
  const bool notes = any_note(r);
  out += std::string("| Rank | Model | BT score | 95% CI | Elo | TrueSkill | W-D-L | Median rank |") +
         (notes ? " Note |" : "") + "\n";
  out += std::string("|---:|---|---:|---|---:|---:|---|---:|") + (notes ? "---|" : "") + "\n";
  for (const RankingEntry& e : r.rankings) {
    out += "| " + std::to_string(e.rank) + " | " + markdown_escape(e.participant.id()) + " | " +
           fmt("%+.2f", e.bradley_terry.value) + " | " + ci_text(e.bradley_terry.ci, dash) + " | " +
           fmt("%.0f", e.elo.value) + " | " + trueskill_text(e, " \xC2\xB1 ", dash) + " | " + wdl(e) + " | " +
           (e.bootstrap_median_rank ? fmt("%.1f", *e.bootstrap_median_rank) : dash) + " |" +
           (notes ? " " + markdown_escape(row_note(e, r.bootstrap_samples)) + " |" : "") + "\n";
  }
  out += "\n" + std::to_string(r.matches.size()) + " matches; " + std::to_string(r.bootstrap_samples) +
         " bootstrap samples (seed " + std::to_string(r.seed) + ").\n";
  const std::vector<std::string> legend = rankings_notes(r);
  if (!legend.empty()) out += "\n";
  for (const std::string& n : legend) out += "- " + markdown_escape(n) + "\n";
  bool any = false;
  for (const HeadToHead& h : r.head_to_head) {
    if (h.matches == 0) continue;
    if (!any) {
      out += "\n| A | B | A wins | B wins | Draws |\n|---|---|---:|---:|---:|\n";
      any = true;
    }
    out += "| " + markdown_escape(h.model_a) + " | " + markdown_escape(h.model_b) + " | " + std::to_string(h.a_wins) +
           " | " + std::to_string(h.b_wins) + " | " + std::to_string(h.draws) + " |\n";
  }
  return out;
}

std::string rankings_latex(const Rankings& r) {
  const bool notes = any_note(r);
  std::string out = std::string("\\begin{table}[t]\n\\centering\n\\begin{tabular}{rlrlrrlr") + (notes ? "l" : "") +
                    "}\n\\toprule\n";
  out += std::string("Rank & Model & BT score & 95\\% CI & Elo & TrueSkill & W-D-L & Median rank") +
         (notes ? " & Note" : "") + " \\\\\n\\midrule\n";
  for (const RankingEntry& e : r.rankings) {
    out += std::to_string(e.rank) + " & " + latex_escape(e.participant.id()) + " & $" +
           fmt("%+.2f", e.bradley_terry.value) + "$ & " +
           (e.bradley_terry.ci ? "$" + ci_text(e.bradley_terry.ci, "") + "$" : std::string("--")) + " & " +
           fmt("%.0f", e.elo.value) + " & " +
           (e.trueskill ? "$" + trueskill_text(e, " \\pm ", "") + "$" : std::string("--")) + " & " + wdl(e) + " & " +
           (e.bootstrap_median_rank ? fmt("%.1f", *e.bootstrap_median_rank) : std::string("--")) +
           (notes ? " & " + latex_escape(row_note(e, r.bootstrap_samples)) : "") + " \\\\\n";
  }
  out += "\\bottomrule\n\\end{tabular}\n\\caption{SWE-Duel leaderboard";
  if (!r.tournament_id.empty()) out += " (" + latex_escape(r.tournament_id) + ")";
  out += ": Bradley-Terry log-strengths with 95\\% bootstrap intervals over " + std::to_string(r.matches.size()) +
         " matches (" + std::to_string(r.bootstrap_samples) + " samples)";
  for (const std::string& n : rankings_notes(r)) out += ". " + latex_escape(upper_first(n));
  out += ".}\n\\end{table}\n";
  return out;
}

}  // namespace spade::evaldual
