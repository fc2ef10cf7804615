#include "errors_support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "bonsai/engine.hpp"

namespace bonsai::errors_test {

namespace fs = std::filesystem;

namespace {

constexpr uid_t kNobody = 65534;

// Drops root for good (group first, while still allowed to).
void become_nobody() {
  if (setgid(kNobody) != 0 || setuid(kNobody) != 0)
    _exit(99);
}

// Reads both pipes until they close or the deadline passes.
bool drain(int out_fd, int err_fd, std::string &out, std::string &err,
           std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string *sinks[2] = {&out, &err};
  int open_count = (out_fd >= 0 ? 1 : 0) + (err_fd >= 0 ? 1 : 0);
  while (open_count > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0)
      return false;
    if (poll(fds, 2, static_cast<int>(left)) < 0)
      continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  return true;
}

} // namespace

std::vector<uint8_t> read_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "bonsai-errors-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  root_ = pattern;
  chmod(root_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string TempDir::write(const std::string &name, const std::vector<uint8_t> &bytes) const {
  const std::string file = path(name);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + file);
  return file;
}

CliResult run_bonsai(const std::vector<std::string> &args, RunAs as) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<std::string> argv_text = {bonsai_program()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : argv_text)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (as == RunAs::nobody && geteuid() == 0)
      become_nobody();
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CliResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  if (!drain(out_pipe[0], err_pipe[0], r.out, r.err, deadline)) {
    r.timed_out = true;
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    r.term_signal = WTERMSIG(status);
  return r;
}

std::string as_unprivileged(const std::function<std::string()> &body) {
  if (geteuid() != 0)
    return body();
  int p[2];
  if (pipe(p) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(p[0]);
    become_nobody();
    const std::string text = body();
    const ssize_t written = write(p[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(p[1]);
  std::string text, ignored;
  drain(p[0], -1, text, ignored, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "unprivileged child failed";
  return text;
}

void expect_cli_error(const CliResult &r, int exit_code, const std::string &message) {
  EXPECT_FALSE(r.timed_out) << "bonsai hung";
  EXPECT_EQ(r.term_signal, 0) << "bonsai was killed by signal " << r.term_signal << "\n" << r.err;
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.out, "") << "stdout must stay empty on errors";
  EXPECT_EQ(r.err, "bonsai: error: " + message + "\n");
}

std::string with_path(std::string pattern, const std::string &path) {
  for (size_t at = pattern.find("MODEL"); at != std::string::npos;
       at = pattern.find("MODEL", at + path.size()))
    pattern.replace(at, 5, path);
  return pattern;
}

Thrown thrown_by(const std::function<void()> &call) {
  try {
    call();
  } catch (const ModelError &e) {
    return {"ModelError", e.what()};
  } catch (const PluginError &e) {
    return {"PluginError", e.what()};
  } catch (const FormatError &e) {
    return {"FormatError", e.what()};
  } catch (const InvalidArgument &e) {
    return {"InvalidArgument", e.what()};
  } catch (const ContextFullError &e) {
    return {"ContextFullError", e.what()};
  } catch (const CancelledError &e) {
    return {"CancelledError", e.what()};
  } catch (const Error &e) {
    return {"Error", e.what()};
  }
  return {};
}

} // namespace bonsai::errors_test
