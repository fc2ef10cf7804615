#include "flood_kv_size.hpp"

#include <cstdlib>

#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"

namespace flood {

int64_t kv_bytes_per_position(const std::string &model_path, int value_bytes) {
  const bonsai::gguf::File file = bonsai::gguf::File::open(model_path);
  const bonsai::Qwen3Hparams hp = bonsai::ModelSpec::from_gguf(file).hparams;
  return hp.n_layer * 2 * hp.n_head_kv * hp.head_dim * value_bytes;
}

std::optional<double> metric_value(const std::string &metrics, const std::string &name) {
  const std::string key = name + " ";
  for (size_t at = 0; at < metrics.size();) {
    const size_t end = metrics.find('\n', at);
    if (metrics.compare(at, key.size(), key) == 0)
      return std::strtod(metrics.c_str() + at + key.size(), nullptr);
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return std::nullopt;
}

int kv_value_bytes(const std::string &joined_server_args) {
  std::string text;
  for (const char c : joined_server_args)
    if (c != ' ')
      text += c;
  return text.find("kv=f16") != std::string::npos ? 2 : 4;
}

} // namespace flood
