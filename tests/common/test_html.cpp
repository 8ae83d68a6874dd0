// common/html.h: escaping, the page skeleton, round chart ticks, and what a line chart draws.
#include <gtest/gtest.h>

#include <cmath>

#include "common/html.h"

namespace spade {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Html, EscapesTheFiveCharacters) {
  EXPECT_EQ(html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain"), "plain");
}

TEST(Html, PageFetchesNothingAndRunsNoScript) {
  const std::string p = html_page("a <b>", "td { x: y; }\n", "<p>hi</p>\n");
  EXPECT_EQ(p.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(p.find("content=\"default-src 'none'; style-src 'unsafe-inline'\""), std::string::npos);
  EXPECT_NE(p.find("<title>a &lt;b&gt;</title>"), std::string::npos);
  EXPECT_NE(p.find("td { x: y; }"), std::string::npos);
  EXPECT_NE(p.find("<p>hi</p>"), std::string::npos);
}

TEST(Html, TicksAreRoundAndCoverTheRange) {
  // By hand: (0, 1) / 5 = 0.2 -> step 0.2; (-3.7, 12.1) / 5 = 3.16 -> step 5 from -0 to 10.
  EXPECT_EQ(chart_ticks(0, 1), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(chart_ticks(-3.7, 12.1), (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(chart_ticks(2, 2), (std::vector<double>{2}));
}

TEST(Html, LineChartHasAPolylineAndALegendEntryPerSeries) {
  ChartSeries a{"run <a>", {{1, 0.5}, {2, 0.7}}, {}};
  ChartSeries b{"run b", {{1, 0.1}, {2, NAN}, {3, 0.3}}, {{1, {0.0, 0.2}}, {3, {0.2, 0.4}}}};
  const std::string svg = svg_line_chart("step", "success", {a, b}, std::make_pair(0.0, 1.0));
  EXPECT_EQ(count(svg, "<polyline "), 2u);
  EXPECT_EQ(count(svg, "<g class=\"legend-entry\""), 2u);
  EXPECT_NE(svg.find("data-series=\"run &lt;a&gt;\""), std::string::npos);
  EXPECT_EQ(count(svg, "<polygon class=\"band\""), 1u);
  EXPECT_EQ(count(svg, "<circle "), 4u);  // the NaN point is skipped
  EXPECT_NE(svg.find("stroke=\"" + series_color(1) + "\""), std::string::npos);
}

}  // namespace
}  // namespace spade
