// Loading an HTML report in headless Chromium (Debian's `chromium`) for tests: what rendered (the
// screenshot's pixels), the DOM after load, and every network request the page itself started (from
// Chromium's NetLog: a URL_REQUEST_START_JOB whose network isolation key is the file:// site; the
// browser's own background traffic has another key and is ignored). Header-only; link ZLIB::ZLIB (the
// screenshot is decoded here: 8-bit RGB/RGBA non-interlaced PNG, which is what Chromium writes).
// Throws std::runtime_error when Chromium cannot be started or writes nothing.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "evaldual/process.h"

namespace spade::testing {

struct RenderedPage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;                // width * height * 3, row-major
  std::string dom;                         // document.documentElement.outerHTML after load
  std::vector<std::string> page_requests;  // URLs the page asked the network for

  /// Distinct horizontal bands (runs of adjacent rows) holding at least `min_pixels` pixels of exactly
  /// the colour (r, g, b) in a row: e.g. one per interval bar of a chart.
  int color_bands(uint8_t r, uint8_t g, uint8_t b, int min_pixels = 6) const {
    int bands = 0;
    bool in_band = false;
    for (int y = 0; y < height; ++y) {
      int n = 0;
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
        n += p[0] == r && p[1] == g && p[2] == b;
      }
      const bool hit = n >= min_pixels;
      bands += hit && !in_band;
      in_band = hit;
    }
    return bands;
  }
};

namespace chromium_detail {

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// PNG (RFC 2083): chunks; IDAT inflated; each row starts with a filter byte (0-4).
inline void decode_png(const std::string& file, RenderedPage* page) {
  const auto* d = reinterpret_cast<const unsigned char*>(file.data());
  if (file.size() < 33 || std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) != 0) throw std::runtime_error("not a PNG");
  std::string idat;
  int color_type = -1, bit_depth = 0;
  for (size_t pos = 8; pos + 12 <= file.size();) {
    const uint32_t len = be32(d + pos);
    const std::string type(reinterpret_cast<const char*>(d + pos + 4), 4);
    const unsigned char* body = d + pos + 8;
    if (type == "IHDR") {
      page->width = static_cast<int>(be32(body));
      page->height = static_cast<int>(be32(body + 4));
      bit_depth = body[8], color_type = body[9];
      if (body[12] != 0) throw std::runtime_error("interlaced PNG");
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(body), len);
    }
    pos += 12 + len;
  }
  if (bit_depth != 8 || (color_type != 2 && color_type != 6)) throw std::runtime_error("unsupported PNG format");
  const int bpp = color_type == 6 ? 4 : 3;
  const size_t stride = static_cast<size_t>(page->width) * bpp;
  std::vector<unsigned char> raw((stride + 1) * page->height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    throw std::runtime_error("PNG data does not inflate to the image size");
  std::vector<unsigned char> prev(stride, 0), cur(stride);
  page->rgb.resize(static_cast<size_t>(page->width) * page->height * 3);
  for (int y = 0; y < page->height; ++y) {
    const unsigned char* row = &raw[y * (stride + 1)];
    const int filter = row[0];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(bpp) ? cur[i - bpp] : 0, b = prev[i],
                c = i >= static_cast<size_t>(bpp) ? prev[i - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default: throw std::runtime_error("bad PNG filter");
      }
      cur[i] = static_cast<unsigned char>(row[1 + i] + pred);
    }
    for (int x = 0; x < page->width; ++x)
      for (int k = 0; k < 3; ++k) page->rgb[(static_cast<size_t>(y) * page->width + x) * 3 + k] = cur[x * bpp + k];
    prev.swap(cur);
  }
}

inline std::vector<std::string> page_requests_from_netlog(const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(read_all(path));
  int start_job = -1;
  for (const auto& [name, id] : j.at("constants").at("logEventTypes").items())
    if (name == "URL_REQUEST_START_JOB") start_job = id.get<int>();
  std::set<std::string> urls;
  for (const nlohmann::json& e : j.at("events")) {
    if (e.value("type", -2) != start_job || !e.contains("params")) continue;
    const nlohmann::json& p = e["params"];
    const std::string url = p.value("url", ""), key = p.value("network_isolation_key", "");
    if (key.find("file://") != std::string::npos && url.rfind("file:", 0) != 0) urls.insert(url);
  }
  return {urls.begin(), urls.end()};
}

}  // namespace chromium_detail

/// Loads `html_path` (absolute) in headless Chromium; scratch files go to `work_dir` (must exist).
inline RenderedPage render_in_chromium(const std::string& html_path, const std::string& work_dir, int width = 1400,
                                       int height = 2400) {
  const std::vector<std::string> common = {
      "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
      "--user-data-dir=" + work_dir + "/chromium-profile",
      "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
  evaldual::ProcessOptions o;
  o.timeout_s = 120;
  o.merge_stderr = false;
  std::vector<std::string> shot = common;
  shot.push_back("--screenshot=" + work_dir + "/screenshot.png");
  shot.push_back("--log-net-log=" + work_dir + "/netlog.json");
  shot.push_back("file://" + html_path);
  evaldual::ProcessResult r = evaldual::run_process(shot, o);
  if (r.rc != 0) throw std::runtime_error("chromium --screenshot failed (rc " + std::to_string(r.rc) + "): " + r.error_output);
  RenderedPage page;
  chromium_detail::decode_png(chromium_detail::read_all(work_dir + "/screenshot.png"), &page);
  page.page_requests = chromium_detail::page_requests_from_netlog(work_dir + "/netlog.json");
  std::vector<std::string> dom = common;
  dom.push_back("--dump-dom");
  dom.push_back("file://" + html_path);
  r = evaldual::run_process(dom, o);
  if (r.rc != 0) throw std::runtime_error("chromium --dump-dom failed (rc " + std::to_string(r.rc) + "): " + r.error_output);
  page.dom = r.output;
  return page;
}

}  // namespace spade::testing
