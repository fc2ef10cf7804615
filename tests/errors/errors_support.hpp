#pragma once
// Shared by the bad-input catalogue tests (docs/errors.md): temp files, GGUF
// bytes assembled by hand, running the real `bonsai` program (optionally as an
// unprivileged user) and catching what the C++ API throws.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai::errors_test {

inline std::string data_file(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}
inline std::string bonsai_program() {
  return std::string(BONSAI_BIN_DIR) + "/bonsai";
}
inline std::string cpu_plugin() {
  return std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
}
// Engine options for the CPU plugin of the build tree.
inline EngineOptions cpu_options() {
  EngineOptions options;
  options.backend = cpu_plugin();
  return options;
}

std::vector<uint8_t> read_bytes(const std::string &path);

// A fresh world-readable folder (so an unprivileged child can reach files in
// it), removed with its content.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string path(const std::string &name) const { return (root_ / name).string(); }
  std::string write(const std::string &name, const std::vector<uint8_t> &bytes) const;

private:
  std::filesystem::path root_;
};

// Little-endian GGUF fields, appended one by one.
class Bytes {
public:
  template <class T> Bytes &put(T v) {
    const size_t at = data.size();
    data.resize(at + sizeof(T));
    std::memcpy(data.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes &u32(uint32_t v) { return put(v); }
  Bytes &u64(uint64_t v) { return put(v); }
  Bytes &raw(std::string_view s) {
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  Bytes &str(std::string_view s) { return u64(s.size()).raw(s); }
  Bytes &header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes &tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims)
      u64(d);
    return u32(type).u64(offset);
  }
  Bytes &pad_to(size_t alignment) {
    while (data.size() % alignment)
      data.push_back(0);
    return *this;
  }
  Bytes &zeros(size_t n) {
    data.resize(data.size() + n, 0);
    return *this;
  }
  std::vector<uint8_t> data;
};

enum class RunAs { self, nobody };

struct CliResult {
  int exit_code = -1;  // when the program exited
  int term_signal = 0; // when a signal killed it (a crash)
  bool timed_out = false;
  std::string out, err;
};

// Runs `bonsai ARGS...` with stdin from /dev/null; killed after 120 s.
CliResult run_bonsai(const std::vector<std::string> &args, RunAs as = RunAs::self);

// Runs `body` in a child process that has dropped root to user nobody and
// returns what it wrote to `out`; a no-op that returns body run here when not
// root (then permissions already apply).
std::string as_unprivileged(const std::function<std::string()> &body);

// The error contract of the program: exactly `message` on stderr as one
// line, nothing on stdout, the exit code, no crash, no hang.
void expect_cli_error(const CliResult &r, int exit_code, const std::string &message);

// `pattern` with every "MODEL" replaced by `path` (the catalogue writes
// messages with the placeholder).
std::string with_path(std::string pattern, const std::string &path);

// What an API call threw: the most derived bonsai class name and what().
struct Thrown {
  std::string type; // "ModelError", "InvalidArgument", ... "" when nothing was thrown
  std::string message;
};
Thrown thrown_by(const std::function<void()> &call);

} // namespace bonsai::errors_test
