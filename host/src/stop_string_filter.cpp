#include "stop_string_filter.hpp"

#include <algorithm>

namespace bonsai::host {

StopStringFilter::StopStringFilter(std::vector<std::string> stop_strings)
    : stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string &stop) { return stop.empty(); });
}

size_t StopStringFilter::undecided_suffix() const {
  size_t longest = 0;
  const std::string_view held(held_);
  for (const auto &stop : stops_) {
    for (size_t k = std::min(stop.size() - 1, held.size()); k > longest; --k)
      if (held.ends_with(std::string_view(stop).substr(0, k))) {
        longest = k;
        break;
      }
  }
  return longest;
}

StopStringFilter::Result StopStringFilter::push(std::string_view piece) {
  Result result;
  if (stopped_)
    return {{}, true};
  held_.append(piece);
  // Every occurrence starts inside held_: text is released only when no
  // suffix of it could begin a stop string.
  size_t first_stop = std::string::npos;
  for (const auto &stop : stops_)
    first_stop = std::min(first_stop, held_.find(stop));
  if (first_stop != std::string::npos) {
    result.released = held_.substr(0, first_stop);
    result.stopped = true;
    stopped_ = true;
    held_.clear();
    return result;
  }
  const size_t keep = undecided_suffix();
  result.released = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopStringFilter::finish() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? std::string() : rest;
}

} // namespace bonsai::host
