#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "common/error.h"

namespace fs = std::filesystem;

namespace spade {

namespace {
std::string errno_text() { return std::strerror(errno); }

std::string temp_sibling(const fs::path& target) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream name;
  name << "." << target.filename().string() << ".tmp." << ::getpid() << "." << std::hex << rng();
  return (target.parent_path() / name.str()).string();
}
}  // namespace

void write_file_atomic(const std::string& path, std::string_view data) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw Error("cannot create directory " + target.parent_path().string() + ": " + ec.message());
  const std::string tmp = temp_sibling(target);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot create " + tmp + ": " + errno_text());
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error("cannot write " + path + ": " + why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot flush " + path + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + errno_text());
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const auto got = static_cast<uint64_t>(in.gcount());
    if (out.size() + got > max_bytes)
      throw Error(path + " is larger than " + std::to_string(max_bytes) + " bytes, the limit for this file");
    out.append(buf, got);
  }
  if (in.bad()) throw Error("cannot read " + path);
  return out;
}

std::string read_file(const std::string& path) { return read_file(path, std::numeric_limits<uint64_t>::max()); }

void append_line(const std::string& path, std::string_view line) {
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot open " + path + " for append: " + errno_text());
  std::string buf(line);
  buf.push_back('\n');
  // One write(2) with O_APPEND: a line is never interleaved with another writer's.
  ssize_t n = ::write(fd, buf.data(), buf.size());
  int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(buf.size())) {
    errno = saved;
    throw Error("cannot append to " + path + ": " + errno_text());
  }
}

void publish_directory(const std::string& tmp_dir, const std::string& final_dir) {
  std::error_code ec;
  if (fs::exists(final_dir)) {
    const std::string old = final_dir + ".old";
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    if (ec) throw Error("cannot move aside " + final_dir + ": " + ec.message());
    fs::rename(tmp_dir, final_dir, ec);
    if (ec) throw Error("cannot publish " + tmp_dir + " as " + final_dir + ": " + ec.message());
    fs::remove_all(old, ec);
    return;
  }
  fs::rename(tmp_dir, final_dir, ec);
  if (ec) throw Error("cannot publish " + tmp_dir + " as " + final_dir + ": " + ec.message());
}

}  // namespace spade
