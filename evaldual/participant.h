// SWE-Duel participant identity: (model, harness, reasoning effort, provider), reference §1.
//
// The serialised form keys pools, caches, seats and ratings: "model#harness" when effort and provider
// are empty, else "model#harness#effort#provider" (empty fields kept, e.g. "m#mini-swe-agent##openrouter").
// A bare "model" (harness, effort and provider all empty) serialises as just "model", so that match lists
// from elsewhere (plain model names) can be rated and keep their names.
//
// Thread-safety: Participant is a plain value type; the functions are pure and thread-safe.
#pragma once
#include <string>

namespace spade::evaldual {

/// One participant of a duel tournament: a model run through a harness at an effort via a provider.
struct Participant {
  std::string model;     // model id or nickname, e.g. "gpt-5.5"; never empty, never contains '#'
  std::string harness;   // e.g. "mini-swe-agent", "codex"; may be empty
  std::string effort;    // reasoning effort, e.g. "high"; may be empty
  std::string provider;  // e.g. "openrouter"; may be empty

  /// The serialised identity (see the file comment). parse(p.id()) == p for every valid p.
  std::string id() const;

  /// Parses "model", "model#harness", "model#harness#effort" or "model#harness#effort#provider".
  /// Throws spade::Error naming the text when the model is empty, there are more than four fields,
  /// or a field has leading/trailing whitespace.
  static Participant parse(const std::string& text);

  bool operator==(const Participant& o) const {
    return model == o.model && harness == o.harness && effort == o.effort && provider == o.provider;
  }
  bool operator!=(const Participant& o) const { return !(*this == o); }
  /// Orders by id() (the tie-break order of rankings, reference §6 "ties by id").
  bool operator<(const Participant& o) const { return id() < o.id(); }
};

/// Canonical form of an identity string: Participant::parse(text).id(). Throws like parse().
std::string canonical_participant_id(const std::string& text);

}  // namespace spade::evaldual
