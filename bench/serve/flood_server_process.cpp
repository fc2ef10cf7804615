#include "flood_server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace flood {
namespace {

using Clock = std::chrono::steady_clock;

// A "Name:   1234 kB" line of /proc/PID/status, in bytes.
std::optional<long> status_field(pid_t pid, const std::string &name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0)
      return std::atol(line.c_str() + name.size() + 1) * 1024;
  return std::nullopt;
}

// In the child: never returns.
[[noreturn]] void exec_child(const std::vector<char *> &argv, int log_fd) {
  // The server must not outlive a tool that crashes or is interrupted.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  execvp(argv[0], argv.data());
  dprintf(STDERR_FILENO, "bonsai-serve-flood: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

} // namespace

ServerProcess::ServerProcess(const std::vector<std::string> &argv, const std::string &log_path) {
  std::vector<char *> raw;
  for (const std::string &arg : argv)
    raw.push_back(const_cast<char *>(arg.c_str()));
  raw.push_back(nullptr);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0)
    throw std::runtime_error("cannot open " + log_path + ": " + strerror(errno));
  pid_ = fork();
  if (pid_ == 0)
    exec_child(raw, log_fd);
  close(log_fd);
  if (pid_ < 0)
    throw std::runtime_error(std::string("fork failed: ") + strerror(errno));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

bool ServerProcess::running() {
  if (reaped_)
    return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_)
    reaped_ = true;
  return !reaped_;
}

std::optional<long> ServerProcess::rss_bytes() const {
  return reaped_ ? std::nullopt : status_field(pid_, "VmRSS");
}

std::optional<long> ServerProcess::peak_rss_bytes() const {
  return reaped_ ? std::nullopt : status_field(pid_, "VmHWM");
}

bool ServerProcess::reset_peak_rss() const {
  const int fd = open(("/proc/" + std::to_string(pid_) + "/clear_refs").c_str(), O_WRONLY);
  if (fd < 0)
    return false;
  const bool done = write(fd, "5", 1) == 1;
  close(fd);
  return done;
}

double ServerProcess::cpu_seconds() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')'); // the command name may hold spaces
  if (name_end == std::string::npos)
    return 0;
  std::istringstream fields(text.substr(name_end + 2));
  std::string field;
  double ticks = 0;
  // Fields 3.. of proc(5): utime and stime are fields 14 and 15.
  for (int index = 3; index <= 15 && fields >> field; ++index)
    if (index >= 14)
      ticks += std::atof(field.c_str());
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<double> ServerProcess::terminate(double limit_s) {
  if (!running())
    return std::nullopt; // it ended before the signal: nothing to time
  const auto start = Clock::now();
  kill(pid_, SIGTERM);
  for (;;) {
    // Polled every millisecond: exact enough against a bound of seconds,
    // and no thread or signal handler needed.
    if (!running())
      return std::chrono::duration<double>(Clock::now() - start).count();
    if (Clock::now() - start > std::chrono::duration<double>(limit_s)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr *>(&address), size) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size) == 0)
    port = ntohs(address.sin_port);
  close(fd);
  if (port == 0)
    throw std::runtime_error("no free TCP port on 127.0.0.1");
  return port;
}

std::string program_next_to_self(const std::string &name) {
  char self[4096];
  const ssize_t size = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (size <= 0)
    return name;
  std::string path(self, static_cast<size_t>(size));
  path = path.substr(0, path.rfind('/') + 1) + name;
  return access(path.c_str(), X_OK) == 0 ? path : name;
}

std::string shell_line(const std::vector<std::string> &argv) {
  std::string line;
  for (const std::string &arg : argv) {
    if (!line.empty())
      line += ' ';
    const bool plain =
        !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_./:=,+-@%") == std::string::npos;
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (const char c : arg)
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

} // namespace flood
