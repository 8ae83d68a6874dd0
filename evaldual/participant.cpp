#include "evaldual/participant.h"

#include "common/error.h"
#include "common/strings.h"

namespace spade::evaldual {

std::string Participant::id() const {
  if (harness.empty() && effort.empty() && provider.empty()) return model;
  if (effort.empty() && provider.empty()) return model + "#" + harness;
  return model + "#" + harness + "#" + effort + "#" + provider;
}

Participant Participant::parse(const std::string& text) {
  std::vector<std::string> f = split(text, '#');
  if (f.size() > 4) {
    throw Error("participant '" + text + "': more than four '#'-separated fields; expected " +
                "model#harness#effort#provider");
  }
  for (const std::string& s : f) {
    if (trim(s) != s) {
      throw Error("participant '" + text + "': field '" + s + "' has surrounding whitespace; remove it");
    }
  }
  if (f.empty() || f[0].empty()) {
    throw Error("participant '" + text + "': the model field is empty; expected model#harness#effort#provider");
  }
  Participant p;
  p.model = f[0];
  if (f.size() > 1) p.harness = f[1];
  if (f.size() > 2) p.effort = f[2];
  if (f.size() > 3) p.provider = f[3];
  return p;
}

std::string canonical_participant_id(const std::string& text) { return Participant::parse(text).id(); }

}  // namespace spade::evaldual
