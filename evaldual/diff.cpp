#include "evaldual/diff.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "evaldual/process.h"

namespace fs = std::filesystem;

namespace spade::evaldual {
namespace {

bool read_bytes(const fs::path& p, std::string* out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

bool looks_binary(const std::string& s) { return s.find('\0', 0) < std::min<size_t>(s.size(), 8000); }

// Relative regular files under `root` (symlinks and excluded paths skipped).
std::map<std::string, fs::path> list_files(const std::string& root, const DiffOptions& o, bool keep_git = false) {
  std::map<std::string, fs::path> files;
  if (!fs::is_directory(root)) throw Error("diff: '" + root + "' is not a directory");
  fs::recursive_directory_iterator it(root, fs::directory_options::none), end;
  for (; it != end; ++it) {
    std::error_code ec;
    std::string rel = it->path().lexically_relative(root).generic_string();  // never through a symlink
    bool git = rel == ".git" || starts_with(rel, ".git/");
    if ((git && !keep_git) || (!git && is_excluded(rel, o))) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink(ec)) continue;
    if (it->is_regular_file(ec)) files[rel] = it->path();
  }
  return files;
}

// ---- SHA-256 (FIPS 180-4) ----
struct Sha256 {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint64_t len = 0;
  unsigned char buf[64];
  size_t fill = 0;
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void block(const unsigned char* p) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
        0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
        0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
        0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
        0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
        0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
        0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  void update(const void* data, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    len += n;
    while (n > 0) {
      size_t take = std::min(n, 64 - fill);
      std::copy(p, p + take, buf + fill);
      fill += take; p += take; n -= take;
      if (fill == 64) { block(buf); fill = 0; }
    }
  }
  std::string hex() {
    uint64_t bits = len * 8;
    unsigned char pad = 0x80;
    update(&pad, 1);
    unsigned char zero = 0;
    while (fill != 56) update(&zero, 1);
    unsigned char l[8];
    for (int i = 0; i < 8; ++i) l[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(l, 8);
    char out[65];
    for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
    return std::string(out, 64);
  }
};

// Splits text into lines without their '\n'; *final_newline tells whether the text ended with one.
std::vector<std::string> split_lines(const std::string& s, bool* final_newline) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(s.substr(pos));
      *final_newline = false;
      return lines;
    }
    lines.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  *final_newline = true;
  return lines;
}

std::string strip_prefix(const std::string& p) {
  std::string path = p;
  size_t tab = path.find('\t');
  if (tab != std::string::npos) path = path.substr(0, tab);
  path = trim(path);
  if (starts_with(path, "a/") || starts_with(path, "b/")) path = path.substr(2);
  return path;
}

bool parse_range(const std::string& s, int* start, int* count) {
  // "12,3" or "12"
  size_t comma = s.find(',');
  try {
    *start = std::stoi(s.substr(0, comma));
    *count = comma == std::string::npos ? 1 : std::stoi(s.substr(comma + 1));
  } catch (...) {
    return false;
  }
  return *start >= 0 && *count >= 0;
}

// True when every hunk of a one-file chunk has its full body (so a following "--- " starts a new file).
bool chunk_complete(const std::string& chunk) {
  try {
    parse_patch(chunk);
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool safe_relative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : split(p, '/'))
    if (part == "..") return false;
  return true;
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  Sha256 s;
  s.update(data.data(), data.size());
  return s.hex();
}

bool is_backup_file(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  return ends_with(base, ".bak") || ends_with(base, ".orig") || ends_with(base, "~") || ends_with(base, ".tmp") ||
         ends_with(base, ".rej");
}

bool is_excluded(const std::string& rel, const DiffOptions& o) {
  if (rel == ".git" || starts_with(rel, ".git/")) return true;
  std::string base = fs::path(rel).filename().string();
  for (const std::string& e0 : o.exclude) {
    std::string e = e0;
    while (ends_with(e, "/")) e.pop_back();
    if (e.empty()) continue;
    if (rel == e || starts_with(rel, e + "/")) return true;
    if (fnmatch(e.c_str(), rel.c_str(), 0) == 0 || fnmatch(e.c_str(), base.c_str(), 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> scrub_backup_files(const std::string& pristine, const std::string& workspace,
                                            const DiffOptions& o) {
  std::vector<std::string> removed;
  for (const auto& [rel, path] : list_files(workspace, o)) {
    if (!is_backup_file(rel)) continue;
    if (fs::exists(fs::path(pristine) / rel)) continue;
    std::error_code ec;
    fs::remove(path, ec);
    if (!ec) removed.push_back(rel);
  }
  return removed;
}

std::vector<FileDiff> diff_files(const std::string& pristine, const std::string& workspace, const DiffOptions& o) {
  if (o.scrub_backups) scrub_backup_files(pristine, workspace, o);
  auto a = list_files(pristine, o), b = list_files(workspace, o);
  std::map<std::string, std::pair<bool, bool>> all;  // path -> (in a, in b)
  for (const auto& kv : a) all[kv.first].first = true;
  for (const auto& kv : b) all[kv.first].second = true;
  std::vector<FileDiff> out;
  for (const auto& [rel, in] : all) {
    std::string ca, cb;
    if (in.first && !read_bytes(a[rel], &ca)) throw Error("diff: cannot read " + a[rel].string());
    if (in.second && !read_bytes(b[rel], &cb)) throw Error("diff: cannot read " + b[rel].string());
    if (in.first && in.second && ca == cb) continue;
    if (looks_binary(ca) || looks_binary(cb)) continue;
    std::string left = in.first ? a[rel].string() : "/dev/null";
    std::string right = in.second ? b[rel].string() : "/dev/null";
    ProcessOptions po;
    po.timeout_s = 60;
    po.output_cap_bytes = 64u << 20;
    po.merge_stderr = false;
    ProcessResult r = run_process({"diff", "-u", "--label", in.first ? "a/" + rel : "/dev/null", "--label",
                                   in.second ? "b/" + rel : "/dev/null", left, right},
                                  po);
    if (r.rc != 1 && r.rc != 0) throw Error("diff: `diff -u` failed on " + rel + " (rc " + std::to_string(r.rc) + "): " + r.error_output);
    if (r.output.empty()) continue;
    FileDiff d;
    d.path = rel;
    d.text = r.output;
    if (!ends_with(d.text, "\n")) d.text += "\n";
    d.added = !in.first;
    d.deleted = !in.second;
    out.push_back(std::move(d));
  }
  return out;
}

std::string diff_workspace(const std::string& pristine, const std::string& workspace, const DiffOptions& o) {
  std::string s;
  for (const auto& d : diff_files(pristine, workspace, o)) s += d.text;
  return s;
}

std::vector<FilePatch> parse_patch(const std::string& patch) {
  std::vector<FilePatch> files;
  bool fin = true;
  std::vector<std::string> lines = split_lines(patch, &fin);
  size_t i = 0;
  auto where = [&](size_t k) { return "patch line " + std::to_string(k + 1); };
  while (i < lines.size()) {
    const std::string& l = lines[i];
    if (starts_with(l, "--- ")) {
      if (i + 1 >= lines.size() || !starts_with(lines[i + 1], "+++ "))
        throw Error(where(i + 1) + ": expected '+++ b/PATH' after '" + l + "'");
      FilePatch fp;
      std::string oldp = l.substr(4), newp = lines[i + 1].substr(4);
      fp.added = strip_prefix(oldp) == "/dev/null";
      fp.deleted = strip_prefix(newp) == "/dev/null";
      if (fp.added && fp.deleted) throw Error(where(i) + ": both sides are /dev/null");
      fp.path = strip_prefix(fp.deleted ? oldp : newp);
      if (!safe_relative(fp.path)) throw Error(where(i) + ": unsafe path '" + fp.path + "' (absolute or with ..)");
      i += 2;
      while (i < lines.size() && starts_with(lines[i], "@@")) {
        Hunk h;
        // "@@ -a,b +c,d @@ section"
        std::istringstream hs(lines[i]);
        std::string at, o, n;
        hs >> at >> o >> n;
        if (o.size() < 2 || n.size() < 2 || o[0] != '-' || n[0] != '+' || !parse_range(o.substr(1), &h.old_start, &h.old_count) ||
            !parse_range(n.substr(1), &h.new_start, &h.new_count))
          throw Error(where(i) + ": malformed hunk header '" + lines[i] + "' (expected '@@ -A,B +C,D @@')");
        size_t header = i++;
        int need_old = h.old_count, need_new = h.new_count;
        while ((need_old > 0 || need_new > 0) && i < lines.size()) {
          const std::string& b = lines[i];
          char c = b.empty() ? ' ' : b[0];  // some tools drop the space of empty context lines
          std::string body = b.empty() ? " " : b;
          if (c == ' ') { --need_old; --need_new; }
          else if (c == '-') --need_old;
          else if (c == '+') --need_new;
          else if (c == '\\') { ++i; continue; }
          else break;
          h.lines.push_back(body);
          ++i;
          if (i < lines.size() && starts_with(lines[i], "\\")) {
            if (c == ' ' || c == '-') h.old_no_newline = true;
            if (c == ' ' || c == '+') h.new_no_newline = true;
            ++i;
          }
        }
        if (need_old != 0 || need_new != 0)
          throw Error(where(header) + ": hunk body does not match its header '" + lines[header] + "' (" +
                      std::to_string(need_old) + " old and " + std::to_string(need_new) + " new lines missing)");
        fp.hunks.push_back(std::move(h));
      }
      if (fp.hunks.empty() && !(fp.added || fp.deleted))
        throw Error(where(i > 0 ? i - 1 : 0) + ": file '" + fp.path + "' has no hunks");
      files.push_back(std::move(fp));
      continue;
    }
    if (starts_with(l, "@@")) throw Error(where(i) + ": hunk before any '--- a/PATH' / '+++ b/PATH' header");
    if (starts_with(l, "+") || starts_with(l, "-") || starts_with(l, " "))
      throw Error(where(i) + ": diff body line outside a hunk: '" + l.substr(0, 80) + "'");
    ++i;  // "diff -u ..." / "index ..." / "Only in" / blank lines between files
  }
  return files;
}

bool validate_patch(const std::string& patch, std::string* why) {
  if (trim(patch).empty()) {
    if (why) *why = "empty diff";
    return false;
  }
  try {
    auto files = parse_patch(patch);
    if (files.empty()) {
      if (why) *why = "no file headers ('--- a/PATH' / '+++ b/PATH') in the diff";
      return false;
    }
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

DiffStats patch_stats(const std::vector<FilePatch>& files) {
  DiffStats s;
  s.files = static_cast<int>(files.size());
  for (const auto& f : files) {
    s.hunks += static_cast<int>(f.hunks.size());
    for (const auto& h : f.hunks)
      for (const auto& l : h.lines) {
        if (l[0] == '+') ++s.added_lines;
        if (l[0] == '-') ++s.removed_lines;
      }
  }
  return s;
}

DiffStats patch_stats(const std::string& patch) { return patch_stats(parse_patch(patch)); }

std::vector<std::pair<std::string, std::string>> split_patch(const std::string& patch) {
  std::vector<FilePatch> files = parse_patch(patch);  // validates; gives the paths in order
  std::vector<std::pair<std::string, std::string>> out;
  bool fin = true;
  std::vector<std::string> lines = split_lines(patch, &fin);
  size_t f = 0;
  std::string chunk;
  bool in_file = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    bool header = starts_with(lines[i], "--- ") && i + 1 < lines.size() && starts_with(lines[i + 1], "+++ ");
    // A "--- " line inside a hunk is a removed line starting with "-- ": headers only come between hunks,
    // i.e. when the previous chunk is complete; parse_patch() already checked the structure, so count files.
    if (header && (!in_file || f < files.size()) && (chunk.empty() || chunk_complete(chunk))) {
      if (in_file) out.emplace_back(files[f++].path, chunk);
      chunk.clear();
      in_file = true;
    }
    if (in_file) chunk += lines[i] + "\n";
  }
  if (in_file && f < files.size()) out.emplace_back(files[f].path, chunk);
  return out;
}

std::vector<std::string> patch_paths(const std::string& patch) {
  std::vector<std::string> p;
  for (const auto& f : parse_patch(patch)) p.push_back(f.path);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

void apply_patch(const std::string& dir, const std::string& patch, int max_before, int max_after) {
  std::vector<FilePatch> files = parse_patch(patch);
  struct Result {
    fs::path path;
    bool remove;
    std::string content;
  };
  std::vector<Result> results;
  for (const FilePatch& fp : files) {
    fs::path p = fs::path(dir) / fp.path;
    std::string text;
    bool exists = fs::is_regular_file(p);
    if (fp.added && exists) throw Error("apply_patch: " + fp.path + ": file to be created already exists");
    if (!fp.added && !exists) throw Error("apply_patch: " + fp.path + ": file to be patched does not exist");
    if (exists && !read_bytes(p, &text)) throw Error("apply_patch: cannot read " + p.string());
    bool final_nl = true;
    std::vector<std::string> lines = text.empty() ? std::vector<std::string>{} : split_lines(text, &final_nl);
    long offset = 0;     // new-minus-old shift of the hunks applied so far
    long min_pos = 0;    // hunks apply in order, never overlapping
    for (size_t hi = 0; hi < fp.hunks.size(); ++hi) {
      const Hunk& h = fp.hunks[hi];
      std::vector<std::string> old_side, new_side;
      for (const auto& l : h.lines) {
        if (l[0] != '+') old_side.push_back(l.substr(1));
        if (l[0] != '-') new_side.push_back(l.substr(1));
      }
      long expected = (h.old_count == 0 ? h.old_start : h.old_start - 1) + offset;
      long found = -1;
      for (int d = 0; d <= std::max(max_before, max_after) && found < 0; ++d) {
        for (int sign : {-1, 1}) {
          if (d == 0 && sign == 1) continue;
          if (sign < 0 && d > max_before) continue;
          if (sign > 0 && d > max_after) continue;
          long pos = expected + (d == 0 ? 0 : sign * d);
          if (pos < min_pos || pos + static_cast<long>(old_side.size()) > static_cast<long>(lines.size())) continue;
          if (std::equal(old_side.begin(), old_side.end(), lines.begin() + pos)) {
            found = pos;
            break;
          }
        }
      }
      if (found < 0)
        throw Error("apply_patch: " + fp.path + ": hunk " + std::to_string(hi + 1) + " (@@ -" +
                    std::to_string(h.old_start) + "," + std::to_string(h.old_count) + " @@) does not apply within -" +
                    std::to_string(max_before) + "..+" + std::to_string(max_after) + " lines of its position");
      bool at_end = found + static_cast<long>(old_side.size()) == static_cast<long>(lines.size());
      lines.erase(lines.begin() + found, lines.begin() + found + static_cast<long>(old_side.size()));
      lines.insert(lines.begin() + found, new_side.begin(), new_side.end());
      if (at_end) final_nl = !h.new_no_newline;
      min_pos = found + static_cast<long>(new_side.size());
      offset += static_cast<long>(new_side.size()) - static_cast<long>(old_side.size());
    }
    Result r{p, fp.deleted, ""};
    if (!fp.deleted) {
      for (size_t k = 0; k < lines.size(); ++k) {
        r.content += lines[k];
        if (k + 1 < lines.size() || final_nl) r.content += '\n';
      }
    }
    results.push_back(std::move(r));
  }
  for (const Result& r : results) {
    if (r.remove) {
      fs::remove(r.path);
      continue;
    }
    std::error_code ec;
    auto perms = fs::exists(r.path) ? fs::status(r.path).permissions() : fs::perms::none;
    write_file_atomic(r.path.string(), r.content);
    if (perms != fs::perms::none) fs::permissions(r.path, perms, ec);
  }
}

void copy_tree(const std::string& from, const std::string& to, const DiffOptions& o, bool keep_git) {
  if (!fs::is_directory(from)) throw Error("copy_tree: '" + from + "' is not a directory");
  fs::create_directories(to);
  fs::recursive_directory_iterator it(from), end;
  for (; it != end; ++it) {
    std::error_code ec;
    std::string rel = it->path().lexically_relative(from).generic_string();  // never through a symlink
    bool git = rel == ".git" || starts_with(rel, ".git/");
    if ((git && !keep_git) || (!git && is_excluded(rel, o))) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    fs::path dst = fs::path(to) / rel;
    if (it->is_symlink(ec)) {
      fs::copy_symlink(it->path(), dst, ec);
    } else if (it->is_directory(ec)) {
      fs::create_directories(dst, ec);
    } else if (it->is_regular_file(ec)) {
      fs::copy_file(it->path(), dst, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) throw Error("copy_tree: " + it->path().string() + " -> " + dst.string() + ": " + ec.message());
  }
}

std::string tree_hash(const std::string& dir, const DiffOptions& o) {
  Sha256 s;
  for (const auto& [rel, path] : list_files(dir, o)) {
    std::string data;
    if (!read_bytes(path, &data)) throw Error("tree_hash: cannot read " + path.string());
    std::string h = sha256_hex(data);
    s.update(rel.data(), rel.size());
    s.update("\0", 1);
    s.update(h.data(), h.size());
  }
  return s.hex();
}

}  // namespace spade::evaldual
