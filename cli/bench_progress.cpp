#include "bench_progress.hpp"

#include <unistd.h>

namespace bonsai::cli {
namespace {

constexpr const char *kEraseLine = "\r\x1b[K";

std::string threads_phrase(int threads) {
  if (threads <= 0)
    return "automatic threads";
  return std::to_string(threads) + (threads > 1 ? " threads" : " thread");
}

} // namespace

BenchProgress::BenchProgress(int total, bool enabled)
    : total_(total), enabled_(enabled), terminal_(isatty(STDERR_FILENO) == 1) {}

BenchProgress::~BenchProgress() {
  clear();
}

void BenchProgress::show(const std::string &line) {
  if (!enabled_)
    return;
  clear();
  std::fprintf(stderr, terminal_ ? "%s" : "%s\n", line.c_str());
  std::fflush(stderr);
  shown_ = terminal_;
}

void BenchProgress::start_test(const std::string &test, int threads) {
  ++started_;
  show("bonsai bench: test " + std::to_string(started_) + " of " + std::to_string(total_) + ": " +
       test + ", " + threads_phrase(threads));
}

void BenchProgress::doing(const std::string &what, int threads) {
  show("bonsai bench: " + what + ", " + threads_phrase(threads));
}

void BenchProgress::clear() {
  if (!shown_)
    return;
  std::fputs(kEraseLine, stderr);
  std::fflush(stderr);
  shown_ = false;
}

} // namespace bonsai::cli
