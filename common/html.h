// Self-contained HTML pages for results people look at (the duel leaderboard, run reports): escaping,
// the page skeleton with a Content-Security-Policy of default-src 'none' (a browser fetches nothing when
// it opens the file; no script runs), and SVG line charts with a legend entry per series.
// Pure functions; thread-safe.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spade {

/// `text` with &, <, >, " and ' replaced by HTML character references.
std::string html_escape(const std::string& text);

/// A UTF-8 HTML5 document: <title>, a shared style sheet plus `style`, and `body` (trusted markup).
std::string html_page(const std::string& title, const std::string& style, const std::string& body);

/// `v` printed with the printf `format` for one double (e.g. "%.3f"); the one number formatter of the pages.
std::string format_number(const char* format, double v);

/// The i-th colour of the series palette (Tableau 10, "#4e79a7", "#f28e2b", ...; cycles).
std::string series_color(size_t i);

/// One line of a chart: (x, y) points in x order; an optional band (x, low, high) drawn behind it
/// (e.g. a 95% interval). Non-finite values are skipped.
struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  std::vector<std::pair<double, std::pair<double, double>>> band;
};

/// An SVG line chart, `width` x `height` pixels: axes with round ticks, one polyline per series in
/// series_color(i) (each a <g class="series" data-series=NAME>), point markers, the band as a
/// translucent polygon, and a legend (<g class="legend-entry" data-series=NAME>). `y_range` fixes the
/// y axis (e.g. [0, 1] for rates); otherwise it spans the data.
std::string svg_line_chart(const std::string& x_label, const std::string& y_label, const std::vector<ChartSeries>& series,
                           std::optional<std::pair<double, double>> y_range = std::nullopt, int width = 560,
                           int height = 260);

/// About five round tick positions covering [lo, hi] (steps of 1, 2 or 5 times a power of ten).
std::vector<double> chart_ticks(double lo, double hi);

}  // namespace spade
