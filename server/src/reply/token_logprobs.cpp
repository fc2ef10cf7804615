#include "reply/token_logprobs.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

json byte_list(const std::string &text) {
  json list = json::array();
  for (const unsigned char c : text)
    list.push_back(c);
  return list;
}

} // namespace

json token_logprob_list(const std::vector<StepLogprobs> &entries) {
  json content = json::array();
  for (const StepLogprobs &e : entries) {
    json top = json::array();
    for (const TokenLogprob &alt : e.top)
      top.push_back(
          {{"token", alt.bytes}, {"logprob", alt.logprob}, {"bytes", byte_list(alt.bytes)}});
    content.push_back({{"token", e.chosen.bytes},
                       {"logprob", e.chosen.logprob},
                       {"bytes", byte_list(e.chosen.bytes)},
                       {"top_logprobs", std::move(top)}});
  }
  return content;
}

} // namespace bonsai::server
