#pragma once
// Streams generated text while watching for stop strings: text that could be
// the start of a stop string is held back until it is decided, and a stop
// string (with anything after it) is never released.
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::host {

class StopStringFilter {
public:
  explicit StopStringFilter(std::vector<std::string> stop_strings);

  struct Result {
    std::string released; // text safe to show now (may be empty)
    bool stopped = false; // a stop string completed; nothing more is released
  };
  // Adds the next piece of text (complete UTF-8).
  Result push(std::string_view piece);
  // At the end of generation: whatever is still held back (it is not a stop
  // string, since none completed).
  std::string finish();

private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop
  // string.
  size_t undecided_suffix() const;

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

} // namespace bonsai::host
