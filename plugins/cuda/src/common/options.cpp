#include "options.hpp"

#include <sstream>

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

std::string trim(const std::string &text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return {};
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

bool parse_switch(const std::string &key, const std::string &value) {
  if (value == "on" || value == "1" || value == "true" || value == "yes")
    return true;
  if (value == "off" || value == "0" || value == "false" || value == "no")
    return false;
  fail_invalid(strformat("option %s=%s: expected on or off", key.c_str(), value.c_str()));
}

// A whole number of `unit` in [1, max]; anything else (signs, decimals,
// more digits than fit) is refused with the range.
uint64_t parse_whole(const std::string &key, const std::string &value, uint64_t max,
                     const char *unit) {
  bool digits = !value.empty() && value.size() <= 9;
  for (const char c : value)
    digits = digits && c >= '0' && c <= '9';
  const uint64_t n = digits ? std::stoull(value) : 0;
  if (n < 1 || n > max)
    fail_invalid(strformat("option %s=%s: expected a whole number of %s from 1 to %llu",
                           key.c_str(), value.c_str(), unit, static_cast<unsigned long long>(max)));
  return n;
}

} // namespace

ContextOptions parse_options(const char *options) {
  ContextOptions parsed;
  if (options == nullptr)
    return parsed;
  std::istringstream in(options);
  std::string entry;
  while (std::getline(in, entry, ';')) {
    entry = trim(entry);
    if (entry.empty())
      continue;
    const auto equals = entry.find('=');
    if (equals == std::string::npos) {
      parsed.warnings.push_back("ignoring option '" + entry + "': expected key=value");
      continue;
    }
    const std::string key = trim(entry.substr(0, equals));
    const std::string value = trim(entry.substr(equals + 1));
    if (key == "kernels") {
      if (value != "reference" && value != "auto")
        fail_invalid("option kernels=" + value + ": expected reference or auto");
      parsed.use_graphs = value != "reference";
      parsed.tensor_cores = value != "reference";
      parsed.int8_gemv = value != "reference";
      if (value == "reference")
        parsed.decode = DecodeMode::graph;
    } else if (key == "ptx_cache") {
      parsed.ptx_cache = parse_switch(key, value);
    } else if (key == "graphs") {
      parsed.use_graphs = parse_switch(key, value);
    } else if (key == "tensor_cores") {
      parsed.tensor_cores = parse_switch(key, value);
    } else if (key == "int8_gemv") {
      parsed.int8_gemv = parse_switch(key, value);
    } else if (key == "int8_input") {
      if (value != "token" && value != "block")
        fail_invalid("option int8_input=" + value + ": expected token or block");
      parsed.int8_input_per_token = value == "token";
    } else if (key == "kv") {
      if (value != "f16" && value != "f32")
        fail_invalid("option kv=" + value + ": expected f16 or f32");
      parsed.kv_f16 = value == "f16";
    } else if (key == "prefill") {
      if (value != "int8" && value != "f16")
        fail_invalid("option prefill=" + value + ": expected int8 or f16");
      parsed.prefill_int8 = value == "int8";
    } else if (key == "decode") {
      if (value != "auto" && value != "persistent" && value != "graph")
        fail_invalid("option decode=" + value + ": expected auto, persistent or graph");
      parsed.decode = value == "auto"         ? DecodeMode::automatic
                      : value == "persistent" ? DecodeMode::persistent
                                              : DecodeMode::graph;
    } else if (key == "prefill_attention") {
      if (value != "tc" && value != "cores")
        fail_invalid("option prefill_attention=" + value + ": expected tc or cores");
      parsed.attention_tc = value == "tc";
    } else if (key == "persistent_deadline_ms") {
      parsed.persistent_deadline_ms =
          static_cast<int>(parse_whole(key, value, 600000, "milliseconds"));
    } else if (key == "persistent_single_from") {
      parsed.persistent_single_from =
          static_cast<int>(parse_whole(key, value, 1u << 30, "tokens of context"));
    } else if (key == "persistent_keys_per_range") {
      parsed.persistent_keys_per_range =
          static_cast<int>(parse_whole(key, value, 1u << 30, "keys"));
    } else if (key == "persistent_records") {
      if (value != "shared" && value != "registers")
        fail_invalid("option persistent_records=" + value + ": expected shared or registers");
      parsed.persistent_held_records = value == "registers";
    } else if (key == "persistent_quantize") {
      if (value != "consumer" && value != "producer")
        fail_invalid("option persistent_quantize=" + value + ": expected consumer or producer");
      parsed.persistent_producer_quantize = value == "producer";
    } else if (key == "persistent_matmul") {
      if (value != "dp4a" && value != "mma")
        fail_invalid("option persistent_matmul=" + value + ": expected dp4a or mma");
      parsed.persistent_mma = value == "mma";
    } else if (key == "persistent_head") {
      parsed.persistent_head = parse_switch(key, value);
    } else if (key == "persistent_prefetch") {
      if (value != "off" && value != "next")
        fail_invalid("option persistent_prefetch=" + value + ": expected off or next");
      parsed.persistent_prefetch = value == "next";
    } else if (key == "persistent_trace") {
      if (value.empty())
        fail_invalid("option persistent_trace=: expected the path of the file to write");
      parsed.persistent_trace = value;
    } else if (key == "pdl") {
      parsed.programmatic_launch = parse_switch(key, value);
    } else if (key == "upload_chunk_kib") {
      parsed.upload_chunk_bytes = parse_whole(key, value, uint64_t{1} << 20, "KiB") << 10;
    } else if (parse_tuning_option(key, value, parsed.tuning)) {
      // tune= and its kin (tuning_options.cpp)
    } else {
      parsed.warnings.push_back("ignoring unknown option '" + key + "'");
    }
  }
  return parsed;
}

} // namespace bonsai::cuda
