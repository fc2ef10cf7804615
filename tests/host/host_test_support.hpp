#pragma once
// Shared fixtures for the host tests: golden data, plugin paths, env guard.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "mini_json.hpp"

namespace host_test {

inline std::string data_path(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}
inline std::string tiny_q1() {
  return data_path("tiny-q1.gguf");
}

inline std::string fake_dir() {
  return BONSAI_FAKE_PLUGIN_DIR;
}
inline std::string fake_plugin(const std::string &stem) {
  return fake_dir() + "/libbonsai_" + stem + ".so";
}
// The real CPU plugin in the build tree.
inline std::string cpu_plugin() {
  return std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
}

struct Greedy {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
};
inline Greedy load_greedy(const std::string &name) {
  const auto doc = mini_json::parse_file(data_path(name));
  Greedy g;
  for (const auto &id : doc["prompt"].as_array())
    g.prompt.push_back(static_cast<int32_t>(id.as_int()));
  for (const auto &id : doc["greedy"].as_array())
    g.greedy.push_back(static_cast<int32_t>(id.as_int()));
  return g;
}

inline std::vector<int32_t> load_prompt(const std::string &name) {
  const auto doc = mini_json::parse_file(data_path(name));
  std::vector<int32_t> ids;
  for (const auto &id : doc["tokens"].as_array())
    ids.push_back(static_cast<int32_t>(id.as_int()));
  return ids;
}

inline std::vector<float> load_f32(const std::string &name) {
  std::ifstream in(data_path(name), std::ios::binary | std::ios::ate);
  const auto size = static_cast<size_t>(in.tellg());
  std::vector<float> values(size / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(values.data()), static_cast<std::streamsize>(size));
  return values;
}

inline double cosine(const float *a, const float *b, size_t n) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// `bytes` with every ill-formed UTF-8 sequence replaced by U+FFFD (one per
// maximal ill-formed subpart, Unicode's recommended practice): what streamed
// text must look like for token sequences that split characters.
inline std::string sanitize_utf8(const std::string &bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the first continuation
    if (lead < 0x80) {
      out += bytes[i++];
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      need = 2;
      lo = lead == 0xE0 ? 0xA0 : 0x80;
      hi = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      need = 3;
      lo = lead == 0xF0 ? 0x90 : 0x80;
      hi = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t got = 0;
    while (got < need && i + 1 + got < bytes.size()) {
      const auto c = static_cast<unsigned char>(bytes[i + 1 + got]);
      const unsigned char min = got == 0 ? lo : 0x80, max = got == 0 ? hi : 0xBF;
      if (c < min || c > max)
        break;
      ++got;
    }
    if (got == need)
      out.append(bytes, i, need + 1);
    else
      out += "\xEF\xBF\xBD";
    i += 1 + got;
  }
  return out;
}

// Sets an environment variable for the lifetime of the guard.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace host_test
