#include "fake_clock.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace fake_clock {
namespace {

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t at; (at = text.find(separator, begin)) != std::string::npos; begin = at + 1)
    parts.push_back(text.substr(begin, at - begin));
  parts.push_back(text.substr(begin));
  return parts;
}

[[noreturn]] void bad_rule(const std::string &rule) {
  std::fprintf(stderr, "BONSAI_FAKE_CUDA_TIMES: bad rule '%s' (PART[+FLAG...]=MICROSECONDS)\n",
               rule.c_str());
  std::abort();
}

} // namespace

bool scripted() {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_TIMES");
  return env != nullptr && *env != '\0';
}

double cost_us(const std::string &kernel, const std::vector<std::string> &flags) {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_TIMES");
  if (env == nullptr)
    return 0;
  for (const std::string &rule : split(env, ';')) {
    if (rule.empty())
      continue;
    const size_t eq = rule.find('=');
    if (eq == std::string::npos)
      bad_rule(rule);
    char *end = nullptr;
    const double us = std::strtod(rule.c_str() + eq + 1, &end);
    if (end == rule.c_str() + eq + 1 || *end != '\0' || !(us >= 0))
      bad_rule(rule);
    const std::vector<std::string> words = split(rule.substr(0, eq), '+');
    bool matches = kernel.find(words[0]) != std::string::npos;
    for (size_t i = 1; matches && i < words.size(); ++i)
      matches = std::find(flags.begin(), flags.end(), words[i]) != flags.end();
    if (matches)
      return us;
  }
  return 0;
}

} // namespace fake_clock
