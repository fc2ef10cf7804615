#pragma once
// A one-line progress bar on stderr for terminals. When stderr is not a
// terminal it draws nothing, so logs and pipes stay clean.
#include <mutex>
#include <string>

#include "bonsai/export.hpp"

namespace bonsai {

class BONSAI_HOST_API ProgressBar {
public:
  // `label` is printed before the bar. `enabled`: draw at all; the default
  // constructor argument asks whether stderr is a terminal.
  explicit ProgressBar(std::string label);
  ProgressBar(std::string label, bool enabled);
  ProgressBar(const ProgressBar &) = delete;
  ProgressBar &operator=(const ProgressBar &) = delete;
  // Ends the line if the bar was drawn and not finished.
  ~ProgressBar();

  // Redraws the bar at `fraction` (clamped to [0, 1]); redraws only when the
  // shown percentage changes. Thread-safe.
  void update(double fraction);
  // Draws 100% and ends the line (once).
  void finish();
  bool enabled() const { return enabled_; }

private:
  std::mutex mutex_;
  std::string label_;
  bool enabled_ = false;
  bool finished_ = false;
  int shown_percent_ = -1;
};

} // namespace bonsai
