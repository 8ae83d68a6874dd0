#include "envsandbox/repair.h"

namespace spade::envsandbox {

std::string repair_fstring_braces(EnvServer& server, const std::string& source) {
  std::unique_ptr<EnvInstance> instance = server.spawn();
  CallResult r = instance->repair(source);
  if (!r.ok() || !r.value.is_str() || r.value.cut()) return source;
  return r.value.as_str();
}

}  // namespace spade::envsandbox
