#pragma once
// Text from a file (a model's name, a vocabulary entry) made safe to print:
// a terminal must not act on its control characters, and a report's layout
// must not break at its line breaks.
#include <string>
#include <string_view>

namespace bonsai {

// `text` with \n, \r and \t written as such, other control characters and
// bytes that are not UTF-8 as \xNN, and whole UTF-8 characters kept;
// with `escape_quotes`, " and \ also get a backslash (for a quoted value).
std::string printable(std::string_view text, bool escape_quotes = false);

} // namespace bonsai
