#include "evaldual/diff.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
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

namespace {

// The body of a quoted git path ("a/caf\303\251") unquoted; `*pos` at the opening quote, left after
// the closing one. Returns false on a malformed quote.
bool unquote_c(const std::string& s, size_t* pos, std::string* out) {
  size_t i = *pos + 1;
  out->clear();
  while (i < s.size() && s[i] != '"') {
    char c = s[i++];
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (i >= s.size()) return false;
    char e = s[i++];
    switch (e) {
      case 'a': *out += '\a'; break;
      case 'b': *out += '\b'; break;
      case 'f': *out += '\f'; break;
      case 'n': *out += '\n'; break;
      case 'r': *out += '\r'; break;
      case 't': *out += '\t'; break;
      case 'v': *out += '\v'; break;
      case '"': case '\\': *out += e; break;
      default:
        if (e >= '0' && e <= '3' && i + 1 < s.size() && s[i] >= '0' && s[i] <= '7' && s[i + 1] >= '0' && s[i + 1] <= '7') {
          *out += static_cast<char>(((e - '0') << 6) | ((s[i] - '0') << 3) | (s[i + 1] - '0'));
          i += 2;
        } else {
          return false;
        }
    }
  }
  if (i >= s.size()) return false;
  *pos = i + 1;
  return true;
}

// A header path ("a/x", "\"a/x y\"", "/dev/null", GNU diff's "a/x\t2026-..."), C-unquoted. Returns
// false on a malformed quote.
bool header_path(const std::string& raw, std::string* out) {
  std::string t = trim(raw);
  if (!t.empty() && t[0] == '"') {
    size_t pos = 0;
    return unquote_c(t, &pos, out);
  }
  size_t tab = t.find('\t');
  *out = trim(tab == std::string::npos ? t : t.substr(0, tab));
  return true;
}

// "a/X b/Y" of a "diff --git" line into X and Y (prefixes stripped). Unquoted paths with spaces are
// split where both halves name the same file, as git does; returns false when that is ambiguous.
bool git_line_paths(const std::string& rest, std::string* a, std::string* b) {
  std::string t = rest;
  if (!t.empty() && t[0] == '"') {
    size_t pos = 0;
    if (!unquote_c(t, &pos, a)) return false;
    std::string tail = trim(t.substr(pos));
    if (!header_path(tail, b)) return false;
  } else {
    size_t q = t.find(" \"");
    if (q != std::string::npos) {
      *a = t.substr(0, q);
      size_t pos = q + 1;
      if (!unquote_c(t, &pos, b)) return false;
    } else {
      // Same name on both sides: "a/N b/N" has length 2 * len(N) + 5.
      if (t.size() % 2 == 1 && starts_with(t, "a/")) {
        size_t half = (t.size() - 5) / 2;
        std::string x = t.substr(2, half), y = t.substr(half + 5);
        if (t.compare(2 + half, 3, " b/") == 0 && x == y) {
          *a = x;
          *b = y;
          return true;
        }
      }
      size_t sp = t.find(" b/");
      if (sp == std::string::npos || t.find(" b/", sp + 1) != std::string::npos) return false;
      *a = t.substr(0, sp);
      *b = t.substr(sp + 1);
    }
  }
  for (std::string* p : {a, b})
    if (starts_with(*p, "a/") || starts_with(*p, "b/")) *p = p->substr(2);
  return true;
}

bool valid_mode(const std::string& m) { return m == "100644" || m == "100755"; }

}  // namespace

std::vector<FilePatch> parse_patch(const std::string& patch) {
  std::vector<FilePatch> files;
  bool fin = true;
  std::vector<std::string> lines = split_lines(patch, &fin);
  size_t i = 0;
  auto where = [&](size_t k) { return "patch line " + std::to_string(k + 1); };
  auto path_of = [&](const std::string& raw, size_t k) {
    std::string p;
    if (!header_path(raw, &p)) throw Error(where(k) + ": malformed quoted path " + raw);
    return p;
  };
  // Hunks from line i on (after the '+++' line) into fp.
  auto read_hunks = [&](FilePatch& fp) {
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
  };
  auto check_paths = [&](const FilePatch& fp, size_t k) {
    for (const std::string* p : {&fp.path, &fp.old_path})
      if (!safe_relative(*p)) throw Error(where(k) + ": unsafe path '" + *p + "' (absolute, empty or with ..)");
  };
  while (i < lines.size()) {
    const std::string& l = lines[i];
    if (starts_with(l, "diff --git ")) {
      FilePatch fp;
      fp.first_line = i;
      const size_t head = i;
      std::string a, b;
      if (!git_line_paths(l.substr(11), &a, &b))
        throw Error(where(i) + ": cannot tell the two paths of '" + l + "' apart (quote paths with spaces)");
      std::string rename_from, rename_to, copy_from, copy_to;
      ++i;
      for (; i < lines.size(); ++i) {
        const std::string& x = lines[i];
        auto value = [&](const char* key) { return x.substr(std::string(key).size()); };
        if (starts_with(x, "old mode ")) fp.old_mode = trim(value("old mode "));
        else if (starts_with(x, "new mode ")) fp.new_mode = trim(value("new mode "));
        else if (starts_with(x, "deleted file mode ")) {
          fp.deleted = true;
          fp.old_mode = trim(value("deleted file mode "));
        } else if (starts_with(x, "new file mode ")) {
          fp.added = true;
          fp.new_mode = trim(value("new file mode "));
        } else if (starts_with(x, "rename from ")) rename_from = path_of(value("rename from "), i);
        else if (starts_with(x, "rename to ")) rename_to = path_of(value("rename to "), i);
        else if (starts_with(x, "copy from ")) copy_from = path_of(value("copy from "), i);
        else if (starts_with(x, "copy to ")) copy_to = path_of(value("copy to "), i);
        else if (starts_with(x, "similarity index ") || starts_with(x, "dissimilarity index ") || starts_with(x, "index ")) continue;
        else if (starts_with(x, "GIT binary patch") || (starts_with(x, "Binary files ") && ends_with(x, " differ")))
          throw Error(where(i) + ": binary patch for '" + b + "' is not supported (only text diffs apply)");
        else break;
      }
      for (const std::string* m : {&fp.old_mode, &fp.new_mode}) {
        if (m->empty() || valid_mode(*m)) continue;
        std::string kind = *m == "120000" ? "a symlink" : *m == "160000" ? "a submodule (gitlink)" : "mode " + *m;
        throw Error(where(head) + ": '" + b + "' is " + kind + "; only regular files (100644, 100755) are supported");
      }
      if (!rename_from.empty() != !rename_to.empty() || !copy_from.empty() != !copy_to.empty())
        throw Error(where(head) + ": '" + b + "': a rename or copy needs both its 'from' and 'to' lines");
      if (!rename_from.empty() && !copy_from.empty())
        throw Error(where(head) + ": '" + b + "' is both renamed and copied");
      fp.renamed = !rename_from.empty();
      fp.copied = !copy_from.empty();
      if ((fp.renamed || fp.copied) && (fp.added || fp.deleted))
        throw Error(where(head) + ": '" + b + "' is renamed or copied and also created or deleted");
      if (fp.added && fp.deleted) throw Error(where(head) + ": '" + b + "' is both created and deleted");
      fp.old_path = fp.renamed ? rename_from : fp.copied ? copy_from : a;
      fp.path = fp.renamed ? rename_to : fp.copied ? copy_to : b;
      if (i < lines.size() && starts_with(lines[i], "--- ")) {
        if (i + 1 >= lines.size() || !starts_with(lines[i + 1], "+++ "))
          throw Error(where(i + 1) + ": expected '+++ b/PATH' after '" + lines[i] + "'");
        std::string o = path_of(lines[i].substr(4), i), n = path_of(lines[i + 1].substr(4), i + 1);
        bool o_null = o == "/dev/null", n_null = n == "/dev/null";
        for (std::string* p : {&o, &n})
          if (starts_with(*p, "a/") || starts_with(*p, "b/")) *p = p->substr(2);
        if (o_null != fp.added || n_null != fp.deleted || (!o_null && o != fp.old_path) || (!n_null && n != fp.path))
          throw Error(where(i) + ": '--- " + o + "' / '+++ " + n + "' do not match the git header of '" + fp.path + "'" +
                      (o_null != fp.added ? " (a /dev/null side needs 'new file mode' / 'deleted file mode')" : ""));
        i += 2;
        read_hunks(fp);
        if (fp.hunks.empty()) throw Error(where(i - 1) + ": file '" + fp.path + "' has '---' / '+++' headers but no hunks");
      }
      if (fp.deleted) fp.path = fp.old_path;
      if (!fp.added && !fp.deleted && fp.old_mode.empty() != fp.new_mode.empty())
        throw Error(where(head) + ": '" + fp.path + "': 'old mode' and 'new mode' come together");
      if (fp.hunks.empty() && !fp.added && !fp.deleted && !fp.renamed && !fp.copied && fp.new_mode.empty())
        throw Error(where(head) + ": '" + fp.path + "' has a git header but no change (no hunk, mode, rename or copy)");
      check_paths(fp, head);
      fp.end_line = i;
      files.push_back(std::move(fp));
      continue;
    }
    if (starts_with(l, "--- ")) {
      if (i + 1 >= lines.size() || !starts_with(lines[i + 1], "+++ "))
        throw Error(where(i + 1) + ": expected '+++ b/PATH' after '" + l + "'");
      FilePatch fp;
      fp.first_line = i;
      std::string oldp = path_of(l.substr(4), i), newp = path_of(lines[i + 1].substr(4), i + 1);
      fp.added = oldp == "/dev/null";
      fp.deleted = newp == "/dev/null";
      if (fp.added && fp.deleted) throw Error(where(i) + ": both sides are /dev/null");
      fp.path = strip_prefix(fp.deleted ? oldp : newp);
      fp.old_path = fp.path;
      check_paths(fp, i);
      i += 2;
      read_hunks(fp);
      if (fp.hunks.empty() && !(fp.added || fp.deleted))
        throw Error(where(i > 0 ? i - 1 : 0) + ": file '" + fp.path + "' has no hunks");
      fp.end_line = i;
      files.push_back(std::move(fp));
      continue;
    }
    if (starts_with(l, "@@")) throw Error(where(i) + ": hunk before any '--- a/PATH' / '+++ b/PATH' header");
    if (starts_with(l, "+") || starts_with(l, "-") || starts_with(l, " "))
      throw Error(where(i) + ": diff body line outside a hunk: '" + l.substr(0, 80) + "'");
    if (starts_with(l, "GIT binary patch") || (starts_with(l, "Binary files ") && ends_with(l, " differ")))
      throw Error(where(i) + ": binary patch is not supported (only text diffs apply): " + l.substr(0, 120));
    ++i;  // "diff -u ..." / "Only in" / blank lines between files
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
  std::vector<FilePatch> files = parse_patch(patch);
  bool fin = true;
  std::vector<std::string> lines = split_lines(patch, &fin);
  std::vector<std::pair<std::string, std::string>> out;
  for (const FilePatch& f : files) {
    std::string chunk;
    for (size_t k = f.first_line; k < f.end_line; ++k) chunk += lines[k] + "\n";
    out.emplace_back(f.path, std::move(chunk));
  }
  return out;
}

std::vector<std::string> patch_paths(const std::string& patch) {
  std::vector<std::string> p;
  for (const auto& f : parse_patch(patch)) {
    p.push_back(f.path);
    if (f.old_path != f.path) p.push_back(f.old_path);
  }
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

namespace {

// A file as the patch sees it while applying: its bytes as lines, and whether it is executable.
struct TreeFile {
  bool exists = false;
  std::vector<std::string> lines;
  bool final_newline = true;
  bool executable = false;
};

// Applies `fp`'s hunks to `f` (see apply_patch()). Throws naming the hunk that does not apply.
void apply_hunks(const FilePatch& fp, TreeFile* f, int max_before, int max_after) {
  std::vector<std::string>& lines = f->lines;
  long offset = 0;   // new-minus-old shift of the hunks applied so far
  long min_pos = 0;  // hunks apply in order, never overlapping
  for (size_t hi = 0; hi < fp.hunks.size(); ++hi) {
    const Hunk& h = fp.hunks[hi];
    std::vector<std::string> old_side, new_side;
    for (const auto& l : h.lines) {
      if (l[0] != '+') old_side.push_back(l.substr(1));
      if (l[0] != '-') new_side.push_back(l.substr(1));
    }
    const long n_old = static_cast<long>(old_side.size()), size = static_cast<long>(lines.size());
    // The final newline is part of the match: "\ No newline" after the old side's last line matches
    // only the end of a file without one; an old side without it never matches such an end.
    auto newline_ok = [&](long pos) {
      bool at_end = pos + n_old == size;
      if (h.old_no_newline) return at_end && !f->final_newline;
      return !(at_end && n_old > 0 && !f->final_newline);
    };
    long expected = (h.old_count == 0 ? h.old_start : h.old_start - 1) + offset;
    long found = -1;
    for (int d = 0; d <= std::max(max_before, max_after) && found < 0; ++d) {
      for (int sign : {-1, 1}) {
        if (d == 0 && sign == 1) continue;
        if (sign < 0 && d > max_before) continue;
        if (sign > 0 && d > max_after) continue;
        long pos = expected + (d == 0 ? 0 : sign * d);
        if (pos < min_pos || pos + n_old > size) continue;
        if (std::equal(old_side.begin(), old_side.end(), lines.begin() + pos) && newline_ok(pos)) {
          found = pos;
          break;
        }
      }
    }
    const std::string what = fp.path + ": hunk " + std::to_string(hi + 1) + " (@@ -" + std::to_string(h.old_start) +
                             "," + std::to_string(h.old_count) + " @@)";
    if (found < 0)
      throw Error("apply_patch: " + what + " does not apply within -" + std::to_string(max_before) + "..+" +
                  std::to_string(max_after) + " lines of its position" +
                  (h.old_no_newline ? " (it expects the file to end without a final newline)" : ""));
    bool at_end = found + n_old == size;
    if (h.new_no_newline && !at_end)
      throw Error("apply_patch: " + what + " ends its new side without a final newline but does not end the file");
    lines.erase(lines.begin() + found, lines.begin() + found + n_old);
    lines.insert(lines.begin() + found, new_side.begin(), new_side.end());
    if (at_end) f->final_newline = !h.new_no_newline || new_side.empty();
    min_pos = found + static_cast<long>(new_side.size());
    offset += static_cast<long>(new_side.size()) - n_old;
  }
}

std::string joined(const TreeFile& f) {
  std::string out;
  for (size_t k = 0; k < f.lines.size(); ++k) {
    out += f.lines[k];
    if (k + 1 < f.lines.size() || f.final_newline) out += '\n';
  }
  return out;
}

constexpr fs::perms kExecBits = fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec;

}  // namespace

void apply_patch(const std::string& dir, const std::string& patch, int max_before, int max_after) {
  std::vector<FilePatch> files = parse_patch(patch);
  std::map<std::string, TreeFile> tree;  // every path the patch reads or writes, as the patch leaves it
  std::set<std::string> changed;         // the paths it writes or removes
  auto file = [&](const std::string& rel) -> TreeFile& {
    auto it = tree.find(rel);
    if (it != tree.end()) return it->second;
    TreeFile f;
    fs::path p = fs::path(dir) / rel;
    std::error_code ec;
    if (fs::is_symlink(p, ec)) throw Error("apply_patch: " + rel + " is a symbolic link; only regular files are patched");
    if (fs::exists(p, ec) && !fs::is_regular_file(p, ec)) throw Error("apply_patch: " + rel + " is not a regular file");
    if (fs::is_regular_file(p, ec)) {
      std::string text;
      if (!read_bytes(p, &text)) throw Error("apply_patch: cannot read " + p.string());
      f.exists = true;
      if (!text.empty()) f.lines = split_lines(text, &f.final_newline);
      f.executable = (fs::status(p).permissions() & fs::perms::owner_exec) != fs::perms::none;
    }
    return tree.emplace(rel, std::move(f)).first->second;
  };
  for (const FilePatch& fp : files) {
    TreeFile src;
    if (fp.added) {
      if (file(fp.path).exists) throw Error("apply_patch: " + fp.path + ": file to be created already exists");
    } else {
      src = file(fp.old_path);
      if (!src.exists) {
        throw Error("apply_patch: " + fp.old_path + ": " +
                    (fp.renamed ? "file to be renamed" : fp.copied ? "file to be copied" : fp.deleted ? "file to be deleted"
                                                                                              : "file to be patched") +
                    " does not exist");
      }
      if ((fp.renamed || fp.copied) && file(fp.path).exists)
        throw Error("apply_patch: " + fp.path + ": " + (fp.renamed ? "rename" : "copy") + " target already exists");
    }
    apply_hunks(fp, &src, max_before, max_after);
    if (fp.deleted) {
      if (!src.lines.empty())
        throw Error("apply_patch: " + fp.path + ": the deletion leaves content the patch does not remove (" +
                    std::to_string(src.lines.size()) + " lines)");
      tree[fp.path] = TreeFile{};
      changed.insert(fp.path);
      continue;
    }
    src.exists = true;
    if (!fp.new_mode.empty()) src.executable = fp.new_mode == "100755";
    else if (fp.added) src.executable = false;
    if (fp.renamed) {
      tree[fp.old_path] = TreeFile{};
      changed.insert(fp.old_path);
    }
    tree[fp.path] = std::move(src);
    changed.insert(fp.path);
  }
  for (const std::string& rel : changed) {
    const TreeFile& f = tree.at(rel);
    fs::path p = fs::path(dir) / rel;
    std::error_code ec;
    if (!f.exists) {
      if (!fs::exists(p, ec)) continue;
      fs::remove(p);
      for (fs::path d = p.parent_path(); d != fs::path(dir) && fs::is_empty(d, ec) && !ec; d = d.parent_path())
        fs::remove(d, ec);  // like git apply: no empty directory is left behind
      continue;
    }
    fs::create_directories(p.parent_path());
    bool existed = fs::exists(p, ec);
    auto perms = existed ? fs::status(p).permissions() : fs::perms::none;
    write_file_atomic(p.string(), joined(f));
    if (!existed) perms = fs::status(p).permissions();
    fs::perms exec = fs::perms::none;  // x for each class that may read the file
    if ((perms & fs::perms::owner_read) != fs::perms::none) exec |= fs::perms::owner_exec;
    if ((perms & fs::perms::group_read) != fs::perms::none) exec |= fs::perms::group_exec;
    if ((perms & fs::perms::others_read) != fs::perms::none) exec |= fs::perms::others_exec;
    perms = (perms & ~kExecBits) | (f.executable ? exec : fs::perms::none);
    fs::permissions(p, perms, ec);
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
