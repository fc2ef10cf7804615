#pragma once
// Token id lists on the command line: "1,2,3" (spaces allowed after commas).
#include <cstdint>
#include <string>
#include <vector>

namespace bonsai::cli {

// Throws UsageError naming `flag` and the bad item.
std::vector<int32_t> parse_token_list(const std::string &text, const std::string &flag);
// "1,2,3".
std::string join_token_list(const std::vector<int32_t> &ids);

} // namespace bonsai::cli
