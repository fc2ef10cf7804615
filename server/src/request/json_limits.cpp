#include "request/json_limits.hpp"

#include <vector>

#include <fmt/format.h>

#include "base/api_error.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// The containers open at the current point of the parse.
template <class Json> class LimitChecker {
public:
  explicit LimitChecker(const JsonLimits &limits) : limits_(limits) {}

  bool operator()(int, typename Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      count_array_item();
      if (open_.size() >= static_cast<size_t>(limits_.max_depth))
        throw bad_request(fmt::format("The request body nests arrays and objects deeper than {} "
                                      "levels",
                                      limits_.max_depth));
      open_.push_back({event == json::parse_event_t::array_start, 0});
      break;
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      open_.pop_back();
      break;
    case json::parse_event_t::key:
      check_string(parsed);
      if (!open_.empty() && ++open_.back().items > limits_.max_object_fields)
        throw bad_request(fmt::format("An object in the request body has more than {} fields",
                                      limits_.max_object_fields));
      break;
    case json::parse_event_t::value:
      count_array_item();
      check_string(parsed);
      break;
    }
    return true;
  }

private:
  struct Container {
    bool array;
    size_t items;
  };

  void count_array_item() {
    if (!open_.empty() && open_.back().array && ++open_.back().items > limits_.max_array_items)
      throw bad_request(fmt::format("An array in the request body holds more than {} items",
                                    limits_.max_array_items));
  }
  void check_string(const Json &value) const {
    if (value.is_string() &&
        value.template get_ref<const std::string &>().size() > limits_.max_string_bytes)
      throw bad_request(fmt::format("A string in the request body is longer than {} bytes",
                                    limits_.max_string_bytes));
  }

  const JsonLimits &limits_;
  std::vector<Container> open_;
};

template <class Json> Json parse_within(std::string_view text, const JsonLimits &limits) {
  LimitChecker<Json> checker(limits);
  try {
    return Json::parse(text, std::ref(checker));
  } catch (const json::exception &error) {
    // parse_error, and out_of_range for a number past double's range.
    throw bad_request(fmt::format("The request body is not valid JSON: {}", error.what()));
  }
}

} // namespace

json parse_json_within(std::string_view text, const JsonLimits &limits) {
  return parse_within<json>(text, limits);
}

nlohmann::ordered_json parse_ordered_json_within(std::string_view text, const JsonLimits &limits) {
  return parse_within<nlohmann::ordered_json>(text, limits);
}

} // namespace bonsai::server
