// bonsai-serve-bench: --help and command-line mistakes, a non-zero exit when
// requests fail, and generated tokens counted from the server's usage (not
// from streamed chunks) against a real `bonsai serve` on the tiny model.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

std::string bench_program() {
  return std::string(BONSAI_BIN_DIR) + "/bonsai-serve-bench";
}

ProcessResult run_bench(std::vector<std::string> args) {
  args.insert(args.begin(), bench_program());
  return run_process({std::move(args), {}, milliseconds(120000)});
}

// The cells of the table's data rows: "| 1 | 2 | 128 | ... |" ->
// {"1", "2", "128", ...}.
std::vector<std::vector<std::string>> table_rows(const std::string &out) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string &line : lines_of(out)) {
    if (line.size() < 3 || line[0] != '|' || line[2] < '0' || line[2] > '9')
      continue; // the header, its rule, anything else
    std::vector<std::string> cells;
    for (size_t at = 1; at < line.size();) {
      const size_t bar = line.find('|', at);
      cells.push_back(line.substr(at + 1, bar - at - 2)); // without the padding spaces
      at = bar + 1;
    }
    rows.push_back(cells);
  }
  return rows;
}

// Column indexes of the table.
constexpr size_t kStreams = 0, kRequests = 1, kTokens = 2, kFailed = 8;

// A loopback port that refuses connections: bound, never listening, held
// for the socket's life so that nothing else takes it.
class RefusingPort {
public:
  RefusingPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr *>(&address), size) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr *>(&address), &size) != 0)
      throw std::runtime_error("cannot bind a loopback port");
    port_ = ntohs(address.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  RefusingPort(const RefusingPort &) = delete;
  RefusingPort &operator=(const RefusingPort &) = delete;
  int port() const { return port_; }

private:
  int fd_;
  int port_ = 0;
};

// `bonsai serve` on the tiny model, on a port it picks; stopped with
// SIGTERM when the test ends.
class TinyServer {
public:
  TinyServer()
      : child_(ProcessSpec{{bonsai_program(), "serve", "-m", data_file("tiny-q1.gguf"), "--port",
                            "0", "--parallel", "2", "-c", "512", "--backend", "cpu",
                            "--backend-options", "kernels=reference"},
                           {},
                           milliseconds(120000)}) {
    child_.read_until(
        [this](const std::string &, const std::string &err) {
          log_ = err;
          return err.find("bonsai serve: ready") != std::string::npos ||
                 err.find("error") != std::string::npos;
        },
        milliseconds(60000));
    port_ = number_after(log_, "listening on http://127.0.0.1:");
  }
  ~TinyServer() {
    child_.send_signal(SIGTERM);
    child_.finish(milliseconds(15000));
  }
  TinyServer(const TinyServer &) = delete;
  TinyServer &operator=(const TinyServer &) = delete;

  bool ready() const { return port_ > 0 && log_.find("bonsai serve: ready") != std::string::npos; }
  int port() const { return port_; }
  const std::string &log() const { return log_; } // until it was ready

private:
  PipedChild child_;
  std::string log_;
  int port_ = -1;
};

// Skips where the benchmarks are not built (BONSAI_BUILD_BENCHMARKS=OFF).
class ServeBench : public ::testing::Test {
protected:
  void SetUp() override {
    if (!std::filesystem::exists(bench_program()))
      GTEST_SKIP() << bench_program() << " is not built";
  }
};

TEST_F(ServeBench, HelpGoesToStdoutWithExitZero) {
  for (const char *flag : {"--help", "-h"}) {
    const auto r = run_bench({"--port", "1", flag});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out.rfind("usage: bonsai-serve-bench", 0), 0u) << r.out;
    for (const char *option : {"--host", "--port", "--streams", "--requests", "--max-tokens",
                               "--prompt-words", "Exit status"})
      EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
}

TEST_F(ServeBench, CommandLineMistakesExitTwoWithOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus", "1"}, "unknown option '--bogus'"},
      {{"--port", "1", "--verbose"}, "unknown option '--verbose'"}, // a trailing flag too
      {{"--port"}, "--port needs a value"},
      {{"--port", "eighty"}, "--port takes a whole number, got 'eighty'"},
      {{"--port", "70000"}, "--port must be in 1..65535, got 70000"},
      {{"--port=0"}, "--port must be in 1..65535, got 0"},
      {{"--requests", "0"}, "--requests must be >= 1, got 0"},
      {{"--max-tokens", "8x"}, "--max-tokens takes a whole number, got '8x'"},
      {{"--prompt-words", "-1"}, "--prompt-words must be >= 0, got -1"},
      {{"--streams", "1,,4"},
       "--streams takes whole numbers >= 1, one or a comma list (e.g. 1,4,8), got '1,,4'"},
      {{"--streams", "0"},
       "--streams takes whole numbers >= 1, one or a comma list (e.g. 1,4,8), got '0'"},
      {{"--host", ""}, "--host must not be empty"},
      {{"8080"}, "unexpected argument '8080': every value belongs to a flag"},
  };
  for (const Case &c : cases) {
    const auto r = run_bench(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_EQ(r.out, "") << c.message;
    EXPECT_EQ(r.err,
              "bonsai-serve-bench: error: " + c.message + " (see 'bonsai-serve-bench --help')\n");
  }
}

TEST_F(ServeBench, EveryRequestFailingExitsOne) {
  RefusingPort refusing;
  const std::string port = std::to_string(refusing.port());
  const auto r = run_bench({"--port", port, "--streams", "1,2", "--requests", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[0][kRequests], "2");
  EXPECT_EQ(rows[0][kFailed], "2");
  EXPECT_EQ(rows[1][kRequests], "4");
  EXPECT_EQ(rows[1][kFailed], "4");
  EXPECT_EQ(rows[1][kTokens], "0");
  EXPECT_EQ(r.err, "bonsai-serve-bench: 6 of 6 requests failed; the first: no answer from "
                   "http://127.0.0.1:" +
                       port + " (Connection)\n");
}

TEST_F(ServeBench, TokensAreTheServersCompletionTokens) {
  TinyServer server;
  ASSERT_TRUE(server.ready()) << server.log();
  // At temperature 0 these prompts ("Client C round R" and 32 words) run the
  // tiny model to max_tokens without an end token, so every request
  // generates exactly 64. Their chunks are fewer: some tokens end inside a
  // UTF-8 character and are sent with the next one (49 chunks for client 1,
  // round 0), so counting chunks gave 127 and 236 instead of 128 and 256.
  const auto r = run_bench({"--port", std::to_string(server.port()), "--streams", "1,2",
                            "--requests", "2", "--max-tokens", "64", "--prompt-words", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const auto &row : rows) {
    const int requests = std::stoi(row[kRequests]);
    EXPECT_EQ(requests, std::stoi(row[kStreams]) * 2);
    EXPECT_EQ(std::stol(row[kTokens]), requests * 64L) << r.out;
    EXPECT_EQ(row[kFailed], "0");
  }
}

TEST_F(ServeBench, RequestsTheServerRefusesExitOneWithItsMessage) {
  TinyServer server;
  ASSERT_TRUE(server.ready()) << server.log();
  // 1,000 words do not fit the 512-token context: a 400 for each request.
  const auto r = run_bench({"--port", std::to_string(server.port()), "--streams", "2", "--requests",
                            "1", "--prompt-words", "1000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][kFailed], "2");
  EXPECT_EQ(r.err.rfind("bonsai-serve-bench: 2 of 2 requests failed; the first: HTTP 400: This "
                        "model's context window is 512 tokens per request",
                        0),
            0u)
      << r.err;
}

} // namespace
} // namespace bonsai::test
