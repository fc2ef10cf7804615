#pragma once
// Runs a program as a child process for the CLI tests: through pipes (stdout
// and stderr captured separately) or through a pseudo-terminal (as a person
// at a terminal would drive it). Every wait has a deadline so a hung child
// fails the test instead of hanging it.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bonsai::test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct ProcessResult {
  int exit_code = -1;  // valid when the child exited normally
  int term_signal = 0; // the signal that killed it, 0 if it exited
  bool timed_out = false;
  std::string out; // everything written to stdout
  std::string err; // everything written to stderr
};

struct ProcessSpec {
  std::vector<std::string> args; // args[0] is the program path
  std::string stdin_data;        // written to the child's stdin, then closed
  milliseconds timeout{120000};
};

// A child connected through three pipes. The destructor kills and reaps a
// child that is still running.
class PipedChild {
public:
  explicit PipedChild(const ProcessSpec &spec);
  ~PipedChild();
  PipedChild(const PipedChild &) = delete;
  PipedChild &operator=(const PipedChild &) = delete;

  // Reads output until `ready(out, err)` holds; false when the deadline
  // passes or the child closes both pipes first.
  bool read_until(const std::function<bool(const std::string &, const std::string &)> &ready,
                  milliseconds timeout);
  void send_signal(int signal);
  // Reads to end of output and reaps the child; kills it after `timeout`.
  ProcessResult finish(milliseconds timeout);

private:
  bool pump(Clock::time_point deadline, bool until_eof);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  ProcessResult result_;
};

// Runs a child to completion.
ProcessResult run_process(const ProcessSpec &spec);

// A child whose stdin, stdout and stderr are one pseudo-terminal.
class PtyChild {
public:
  explicit PtyChild(const std::vector<std::string> &args);
  ~PtyChild();
  PtyChild(const PtyChild &) = delete;
  PtyChild &operator=(const PtyChild &) = delete;

  void type(const std::string &text); // as typed at the keyboard
  // Reads until the screen text ends with `suffix` and nothing more arrives
  // for `quiet` (the program is then waiting for input). Returns the text
  // read by this call; throws std::runtime_error on timeout or EOF.
  std::string read_until_idle_suffix(const std::string &suffix, milliseconds timeout,
                                     milliseconds quiet = milliseconds(300));
  // Reads until at least `bytes` have arrived since the last returned
  // text (kept for the next read). False on timeout or EOF.
  bool wait_for_output(size_t bytes, milliseconds timeout);
  // Reads to end of output and reaps the child; kills it after `timeout`.
  ProcessResult finish(milliseconds timeout);

private:
  pid_t pid_ = -1;
  int master_fd_ = -1;
  std::string pending_; // read but not yet returned
};

} // namespace bonsai::test
