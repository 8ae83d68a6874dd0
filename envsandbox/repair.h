// f-string brace repair for designer outputs (reference §2, code extraction): up to 20 times,
// compile the program; on a SyntaxError, on the failing line rewrite each non-empty `{x}` whose content is not a
// valid Python expression as `{{x}}`; stop when it compiles or nothing changes.
//
// Thread-safety: may run concurrently on one EnvServer.
#pragma once
#include <string>

#include "envsandbox/sandbox.h"

namespace spade::envsandbox {

/// Runs the repair in a fresh sandboxed child (compiling untrusted source can be slow or crash the
/// compiler). Returns the repaired source, or `source` unchanged if the child fails (the validation
/// gates then report the real problem). Throws spade::Error only if no child can be spawned.
std::string repair_fstring_braces(EnvServer& server, const std::string& source);

}  // namespace spade::envsandbox
