#pragma once
// Ctrl-C (SIGINT) handling for generation. While a reply is being generated
// ("armed"), the first Ctrl-C asks the session to stop at its next step and
// the program carries on (prints stats, or returns to the chat prompt); a
// second Ctrl-C, or one while nothing is being generated, exits at once with
// status 130.
//
// The signal handler only does async-signal-safe things (atomics, write(),
// _exit()): it wakes a watcher thread through a pipe, and that thread calls
// Session::cancel().
#include <atomic>
#include <thread>

#include "bonsai/engine.hpp"

namespace bonsai::cli {

class InterruptHandler {
public:
  // Installs the SIGINT handler for the lifetime of this object (one at a
  // time). `session` must outlive it.
  explicit InterruptHandler(Session &session);
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler &) = delete;
  InterruptHandler &operator=(const InterruptHandler &) = delete;

  // Between arm() and disarm() a Ctrl-C cancels the session.
  void arm();
  void disarm();
  // Whether a Ctrl-C arrived since the last arm().
  bool interrupted() const;

private:
  void watch();
  Session &session_;
  int wake_read_fd_ = -1;
  std::thread watcher_;
};

} // namespace bonsai::cli
