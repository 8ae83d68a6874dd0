// What the `spade` command prints for an exception: LibTorch's errors without their C++ backtrace, and
// allocation failures as one line that says what was being allocated. Torch-free header.
#pragma once
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace spade::apps {

/// e.what(), except for a c10::Error (what LibTorch throws), whose what() carries a C++ backtrace:
/// its what_without_backtrace() instead, without a leading "[enforce fail at FILE:LINE] CONDITION. ".
/// Trailing whitespace removed.
std::string error_text(const std::exception& e);

/// For an allocation failure, the allocator's message on one line (error_text, newlines folded to
/// spaces); nullopt for any other exception. Allocation failures: c10::OutOfMemoryError (CUDA: "CUDA out
/// of memory. Tried to allocate 2.00 GiB ..."), std::bad_alloc, and a c10::Error whose message says
/// "out of memory" or "can't allocate memory" (LibTorch's CPU allocator: "DefaultCPUAllocator: can't
/// allocate memory: you tried to allocate N bytes. Error code 12 ...").
std::optional<std::string> allocation_failure(const std::exception& e);

/// describe(e): "out of memory: " + allocation_failure(e) for an allocation failure, else error_text(e).
std::string describe_error(const std::exception& e);

/// `action`, wrapped: an allocation failure inside becomes spade::Error "COMMAND: out of memory at
/// WHERE: MESSAGE", WHERE being *where at the time of the failure (what was being run: shape, batch,
/// device; " at WHERE" left out while it is empty) and MESSAGE the allocator's (allocation_failure).
/// Other exceptions pass through unchanged.
std::function<int()> reporting_allocation_failures(std::string command, std::shared_ptr<const std::string> where,
                                                   std::function<int()> action);

}  // namespace spade::apps
