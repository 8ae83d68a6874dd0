#include "apps/error_text.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <new>
#include <regex>

#include "common/error.h"

namespace spade::apps {

std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  // Caffe2-style checks (the CPU allocator's among them) open with "[enforce fail at FILE:LINE] CONDITION. ":
  // LibTorch's source position and C++ condition, nothing the user can act on.
  static const std::regex enforce(R"(^\[enforce fail at [^\]]*\] [^.]*\. )");
  text = std::regex_replace(text, enforce, "");
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::optional<std::string> allocation_failure(const std::exception& e) {
  const std::string text = error_text(e);
  const bool failed = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
                      dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
                      (dynamic_cast<const c10::Error*>(&e) != nullptr &&
                       (text.find("out of memory") != std::string::npos ||
                        text.find("can't allocate memory") != std::string::npos));
  if (!failed) return std::nullopt;
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      if (!line.empty() && line.back() != ' ') line += ' ';
    } else {
      line += c;
    }
  }
  return line;
}

std::string describe_error(const std::exception& e) {
  const std::optional<std::string> failure = allocation_failure(e);
  return failure ? "out of memory: " + *failure : error_text(e);
}

std::function<int()> reporting_allocation_failures(std::string command, std::shared_ptr<const std::string> where,
                                                   std::function<int()> action) {
  return [command = std::move(command), where = std::move(where), action = std::move(action)]() -> int {
    try {
      return action();
    } catch (const std::exception& e) {
      const std::optional<std::string> failure = allocation_failure(e);
      if (!failure) throw;
      const std::string at = where ? *where : "";
      throw Error(command + ": out of memory" + (at.empty() ? "" : " at " + at) + ": " + *failure);
    }
  };
}

}  // namespace spade::apps
