#include "common/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace spade {
namespace {

const char* kBaseStyle = R"(body { font: 14px/1.4 sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
svg text { font: 12px sans-serif; fill: #222; }
svg .tick { fill: #666; } svg .axis { fill: #444; }
svg line.grid { stroke: #e3e3e3; } svg line.zero { stroke: #999; stroke-dasharray: 4 3; }
.empty { color: #777; font-style: italic; } .meta { color: #555; }
)";

}  // namespace

std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_page(const std::string& title, const std::string& style, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
         "<title>" + html_escape(title) + "</title>\n<style>\n" + kBaseStyle + style + "</style>\n</head>\n<body>\n" +
         body + "</body>\n</html>\n";
}

std::string series_color(size_t i) {
  static const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % 10];
}

std::vector<double> chart_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  if (!(raw > 0) || !std::isfinite(raw)) return {lo};
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) out.push_back(std::abs(t) < 1e-12 * step ? 0 : t);
  return out;
}

std::string svg_line_chart(const std::string& x_label, const std::string& y_label, const std::vector<ChartSeries>& series,
                           std::optional<std::pair<double, double>> y_range, int width, int height) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto see = [](double v, double* lo, double* hi) {
    if (std::isfinite(v)) *lo = std::min(*lo, v), *hi = std::max(*hi, v);
  };
  for (const ChartSeries& s : series) {
    for (const auto& [x, y] : s.points) see(x, &x0, &x1), see(y, &y0, &y1);
    for (const auto& [x, b] : s.band) see(x, &x0, &x1), see(b.first, &y0, &y1), see(b.second, &y0, &y1);
  }
  if (y_range) y0 = y_range->first, y1 = y_range->second;
  if (!(x0 <= x1)) x0 = 0, x1 = 1;
  if (!(y0 <= y1)) y0 = 0, y1 = 1;
  if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
  if (y1 - y0 < 1e-12) y0 -= 0.5, y1 += 0.5;
  const int left = 56, right = 12, top = 10, bottom = 44;
  const int legend_h = 18 * static_cast<int>(series.size());
  const int plot_w = width - left - right, plot_h = height - top - bottom;
  auto X = [&](double x) { return left + plot_w * (x - x0) / (x1 - x0); };
  auto Y = [&](double y) { return top + plot_h * (1 - (std::clamp(y, y0, y1) - y0) / (y1 - y0)); };
  std::string s = "<svg class=\"line-chart\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height + legend_h) + "\" role=\"img\" aria-label=\"" + html_escape(y_label) + "\">\n";
  for (double t : chart_ticks(y0, y1))
    s += "<line class=\"grid\" x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(left + plot_w) + "\" y1=\"" +
         format_number("%.1f", Y(t)) + "\" y2=\"" + format_number("%.1f", Y(t)) + "\"/><text class=\"tick\" x=\"" + std::to_string(left - 6) +
         "\" y=\"" + format_number("%.1f", Y(t) + 4) + "\" text-anchor=\"end\">" + format_number("%.3g", t) + "</text>\n";
  for (double t : chart_ticks(x0, x1))
    s += "<text class=\"tick\" x=\"" + format_number("%.1f", X(t)) + "\" y=\"" + std::to_string(top + plot_h + 16) +
         "\" text-anchor=\"middle\">" + format_number("%g", t) + "</text>\n";
  s += "<line class=\"zero\" x1=\"" + std::to_string(left) + "\" x2=\"" + std::to_string(left) + "\" y1=\"" +
       std::to_string(top) + "\" y2=\"" + std::to_string(top + plot_h) + "\"/>\n";
  s += "<text class=\"axis\" x=\"" + std::to_string(left + plot_w / 2) + "\" y=\"" + std::to_string(top + plot_h + 34) +
       "\" text-anchor=\"middle\">" + html_escape(x_label) + "</text>\n";
  s += "<text class=\"axis\" transform=\"rotate(-90)\" x=\"" + std::to_string(-(top + plot_h / 2)) + "\" y=\"14\" "
       "text-anchor=\"middle\">" + html_escape(y_label) + "</text>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& c = series[i];
    const std::string color = series_color(i);
    s += "<g class=\"series\" data-series=\"" + html_escape(c.name) + "\">";
    if (!c.band.empty()) {
      std::string upper, lower;
      for (const auto& [x, b] : c.band)
        if (std::isfinite(x) && std::isfinite(b.first) && std::isfinite(b.second)) {
          upper += format_number("%.1f", X(x)) + "," + format_number("%.1f", Y(b.second)) + " ";
          lower = format_number("%.1f", X(x)) + "," + format_number("%.1f", Y(b.first)) + " " + lower;
        }
      s += "<polygon class=\"band\" points=\"" + upper + lower + "\" fill=\"" + color + "\" fill-opacity=\"0.18\"/>";
    }
    std::string pts;
    for (const auto& [x, y] : c.points)
      if (std::isfinite(x) && std::isfinite(y)) pts += format_number("%.1f", X(x)) + "," + format_number("%.1f", Y(y)) + " ";
    s += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>";
    for (const auto& [x, y] : c.points)
      if (std::isfinite(x) && std::isfinite(y))
        s += "<circle cx=\"" + format_number("%.1f", X(x)) + "\" cy=\"" + format_number("%.1f", Y(y)) + "\" r=\"2.5\" fill=\"" + color + "\"/>";
    s += "</g>\n";
    const int ly = height + 18 * static_cast<int>(i) + 4;
    s += "<g class=\"legend-entry\" data-series=\"" + html_escape(c.name) + "\"><rect x=\"" + std::to_string(left) +
         "\" y=\"" + std::to_string(ly) + "\" width=\"14\" height=\"10\" fill=\"" + color + "\"/><text x=\"" +
         std::to_string(left + 20) + "\" y=\"" + std::to_string(ly + 9) + "\">" + html_escape(c.name) + "</text></g>\n";
  }
  return s + "</svg>\n";
}

}  // namespace spade
