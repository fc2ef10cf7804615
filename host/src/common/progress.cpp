#include "bonsai/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace bonsai {
namespace {
constexpr int kBarWidth = 30;
}

ProgressBar::ProgressBar(std::string label) : ProgressBar(std::move(label), isatty(2) == 1) {}

ProgressBar::ProgressBar(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled) {}

ProgressBar::~ProgressBar() {
  std::lock_guard lock(mutex_);
  if (enabled_ && shown_percent_ >= 0 && !finished_)
    std::fputc('\n', stderr);
}

void ProgressBar::update(double fraction) {
  if (!enabled_)
    return;
  std::lock_guard lock(mutex_);
  if (finished_)
    return;
  if (!(fraction >= 0.0)) // also catches NaN
    fraction = 0.0;
  fraction = std::min(fraction, 1.0);
  const int percent = static_cast<int>(std::floor(fraction * 100.0));
  if (percent == shown_percent_)
    return;
  shown_percent_ = percent;
  const int filled = percent * kBarWidth / 100;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  // \r redraws in place; \033[K clears what a longer previous line left.
  std::fprintf(stderr, "\r%s [%s] %3d%%\033[K", label_.c_str(), bar.c_str(), percent);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_)
    return;
  update(1.0);
  std::lock_guard lock(mutex_);
  if (!finished_) {
    finished_ = true;
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
}

} // namespace bonsai
