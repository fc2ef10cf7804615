// Comparators written as anchored patterns over the number's text, the
// remainder automaton of a step, and their intersection.
#include "number_language.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "regex_parser.hpp"

namespace bonsai::constrain {
namespace {

constexpr size_t kMaxFractionDigits = 15;
const char *const kSafeInteger = "9007199254740991";  // 2^53 - 1
const char *const kLargestNumber = "999999999999999"; // 15 digits

const std::string kFracAny = R"((?:\.\d+)?)";
const std::string kUnsigned = R"((?:0|[1-9]\d*)(?:\.\d+)?)";

std::string digits_from(char lo, char hi) {
  if (lo == hi)
    return std::string(1, lo);
  return fmt::format("[{}-{}]", lo, hi);
}

std::string digit_run(size_t n) {
  return n == 0 ? "" : fmt::format(R"(\d{{{}}})", n);
}

Decimal canonical(Decimal d) {
  const size_t first = d.int_digits.find_first_not_of('0');
  d.int_digits = first == std::string::npos ? "0" : d.int_digits.substr(first);
  const size_t last = d.frac_digits.find_last_not_of('0');
  d.frac_digits = last == std::string::npos ? "" : d.frac_digits.substr(0, last + 1);
  if (d.int_digits == "0" && d.frac_digits.empty())
    d.negative = false;
  return d;
}

// |d| with its last kept fraction digit raised by one (carries included).
Decimal bump_magnitude(Decimal d, size_t frac) {
  d.frac_digits.resize(frac, '0');
  std::string all = d.int_digits + d.frac_digits;
  size_t i = all.size();
  while (i > 0 && all[i - 1] == '9')
    all[--i] = '0';
  if (i == 0)
    all.insert(all.begin(), '1');
  else
    ++all[i - 1];
  d.int_digits = all.substr(0, all.size() - frac);
  d.frac_digits = all.substr(all.size() - frac);
  return canonical(d);
}

// The nearest decimal with at most `frac` fraction digits toward +inf
// (`up`) or -inf.
Decimal round_fraction(const Decimal &d, size_t frac, bool up) {
  if (d.frac_digits.size() <= frac)
    return d;
  Decimal truncated = d;
  truncated.frac_digits.resize(frac);
  truncated = canonical(truncated);
  // Truncating moves a positive value down and a negative one up.
  if (up != d.negative)
    return bump_magnitude(d, frac);
  return truncated;
}

Decimal magnitude(Decimal d) {
  d.negative = false;
  return d;
}

// Fractions (the text from '.' on, or nothing) at least (`strict`: above)
// 0.`f`.
std::string fraction_at_least(const std::string &f, bool strict) {
  if (f.empty())
    return strict ? R"(\.\d*[1-9]\d*)" : kFracAny;
  std::string level = strict ? R"(\d*[1-9]\d*)" : R"(\d*)";
  for (size_t k = f.size(); k-- > 0;) {
    std::string options;
    if (f[k] < '9')
      options = digits_from(static_cast<char>(f[k] + 1), '9') + R"(\d*|)";
    level = "(?:" + options + f[k] + level + ")";
  }
  return R"(\.)" + level;
}

// Fractions at most (below) 0.`f`; nullopt when none.
std::optional<std::string> fraction_at_most(const std::string &f, bool strict) {
  if (f.empty())
    return strict ? std::nullopt : std::optional<std::string>(R"((?:\.0+)?)");
  // tail: what may follow the first k digits of f, read exactly.
  std::string tail = strict ? "" : "0*";
  bool tail_exists = !strict;
  for (size_t k = f.size(); k-- > 0;) {
    std::vector<std::string> options;
    if (f[k] > '0')
      options.push_back(digits_from('0', static_cast<char>(f[k] - 1)) + R"(\d*)");
    if (tail_exists)
      options.push_back(std::string(1, f[k]) + tail);
    std::string level = "(?:";
    for (size_t i = 0; i < options.size(); ++i)
      level += (i ? "|" : "") + options[i];
    level += ")";
    // Before this digit the fraction may also end: a proper prefix of f is
    // smaller (f ends in a non-zero digit).
    tail = k > 0 ? "(?:" + level + ")?" : level;
    tail_exists = true;
  }
  return R"((?:\.)" + tail + ")?";
}

// Unsigned texts whose value is at least (above) `a` (non-negative).
std::string unsigned_at_least(const Decimal &a, bool strict) {
  const std::string &d = a.int_digits;
  const size_t n = d.size();
  std::vector<std::string> alts;
  alts.push_back(fmt::format(R"([1-9]\d{{{},}})", n) + kFracAny);
  for (size_t i = 0; i < n; ++i)
    if (d[i] < '9')
      alts.push_back(d.substr(0, i) + digits_from(static_cast<char>(d[i] + 1), '9') +
                     digit_run(n - i - 1) + kFracAny);
  alts.push_back(d + fraction_at_least(a.frac_digits, strict));
  std::string out = "(?:";
  for (size_t i = 0; i < alts.size(); ++i)
    out += (i ? "|" : "") + alts[i];
  return out + ")";
}

// Unsigned texts whose value is at most (below) `b` (non-negative);
// nullopt when none.
std::optional<std::string> unsigned_at_most(const Decimal &b, bool strict) {
  const std::string &d = b.int_digits;
  const size_t n = d.size();
  std::vector<std::string> alts;
  if (n >= 2)
    alts.push_back(fmt::format(R"((?:0|[1-9]\d{{0,{}}}))", n - 2) + kFracAny);
  for (size_t i = 0; i < n; ++i) {
    const char lo = i == 0 && n > 1 ? '1' : '0';
    if (d[i] - 1 >= lo)
      alts.push_back(d.substr(0, i) + digits_from(lo, static_cast<char>(d[i] - 1)) +
                     digit_run(n - i - 1) + kFracAny);
  }
  if (const auto frac = fraction_at_most(b.frac_digits, strict))
    alts.push_back(d + *frac);
  if (alts.empty())
    return std::nullopt;
  std::string out = "(?:";
  for (size_t i = 0; i < alts.size(); ++i)
    out += (i ? "|" : "") + alts[i];
  return out + ")";
}

// Signed texts at least (above) `a`.
std::string at_least(const Decimal &a, bool strict) {
  if (!a.negative)
    return fmt::format("^{}$", unsigned_at_least(a, strict));
  // Negative texts down to |a|; every non-negative one.
  return fmt::format("^(?:{}|-{})$", kUnsigned, unsigned_at_most(magnitude(a), strict).value());
}

// Signed texts at most (below) `b`.
std::string at_most(const Decimal &b, bool strict) {
  if (b.negative)
    return fmt::format("^-{}$", unsigned_at_least(magnitude(b), strict));
  const auto non_negative = unsigned_at_most(b, strict);
  return fmt::format("^(?:-{}{}{})$", kUnsigned, non_negative ? "|" : "",
                     non_negative.value_or(""));
}

// Integers up to 2^53 - 1 or 15-digit decimals, without "-0".
std::vector<std::string> syntax(bool integer) {
  std::vector<std::string> out;
  if (integer) {
    out.push_back(R"(^-?(?:0|[1-9]\d{0,15})$)");
  } else {
    std::string dec = R"(^-?(?:0(?:\.\d{1,15})?)";
    for (size_t i = 0; i < kMaxFractionDigits; ++i) {
      dec += "|[1-9]" + digit_run(i);
      const size_t frac = kMaxFractionDigits - 1 - i;
      if (frac > 0)
        dec += fmt::format(R"((?:\.\d{{1,{}}})?)", frac);
    }
    out.push_back(dec + ")$");
  }
  out.push_back(R"(^(?:[0-9.]*|-[0-9.]*[1-9][0-9.]*)$)");
  return out;
}

// Texts whose value is a multiple of `step` = p * 10^-k: read the digits
// as an integer mod p, with the fraction counted to k places (more places
// only zeros).
Nfa multiples_of(const Decimal &step, const StateBudget &budget) {
  const std::string digits = step.int_digits + step.frac_digits;
  const size_t k = step.frac_digits.size();
  uint64_t p = 0;
  for (const char c : digits) {
    p = p * 10 + static_cast<uint64_t>(c - '0');
    if (p > budget.max_states)
      throw std::invalid_argument(fmt::format("multipleOf {} needs more than {} automaton states",
                                              to_string(step), budget.max_states));
  }
  if ((k + 2) * p + 1 > budget.max_states)
    throw std::invalid_argument(fmt::format("multipleOf {} needs more than {} automaton states",
                                            to_string(step), budget.max_states));
  // Node 0: the start; then int(r) = 1 + r; frac(r, j) = 1 + p + j * p + r.
  Nfa out;
  out.nodes.resize(1 + p + (k + 1) * p);
  auto int_node = [&](uint64_t r) { return static_cast<int32_t>(1 + r); };
  auto frac_node = [&](uint64_t r, size_t j) { return static_cast<int32_t>(1 + p + j * p + r); };
  auto add = [&](int32_t from, uint32_t lo, uint32_t hi, int32_t to) {
    out.nodes[static_cast<size_t>(from)].moves.push_back({{{lo, hi}}, to});
  };
  // r * 10^e mod p
  auto scaled = [&](uint64_t r, size_t e) {
    for (size_t i = 0; i < e; ++i)
      r = r * 10 % p;
    return r;
  };
  add(0, '-', '-', int_node(0));
  for (uint32_t d = 0; d <= 9; ++d)
    add(0, '0' + d, '0' + d, int_node(d % p));
  for (uint64_t r = 0; r < p; ++r) {
    out.nodes[static_cast<size_t>(int_node(r))].accept = scaled(r, k) == 0;
    for (uint32_t d = 0; d <= 9; ++d)
      add(int_node(r), '0' + d, '0' + d, int_node((r * 10 + d) % p));
    add(int_node(r), '.', '.', frac_node(r, 0));
    for (size_t j = 0; j <= k; ++j) {
      out.nodes[static_cast<size_t>(frac_node(r, j))].accept = scaled(r, k - j) == 0;
      if (j < k) {
        for (uint32_t d = 0; d <= 9; ++d)
          add(frac_node(r, j), '0' + d, '0' + d, frac_node((r * 10 + d) % p, j + 1));
      } else {
        add(frac_node(r, j), '0', '0', frac_node(r, j));
      }
    }
  }
  return out;
}

// A deterministic, minimal automaton when that is no bigger; else `nfa`.
Nfa smaller(Nfa nfa, const StateBudget &budget) {
  auto dfa = try_determinize(nfa, budget.max_states, false);
  if (!dfa)
    return nfa;
  std::optional<Nfa> min = try_minimize(*dfa, budget.max_states * 256);
  return min && min->nodes.size() <= nfa.nodes.size() * 2 ? std::move(*min) : nfa;
}

} // namespace

Decimal parse_decimal(std::string_view text) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string digits;
  int64_t point = -1;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.');
       ++i) {
    if (text[i] == '.') {
      if (point >= 0)
        throw std::invalid_argument("not a number");
      point = static_cast<int64_t>(digits.size());
    } else {
      digits.push_back(text[i]);
    }
  }
  if (digits.empty())
    throw std::invalid_argument("not a number");
  if (point < 0)
    point = static_cast<int64_t>(digits.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool minus = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      minus = text[i++] == '-';
    int64_t e = 0;
    const size_t from = i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
      e = std::min<int64_t>(e * 10 + (text[i] - '0'), 100000);
    if (i == from || e > 1000)
      throw std::invalid_argument("not a number of a usable size");
    point += minus ? -e : e;
  }
  if (i != text.size())
    throw std::invalid_argument("not a number");
  if (point < 0) {
    digits.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (point > static_cast<int64_t>(digits.size()))
    digits.append(static_cast<size_t>(point) - digits.size(), '0');
  d.int_digits = digits.substr(0, static_cast<size_t>(point));
  d.frac_digits = digits.substr(static_cast<size_t>(point));
  return canonical(d);
}

int compare(const Decimal &a, const Decimal &b) {
  if (a.negative != b.negative)
    return a.negative ? -1 : 1;
  const int sign = a.negative ? -1 : 1;
  if (a.int_digits.size() != b.int_digits.size())
    return a.int_digits.size() < b.int_digits.size() ? -sign : sign;
  if (const int c = a.int_digits.compare(b.int_digits); c != 0)
    return c < 0 ? -sign : sign;
  if (const int c = a.frac_digits.compare(b.frac_digits); c != 0)
    return c < 0 ? -sign : sign; // no trailing zeros: string order is value order
  return 0;
}

std::string to_string(const Decimal &d) {
  return (d.negative ? "-" : "") + d.int_digits +
         (d.frac_digits.empty() ? "" : "." + d.frac_digits);
}

std::string largest_integer() {
  return kSafeInteger;
}

std::string largest_number() {
  return kLargestNumber;
}

Nfa number_language(const NumberSpec &spec, const StateBudget &budget) {
  const Decimal largest = parse_decimal(spec.integer ? kSafeInteger : kLargestNumber);
  Decimal smallest = largest;
  smallest.negative = true;
  std::vector<std::string> patterns = syntax(spec.integer);
  for (const Bound &raw : spec.lower) {
    // Texts have at most 15 fraction digits: a finer bound rounds inward.
    Bound b = raw;
    if (b.value.frac_digits.size() > kMaxFractionDigits) {
      b.value = round_fraction(b.value, kMaxFractionDigits, true);
      b.strict = false;
    }
    if (compare(b.value, smallest) < 0)
      continue; // below every text written
    if (compare(b.value, largest) > 0 || (b.strict && compare(b.value, largest) == 0))
      throw std::invalid_argument(fmt::format(
          "the lower bound {} is above the largest {} written ({})", to_string(raw.value),
          spec.integer ? "integer" : "number", to_string(largest)));
    patterns.push_back(at_least(b.value, b.strict));
  }
  for (const Bound &raw : spec.upper) {
    Bound b = raw;
    if (b.value.frac_digits.size() > kMaxFractionDigits) {
      b.value = round_fraction(b.value, kMaxFractionDigits, false);
      b.strict = false;
    }
    if (compare(b.value, largest) > 0)
      continue;
    if (compare(b.value, smallest) < 0 || (b.strict && compare(b.value, smallest) == 0))
      throw std::invalid_argument(fmt::format(
          "the upper bound {} is below the smallest {} written (-{})", to_string(raw.value),
          spec.integer ? "integer" : "number", to_string(largest)));
    patterns.push_back(at_most(b.value, b.strict));
  }
  if (spec.integer) {
    patterns.push_back(at_least(smallest, false));
    patterns.push_back(at_most(largest, false));
  }
  std::optional<Nfa> all;
  auto add = [&](Nfa part) {
    part = smaller(std::move(part), budget);
    all = all ? smaller(intersect(*all, part, budget), budget) : std::move(part);
  };
  for (const std::string &p : patterns)
    add(compile_language(parse_pattern(p).ast, budget));
  for (const Decimal &step : spec.steps)
    add(multiples_of(step, budget));
  if (all->empty())
    throw std::invalid_argument("no number written within the digit limits meets the bounds and "
                                "multipleOf");
  return std::move(*all);
}

} // namespace bonsai::constrain
