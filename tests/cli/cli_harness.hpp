#pragma once
// Shared helpers of the CLI tests: where the program and the golden data are,
// running `bonsai` with arguments, and reading golden files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mini_json.hpp"
#include "subprocess.hpp"

namespace bonsai::test {

inline std::string bonsai_program() {
  return std::string(BONSAI_BIN_DIR) + "/bonsai";
}
inline std::string data_file(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}

// Runs `bonsai ARGS...` to completion (stdout, stderr, exit code apart).
inline ProcessResult run_bonsai(std::vector<std::string> args, std::string stdin_data = {},
                                milliseconds timeout = milliseconds(180000)) {
  args.insert(args.begin(), bonsai_program());
  return run_process({std::move(args), std::move(stdin_data), timeout});
}

inline std::vector<int32_t> json_ids(const std::string &file, const std::string &key) {
  std::vector<int32_t> ids;
  const mini_json::Value doc = mini_json::parse_file(data_file(file)); // outlives the loop
  for (const auto &v : doc[key].as_array())
    ids.push_back(static_cast<int32_t>(v.as_int()));
  return ids;
}

inline std::string join_ids(const std::vector<int32_t> &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0)
      s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

inline std::vector<float> read_f32(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  if (!in)
    return v;
  in.seekg(0, std::ios::end);
  v.resize(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

inline double cosine(const float *a, const float *b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

inline std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The integer right after the first `prefix` in `text`, or -1 if there is
// none. (std::regex is avoided: GCC 12 warns inside it under sanitizers.)
inline int number_after(const std::string &text, const std::string &prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos)
    return -1;
  size_t end = at + prefix.size();
  int value = 0;
  bool digits = false;
  for (; end < text.size() && text[end] >= '0' && text[end] <= '9'; ++end, digits = true)
    value = value * 10 + (text[end] - '0');
  return digits ? value : -1;
}

// What a piped `bonsai chat` prints on stdout for the conversation it saved
// with /save FILE: each assistant reply and a line break, nothing else.
inline std::string replies_as_printed(const std::string &saved_conversation) {
  const mini_json::Value doc = mini_json::parse_file(saved_conversation);
  std::string out;
  for (size_t i = 0; i < doc["messages"].size(); ++i)
    if (doc["messages"][i]["role"].as_string() == "assistant")
      out += doc["messages"][i]["content"].as_string() + "\n";
  return out;
}

// A fresh folder under the system temp dir, removed with its content.
class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "bonsai-cli-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const std::string &name) const { return (path_ / name).string(); }
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace bonsai::test
