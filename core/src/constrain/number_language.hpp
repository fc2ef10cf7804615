#pragma once
// Bounded and stepped numbers as regular languages of their JSON text:
// exact decimal comparisons digit by digit, and divisibility by a step
// (integer or decimal, such as 5, 0.5 or 0.01) by remainders.
//
// The texts written: integers up to 2^53 - 1 in magnitude, so that every
// one is exact in a double; other numbers with at most 15 significant digits
// and no exponent, so that comparing the text with a bound decimally gives
// the answer a validator comparing doubles gives. No "-0".
#include <string>
#include <string_view>
#include <vector>

#include "nfa_build.hpp"

namespace bonsai::constrain {

// An exact decimal: digits before the point (no leading zeros; "0" for
// none) and after it (no trailing zeros). Zero is not negative.
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;
  bool operator==(const Decimal &) const = default;
};

// A JSON number's text (as a JSON library writes it: "-12", "0.5",
// "1e-05", "3.4028234663852886e+38") as a Decimal. Throws
// std::invalid_argument when it is not one.
Decimal parse_decimal(std::string_view text);
int compare(const Decimal &a, const Decimal &b); // -1, 0, 1
std::string to_string(const Decimal &d);

struct Bound {
  Decimal value;
  bool strict = false; // exclusive
};

struct NumberSpec {
  bool integer = false;
  std::vector<Bound> lower, upper; // every one applies
  std::vector<Decimal> steps;      // multipleOf values, each positive
};

// The texts of the numbers `spec` allows. Throws std::invalid_argument
// naming the problem (no number fits, a step too fine for the budget).
Nfa number_language(const NumberSpec &spec, const StateBudget &budget);

// The largest magnitude written (integers, other numbers), for messages.
std::string largest_integer();
std::string largest_number();

} // namespace bonsai::constrain
