// `spade report` by the real binary on two run directories written here: the page loaded in headless
// Chromium draws one legend entry and one line per run in every chart a run logged (the designer's
// per-regeneration metrics in the designer section), the interval band of the held-out evaluation,
// the runs table, and fetches nothing; the Markdown file holds the table.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/atomic_file.h"
#include "tests/testing/chromium_page.h"
#include "tests/testing/test_util.h"

namespace {

namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Pixels of exactly one colour in the screenshot.
int pixels(const spade::testing::RenderedPage& p, uint8_t r, uint8_t g, uint8_t b) {
  int n = 0;
  for (size_t i = 0; i + 2 < p.rgb.size(); i += 3) n += p.rgb[i] == r && p.rgb[i + 1] == g && p.rgb[i + 2] == b;
  return n;
}

TEST(ReportCli, TwoRunsOnOnePageRenderedInChromium) {
  const std::string dir = spade::fixtures::fresh_test_dir("report_cli", "two_runs");
  const std::string a = dir + "/run-a", b = dir + "/run-b";
  fs::create_directories(a);
  fs::create_directories(b);
  std::string ma, mb;
  // Per-regeneration designer metrics (k = 2): the new generation's at steps 1, 3, 5; the closing
  // generation's reward levels at 3 and 5.
  const auto regeneration = [](int s, double vendi, double formula) {
    if (s % 2 == 0) return std::string();
    std::string m = ", \"designer/vendi_score\": " + std::to_string(vendi) + ", \"designer/vendi_score_per_env\": " +
                    std::to_string(vendi / 4) + ", \"designer/formula_in_first_obs\": " + std::to_string(formula);
    if (s > 1) m += ", \"designer/reward_levels\": " + std::to_string(vendi / 2);
    return m;
  };
  for (int s = 1; s <= 6; ++s) {
    const double x = s / 6.0;
    ma += "{\"step\": " + std::to_string(s) + ", \"reward/success_rate\": " + std::to_string(0.1 + 0.5 * x) +
          ", \"designer/valid_rate\": 1.0, \"actor/entropy\": " + std::to_string(1.0 - 0.3 * x) +
          ", \"eval/heldout/success\": " + std::to_string(0.2 + 0.3 * x) + ", \"eval/heldout/success_low\": " +
          std::to_string(0.1 + 0.3 * x) + ", \"eval/heldout/success_high\": " + std::to_string(0.3 + 0.3 * x) +
          regeneration(s, 3.5 - x, 0.25) + "}\n";
    if (s <= 4)
      mb += "{\"step\": " + std::to_string(s) + ", \"reward/success_rate\": " + std::to_string(0.6 - 0.4 * x) +
            ", \"designer/valid_rate\": 0.5, \"actor/entropy\": 0.8" + regeneration(s, 1.5, 0.5) + "}\n";
  }
  spade::write_file_atomic(a + "/metrics.jsonl", ma);
  spade::write_file_atomic(b + "/metrics.jsonl", mb);
  spade::write_file_atomic(a + "/summary.json",
                           R"({"wall_seconds": 100, "selfplay": {"attempts": 4, "admitted": 3, "hint_plays": 20,
                               "hint_success": 0.0, "nohint_plays": 20, "nohint_success": 0.05}})");
  auto r = spade::fixtures::run_command(std::string(SPADE_BIN) + " report " + a + " " + b + " --out " + dir +
                                        "/report.html --md " + dir + "/report.md 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  // A second run into the same files is refused without --overwrite (the output-path rule).
  auto again = spade::fixtures::run_command(std::string(SPADE_BIN) + " report " + a + " --out " + dir + "/report.html 2>&1");
  EXPECT_NE(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("exists and is not empty"), std::string::npos) << again.out;

  const std::string md = spade::read_file(dir + "/report.md");
  // 0/20 with hint: Newcombe 1998's 0/20 interval [0, 0.161]; 1/20 without.
  EXPECT_NE(md.find("| run-a | 6 | 100 s | 3 of 4 admitted | none | 0.000 [0.000, 0.161] (20 plays) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| run-b | 4 |"), std::string::npos) << md;

  fs::create_directories(dir + "/chromium");
  const spade::testing::RenderedPage page = spade::testing::render_in_chromium(dir + "/report.html", dir + "/chromium");
  EXPECT_TRUE(page.page_requests.empty()) << page.page_requests.front();
  EXPECT_EQ(count(page.dom, "<tr class=\"run\">"), 2u);
  // Charts of the logged metrics (success rate, valid rate, entropy) with two legend entries each; the
  // held-out chart has run-a only (run-b logged no eval), with its band; unlogged metrics are listed.
  for (const char* metric : {"reward/success_rate", "designer/valid_rate", "actor/entropy", "designer/vendi_score",
                             "designer/vendi_score_per_env", "designer/reward_levels", "designer/formula_in_first_obs"}) {
    const size_t at = page.dom.find(std::string("data-metric=\"") + metric + "\"");
    ASSERT_NE(at, std::string::npos) << metric;
    const std::string fig = page.dom.substr(at, page.dom.find("</figure>", at) - at);
    EXPECT_EQ(count(fig, "class=\"legend-entry\""), 2u) << metric;
  }
  // The per-regeneration metrics are in the designer section, after its heading.
  const size_t designer = page.dom.find("<h3>Designer</h3>");
  ASSERT_NE(designer, std::string::npos);
  EXPECT_GT(page.dom.find("data-metric=\"designer/vendi_score\""), designer);
  EXPECT_GT(page.dom.find("data-metric=\"designer/formula_in_first_obs\""), designer);
  EXPECT_EQ(count(page.dom, "class=\"band\""), 1u);  // run-a's, in the eval chart
  EXPECT_NE(page.dom.find("Not logged by these runs: reward/mean"), std::string::npos);
  // Drawn: lines in both runs' colours (series_color 0 = #4e79a7, 1 = #f28e2b), well beyond the legend
  // swatches (14 x 10 pixels each, one per chart).
  EXPECT_GT(pixels(page, 0x4e, 0x79, 0xa7), 4 * 140 + 300);
  EXPECT_GT(pixels(page, 0xf2, 0x8e, 0x2b), 3 * 140 + 300);
}

}  // namespace
