#include "api/ollama/ollama_models.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/ollama/ollama_request.hpp"
#include "request/request_fields.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// The Ollama release whose API this follows (think, tool call ids, ...).
constexpr const char *kOllamaVersion = "0.12.6";

std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Ollama's way of writing a parameter count: "1.7B", "596.05M".
std::string parameter_size(uint64_t n) {
  if (n >= 1'000'000'000)
    return fmt::format("{:.1f}B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000)
    return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
  return fmt::format("{:.2f}K", static_cast<double>(n) / 1e3);
}

// 64 hex digits from FNV-1a over `text`, four times with different seeds.
std::string fingerprint(const std::string &text) {
  std::string out;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    uint64_t hash = 0xcbf29ce484222325ull ^ (seed * 0x9e3779b97f4a7c15ull);
    for (const unsigned char c : text) {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
    out += fmt::format("{:016x}", hash);
  }
  return out;
}

json details_json(const OllamaModel &model) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", model.family},
          {"families", json::array({model.family})},
          {"parameter_size", model.parameter_size},
          {"quantization_level", model.quantization_level}};
}

json listing_json(const OllamaModel &model) {
  return {{"name", model.name}, {"model", model.name},    {"modified_at", model.modified_at},
          {"size", model.size}, {"digest", model.digest}, {"details", details_json(model)}};
}

} // namespace

std::string rfc3339(std::chrono::system_clock::time_point time) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     micros % 1'000'000);
}

OllamaModel ollama_model_of(const Engine &engine, const std::string &model_id, int32_t n_ctx) {
  const ModelInfo &info = engine.model();
  OllamaModel model;
  model.name = ollama_model_name(model_id);
  std::error_code error;
  const auto written = std::filesystem::last_write_time(info.path, error);
  const auto when =
      error ? std::chrono::system_clock::now() : std::chrono::file_clock::to_sys(written);
  model.modified_at =
      rfc3339(std::chrono::time_point_cast<std::chrono::system_clock::duration>(when));
  model.size = info.file_bytes;
  model.digest = fingerprint(
      fmt::format("{}\n{}\n{}", info.path.string(), info.file_bytes, model.modified_at));
  model.family = info.architecture;
  model.parameter_size = parameter_size(info.n_params);
  model.quantization_level = info.weight_type;
  std::transform(model.quantization_level.begin(), model.quantization_level.end(),
                 model.quantization_level.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  model.n_ctx = n_ctx;
  model.n_params = info.n_params;
  model.n_embd = info.n_embd;
  model.n_layer = info.n_layer;
  model.n_head = info.n_head;
  model.n_head_kv = info.n_head_kv;
  model.n_vocab = info.n_vocab;
  model.n_ctx_train = info.n_ctx_train;
  return model;
}

std::string ollama_tags_body(const OllamaModel &model) {
  return dump({{"models", json::array({listing_json(model)})}});
}

std::string ollama_ps_body(const OllamaModel &model) {
  json entry = listing_json(model);
  entry.erase("modified_at");
  // The model stays loaded as long as the server runs.
  entry["expires_at"] = "9999-12-31T23:59:59.000000Z";
  entry["size_vram"] = 0;
  entry["context_length"] = model.n_ctx;
  return dump({{"models", json::array({std::move(entry)})}});
}

std::string ollama_version_body() {
  return dump({{"version", kOllamaVersion}});
}

std::string ollama_show_body(const OllamaModel &model, const RequestContext &context,
                             std::string_view text) {
  const json body = object_body(text, context.json);
  ignore_unknown_fields(body, {"model", "name", "verbose", "system", "template", "options"}, "");
  string_field(body, "model");
  string_field(body, "name");
  bool_field(body, "verbose", false);
  const std::string &arch = model.family;
  // context_length is what a request may use here (the server's -c), so that
  // clients size their prompts to it; the training context is beside it.
  const json info = {{"general.architecture", arch},
                     {"general.parameter_count", model.n_params},
                     {arch + ".context_length", model.n_ctx},
                     {arch + ".training_context_length", model.n_ctx_train},
                     {arch + ".embedding_length", model.n_embd},
                     {arch + ".block_count", model.n_layer},
                     {arch + ".attention.head_count", model.n_head},
                     {arch + ".attention.head_count_kv", model.n_head_kv},
                     {arch + ".vocab_size", model.n_vocab}};
  return dump({{"license", ""},
               {"modelfile", fmt::format("# served by bonsai serve\nFROM {}\n", model.name)},
               {"parameters", fmt::format("num_ctx {}\nstop \"<|im_end|>\"", model.n_ctx)},
               {"template", ""},
               {"system", ""},
               {"details", details_json(model)},
               {"model_info", info},
               {"capabilities", json::array({"completion", "tools", "thinking"})},
               {"modified_at", model.modified_at}});
}

} // namespace bonsai::server
