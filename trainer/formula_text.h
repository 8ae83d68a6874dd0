// Does an environment's first observation state its governing formula? SPADE App. I (Fig. 9) flags
// environments whose opening observation prints the rule the agent is meant to work out (e.g. a
// physics game that says "F = m * a" before asking for F); designer/formula_in_first_obs is the share
// of a generation's environments whose first observation does (trainer/generation_stats.h).
//
// The detector is lexical and deliberately simple. A text states a formula when some '=' that is not
// part of "==", "<=", ">=", "!=", "=>" or "=<" has
//   - on its left (spaces skipped) a variable: the end of a word [A-Za-z_][A-Za-z0-9_]* or a ')'
//     closing a call such as f(x);
//   - on its right, up to the end of the clause (a newline, ';', ',', '?', '!', or '.' followed by a
//     space or the end of the text; a '.' inside a number like 0.5 does not end it), both a word (a
//     variable or function name) and a binary arithmetic operator: + - * / ^ % or the Unicode signs
//     × ÷ · − (U+00D7, U+00F7, U+00B7, U+2212) after the clause's first character (so a sign of
//     "x = -5" is not counted).
// So "F = m * a", "E = m*c^2", "score = 10 - guesses" and "y = 2x + 1" state a formula; "x = 5",
// "target = ?", "a=1, b=2", "pos=3 -> 4" and "if a == b + c" do not. A puzzle that defines the function
// it asks about ("f(x) = x^2 - 18x + 82. Which x makes f(x) smallest?") counts too: its observation
// states its rule. Of the 66 seed and held-out games (data/), three are flagged: causal/ohm.py,
// causal/kinematics.py and optimization/parabola.py. Known misses: products written by
// juxtaposition only ("d = v t"), formulas in words ("distance is speed times time"), LaTeX without an
// '=' ("\frac{a}{b}"). Torch-free; pure, thread-safe.
#pragma once
#include <string>

namespace spade::trainer {

/// True when `text` states a formula by the rule above.
bool states_formula(const std::string& text);

}  // namespace spade::trainer
