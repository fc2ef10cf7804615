#pragma once
// What `bonsai bench` is measuring, on stderr, so a long run shows it is
// alive while stdout carries the report alone. On a terminal one line is
// redrawn in place and erased before each row is printed (the table stays
// whole on screen); elsewhere (a log file) each test gets one line.
#include <cstdio>
#include <string>

namespace bonsai::cli {

class BenchProgress {
public:
  // `total` tests will run; `enabled` false (--no-progress) prints nothing.
  BenchProgress(int total, bool enabled);
  ~BenchProgress(); // erases a line left on a terminal (an error follows)
  BenchProgress(const BenchProgress &) = delete;
  BenchProgress &operator=(const BenchProgress &) = delete;

  // The next test begins: "bonsai bench: test 2 of 4: tg128, 2 threads".
  void start_test(const std::string &test, int threads);
  // Untimed preparation that takes a while (the bandwidth measurement).
  void doing(const std::string &what, int threads);
  // The current line is done with; call before printing on stdout.
  void clear();

private:
  void show(const std::string &line);
  int total_;
  int started_ = 0;
  bool enabled_;
  bool terminal_;
  bool shown_ = false; // a line is on the terminal
};

} // namespace bonsai::cli
