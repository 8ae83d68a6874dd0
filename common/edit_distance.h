// "Did you mean ...?" for every name the user types: commands, options, config keys, interactive
// commands. One distance and one threshold, so every suggestion in spade behaves the same.
// Pure functions of their arguments; thread-safe; torch-free.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spade {

/// The optimal string alignment distance between `a` and `b` (the restricted Damerau-Levenshtein
/// distance): the fewest single-byte insertions, deletions, substitutions and swaps of two adjacent
/// bytes that turn `a` into `b`, no substring being edited more than once ("ca" -> "abc" is 3, not
/// the 2 of unrestricted Damerau-Levenshtein). Byte-wise and case-sensitive. A swap counts 1, so
/// "trian" -> "train" is 1 where Levenshtein says 2: swapped letters are the commonest typo.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate the user most likely meant by `typed`, or nullopt when none is close:
///   - a candidate equal to `typed` ignoring ASCII case wins outright ("TRAIN" -> "train");
///   - else the candidate of smallest edit_distance, if that distance is at most
///     max(typed.size(), 3) / 3 (rustc's find_best_match_for_name threshold: 1 for up to 5
///     bytes, 2 for 6-8, 4 for 12-14); ties go to the earlier candidate.
/// A candidate equal to `typed` is returned as itself.
std::optional<std::string> closest_match(std::string_view typed, const std::vector<std::string>& candidates);

/// "; did you mean 'X'?" with X = closest_match(typed, candidates) (quoted as given), or "" when
/// nothing is close: to append to an "unknown ..." message.
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace spade
