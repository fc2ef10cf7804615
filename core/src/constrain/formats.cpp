// The format languages, written out as anchored patterns.
#include "formats.hpp"

#include <map>

namespace bonsai::constrain {
namespace {

// RFC 3339 full-date: each month with its length, 29 February only in leap
// years (divisible by 4, centuries only when divisible by 400).
#define BONSAI_DATE                                                                                \
  R"((?:\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30))"   \
  R"(|02-(?:0[1-9]|1\d|2[0-8]))|(?:\d\d(?:0[48]|[2468][048]|[13579][26]))"                         \
  R"(|(?:[02468][048]|[13579][26])00)-02-29))"
// RFC 3339 full-time: seconds and a zone always (no leap second).
#define BONSAI_TIME                                                                                \
  R"((?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))"
// RFC 3986 pieces.
#define BONSAI_LABEL R"([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)"
#define BONSAI_PCHAR R"((?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2}))"
#define BONSAI_QCHAR R"((?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2}))"
#define BONSAI_URI                                                                                 \
  R"([A-Za-z][A-Za-z0-9+.-]*://)" BONSAI_LABEL R"((?:\.)" BONSAI_LABEL R"()*(?::\d{1,5})?)"        \
  R"((?:/)" BONSAI_PCHAR R"(*)*(?:\?)" BONSAI_QCHAR R"(*)?(?:#)" BONSAI_QCHAR R"(*)?)"
#define BONSAI_H16 "[0-9a-f]{1,4}"

const std::map<std::string, StringFormat, std::less<>> &formats() {
  static const std::map<std::string, StringFormat, std::less<>> table = {
      {"date", {"^" BONSAI_DATE "$"}},
      {"time", {"^" BONSAI_TIME "$"}},
      {"date-time", {"^" BONSAI_DATE "T" BONSAI_TIME "$"}},
      // RFC 3339 appendix A: weeks alone, or date parts then time parts in
      // order, at least one of each group written.
      {"duration",
       {R"(^P(?:\d+W|(?:\d+Y(?:\d+M)?(?:\d+D)?|\d+M(?:\d+D)?|\d+D))"
        R"((?:T(?:\d+H(?:\d+M)?(?:\d+S)?|\d+M(?:\d+S)?|\d+S))?)"
        R"(|T(?:\d+H(?:\d+M)?(?:\d+S)?|\d+M(?:\d+S)?|\d+S))$)"}},
      // RFC 5321 dot-atom local part; a domain of labels whose last starts
      // with a letter.
      {"email",
       {R"(^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
        R"(@(?:)" BONSAI_LABEL R"(\.)+[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?$)"}},
      {"uuid", {"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}},
      // scheme://host[:port][/path][?query][#fragment]
      {"uri", {"^" BONSAI_URI "$"}},
      {"uri-reference", {"^" BONSAI_URI "$"}},
      // RFC 1123: labels of 1 to 63 characters, 253 in all.
      {"hostname",
       {R"(^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
        R"((?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$)",
        253}},
      {"ipv4",
       {R"(^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$)"}},
      // RFC 4291 text forms without an embedded IPv4 address: eight groups,
      // or fewer with one "::" standing for the rest.
      {"ipv6",
       {"^(?:(?:" BONSAI_H16 ":){7}" BONSAI_H16 "|(?:" BONSAI_H16 ":){1,7}:|(?:" BONSAI_H16
        ":){1,6}:" BONSAI_H16 "|(?:" BONSAI_H16 ":){1,5}(?::" BONSAI_H16 "){1,2}|(?:" BONSAI_H16
        ":){1,4}(?::" BONSAI_H16 "){1,3}|(?:" BONSAI_H16 ":){1,3}(?::" BONSAI_H16
        "){1,4}|(?:" BONSAI_H16 ":){1,2}(?::" BONSAI_H16 "){1,5}|" BONSAI_H16 ":(?::" BONSAI_H16
        "){1,6}|:(?:(?::" BONSAI_H16 "){1,7}|:))$"}},
      // OpenAPI's hints, which constrain nothing.
      {"password", {""}},
      {"binary", {""}},
  };
  return table;
}

} // namespace

std::optional<StringFormat> string_format(std::string_view name) {
  const auto it = formats().find(name);
  if (it == formats().end())
    return std::nullopt;
  return it->second;
}

const std::vector<std::string> &known_string_formats() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto &[name, f] : formats())
      out.push_back(name);
    return out;
  }();
  return names;
}

std::optional<NumberFormat> number_format(std::string_view name) {
  constexpr int64_t kSafe = (int64_t{1} << 53) - 1;
  if (name == "int32")
    return NumberFormat{true, true, INT32_MIN, INT32_MAX};
  if (name == "int64")
    return NumberFormat{true, true, -kSafe, kSafe};
  if (name == "float" || name == "double")
    return NumberFormat{};
  return std::nullopt;
}

} // namespace bonsai::constrain
