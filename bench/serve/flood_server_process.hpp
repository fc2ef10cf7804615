#pragma once
// The `bonsai serve` process under test: started by fork/exec so that its
// RSS can be read from /proc and its exit after SIGTERM timed with waitpid.
#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace flood {

class ServerProcess {
public:
  // Runs argv[0] (a path, or a name looked up in $PATH) with its output
  // written to `log_path`. Call before any thread starts. Throws
  // std::runtime_error when it cannot start.
  ServerProcess(const std::vector<std::string> &argv, const std::string &log_path);
  ~ServerProcess(); // a server still running is killed
  ServerProcess(const ServerProcess &) = delete;
  ServerProcess &operator=(const ServerProcess &) = delete;

  pid_t pid() const { return pid_; }
  bool running();                             // reaps the process once it has exited
  int exit_status() const { return status_; } // waitpid's status once it has exited

  // From /proc/PID/status, in bytes; nullopt once the process is gone.
  std::optional<long> rss_bytes() const;      // VmRSS
  std::optional<long> peak_rss_bytes() const; // VmHWM
  // Restarts VmHWM from the current RSS (clear_refs 5); false where refused.
  bool reset_peak_rss() const;
  double cpu_seconds() const; // user + system time so far, from /proc/PID/stat

  // Sends SIGTERM and waits up to `limit_s` for the exit; a process still
  // there then gets SIGKILL. Returns the seconds to the exit; nullopt when it
  // had to be killed or had exited before.
  std::optional<double> terminate(double limit_s);

private:
  pid_t pid_ = -1;
  std::atomic<bool> reaped_{false}; // the RSS sampler reads it on its own thread
  int status_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();
// `name` in the folder of this program when it exists there, else `name`.
std::string program_next_to_self(const std::string &name);
// argv as one shell command line, quoted where needed.
std::string shell_line(const std::vector<std::string> &argv);

} // namespace flood
