#pragma once
// The size of the server's KV cache: the positions /metrics reports times the
// bytes one position takes in the model read from its GGUF file.
#include <cstdint>
#include <optional>
#include <string>

namespace flood {

// n_layer x 2 (K and V) x n_head_kv x head_dim x value_bytes. Throws
// bonsai::Error when the file is not a Qwen3 model.
int64_t kv_bytes_per_position(const std::string &model_path, int value_bytes);
// The value of the unlabelled sample `name` in Prometheus text; nullopt when
// absent.
std::optional<double> metric_value(const std::string &metrics, const std::string &name);
// 2 when the server's arguments ask the plugin for its f16 cache (kv=f16),
// else 4 (f32, every plugin's default).
int kv_value_bytes(const std::string &joined_server_args);

} // namespace flood
