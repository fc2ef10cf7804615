#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "bonsai/core/error.hpp"
#include "common/log_internal.hpp"
#include "model/engine_impl.hpp"
#include "plugins/layer_kinds.hpp"

namespace bonsai {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void validate_options(const EngineOptions &options) {
  if (options.n_ctx < 0)
    throw InvalidArgument(
        fmt::format("n_ctx must be >= 0 (0 = the model's), got {}", options.n_ctx));
  if (options.n_batch < 1)
    throw InvalidArgument(fmt::format("n_batch must be >= 1, got {}", options.n_batch));
  if (options.n_threads < 0)
    throw InvalidArgument(
        fmt::format("n_threads must be >= 0 (0 = the plugin's choice), got {}", options.n_threads));
  if (options.device_index < 0)
    throw InvalidArgument(fmt::format("device_index must be >= 0, got {}", options.device_index));
}

// Runs `step`, turning core's generic errors into ModelError (the message
// already names the file).
template <typename Step> auto as_model_error(Step &&step) {
  try {
    return step();
  } catch (const ModelError &) {
    throw;
  } catch (const Error &error) {
    throw ModelError(error.what());
  }
}

int32_t effective_n_ctx(int32_t requested, const Qwen3Hparams &hp, const std::string &path) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const int64_t n_ctx_train = rope_context_limit(hp.rope, hp.n_ctx_train);
  const int64_t train = n_ctx_train > 0 ? std::min(n_ctx_train, kMax) : 0;
  if (requested == 0) {
    if (train == 0)
      throw ModelError(fmt::format(
          "{}: the model states no context length (qwen3.context_length); pass n_ctx", path));
    return static_cast<int32_t>(train);
  }
  if (train > 0 && requested > train) {
    if (rope_is_scaled(hp.rope))
      host::logger().warn("n_ctx {} is larger than the context the model's RoPE scaling covers "
                          "({}); using {}",
                          requested, train, train);
    else
      host::logger().warn(
          "n_ctx {} is larger than the model's training context {}; using {}. To extend it, "
          "turn on RoPE scaling, e.g. --rope-scaling yarn --rope-scale {} --yarn-orig-ctx {}",
          requested, train, train, (requested + train - 1) / train, train);
    return static_cast<int32_t>(train);
  }
  return requested;
}

ModelInfo describe_model(const gguf::File &file, const ModelSpec &spec) {
  ModelInfo info;
  info.path = file.path();
  if (const auto *name = file.find("general.name"); name && name->type == gguf::ValueType::STRING)
    info.name = name->as_string("general.name");
  info.architecture = file.get_string("general.architecture");
  info.file_bytes = file.file_size();
  for (const gguf::TensorInfo &tensor : file.tensors())
    info.weight_bytes += tensor.nbytes;
  info.n_params = static_cast<uint64_t>(spec.n_params());
  if (!spec.layers.empty())
    info.weight_type = std::string(type_name(
        static_cast<uint32_t>(spec.layers[0].recurrent() ? spec.layers[0].delta_net->qkv.type
                                                         : spec.layers[0].attn_q.type)));
  const auto &hp = spec.hparams;
  info.n_embd = static_cast<int32_t>(hp.n_embd);
  info.n_layer = static_cast<int32_t>(hp.n_layer);
  info.n_head = static_cast<int32_t>(hp.n_head);
  info.n_head_kv = static_cast<int32_t>(hp.n_head_kv);
  info.head_dim = static_cast<int32_t>(hp.head_dim);
  info.n_ff = static_cast<int32_t>(hp.n_ff);
  info.n_vocab = static_cast<int32_t>(hp.n_vocab);
  info.rope = hp.rope.describe();
  info.n_ctx_train =
      static_cast<int32_t>(std::min<int64_t>(hp.n_ctx_train, std::numeric_limits<int32_t>::max()));
  info.tied_lm_head = spec.tied();
  const uint64_t embedding = spec.token_embd.nbytes;
  info.decode_weight_bytes =
      spec.weight_bytes() - embedding +
      (info.tied_lm_head ? embedding : embedding / std::max(hp.n_vocab, int64_t{1}));
  info.n_kv_layers = info.n_layer;
  if (const auto &y = hp.hybrid) {
    info.n_mtp_layers = static_cast<int32_t>(y->n_nextn);
    const DeltaNetHparams &g = y->delta_net;
    int64_t recurrent = 0;
    for (bool r : y->recurrent)
      recurrent += r;
    info.n_kv_layers = static_cast<int32_t>(hp.n_layer - recurrent);
    info.recurrent_state_bytes = static_cast<uint64_t>(
        recurrent * ((g.conv_kernel - 1) * g.conv_dim() + g.n_v_heads * g.head_dim * g.head_dim) *
        static_cast<int64_t>(sizeof(float)));
  }
  return info;
}

} // namespace

void Engine::Impl::check_tokens(std::span<const int32_t> tokens, const char *what) const {
  const int32_t vocab = n_vocab();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      throw InvalidArgument(fmt::format(
          "{}: token {} at index {} is outside the vocabulary [0, {})", what, tokens[i], i, vocab));
}

ChatPrompt Engine::Impl::render_chat(std::span<const ChatMessage> messages,
                                     const ChatOptions &options) const {
  if (!chat_template_warning.empty())
    std::call_once(chat_template_warned,
                   [&] { host::logger().warn("chat template: {}", chat_template_warning); });
  try {
    return render_chat_prompt(chat_template, messages, options);
  } catch (const Error &error) {
    throw InvalidArgument(error.what());
  }
}

std::vector<int32_t> Engine::Impl::tokenize_chat(std::span<const ChatMessage> messages,
                                                 const ChatOptions &options) const {
  const ChatPrompt prompt = render_chat(messages, options);
  try {
    return tokenizer.encode(prompt.text, prompt.control_spans);
  } catch (const Error &error) {
    throw InvalidArgument(error.what());
  }
}

Engine::Engine(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Engine Engine::open(const std::filesystem::path &model_path, const EngineOptions &options) {
  const auto start = Clock::now();
  validate_options(options);

  auto file =
      as_model_error([&] { return std::make_unique<gguf::File>(gguf::File::open(model_path)); });
  auto spec = as_model_error([&] { return ModelSpec::from_gguf(*file); });
  try {
    apply_rope_overrides(spec.hparams.rope,
                         RopeOverrides{options.rope_scaling, options.rope_scale,
                                       options.rope_freq_base, options.yarn_orig_ctx});
  } catch (const Error &e) {
    throw InvalidArgument(e.what());
  }
  auto tokenizer = as_model_error([&] { return Tokenizer::from_gguf(*file); });
  if (spec.hparams.n_vocab > std::numeric_limits<int32_t>::max())
    throw ModelError(
        fmt::format("{}: vocabulary of {} rows is too large", file->path(), spec.hparams.n_vocab));
  // Real files pad the embedding past the tokenizer (fine: those rows are never
  // produced by tokenize); the reverse would let tokenize emit ids that have
  // no embedding row.
  if (tokenizer.n_vocab() > spec.hparams.n_vocab)
    throw ModelError(
        fmt::format("{}: the tokenizer has {} tokens but token_embd.weight has only {} "
                    "rows; every token needs an embedding row",
                    file->path(), tokenizer.n_vocab(), spec.hparams.n_vocab));

  auto impl = std::make_shared<Impl>(*file, std::move(spec), std::move(tokenizer));
  impl->model = describe_model(*file, impl->spec);
  // The MTP layer is read only as views: a draft uploads it when asked. A
  // broken one fails that request, not the model.
  try {
    impl->mtp = read_mtp_weights(*file, impl->spec.hparams);
  } catch (const Error &e) {
    impl->mtp_problem = e.what();
  }
  file.reset(); // the metadata; impl->mapping keeps the tensor bytes
  impl->chat_template =
      detect_chat_template(impl->tokenizer.chat_template(), [&](std::string_view warning) {
        impl->chat_template_warning = warning;
      });

  impl->options = options;
  impl->options.n_ctx = effective_n_ctx(options.n_ctx, impl->spec.hparams, impl->path);
  impl->options.n_batch = std::min(options.n_batch, impl->options.n_ctx);

  impl->plugins = host::select_plugins(options.backend, plugin_search_path());
  if (impl->spec.arch() == Architecture::qwen35 && options.backend == "auto")
    host::prefer_qwen35_layer_kinds(impl->plugins);
  const PluginInfo &backend = impl->plugin().info;
  host::logger().info("model {}: {} layers, {} params, backend {} {} ({})", impl->path,
                      impl->model.n_layer, impl->model.n_params, backend.name, backend.version,
                      backend.path.string());
  impl->load_ms = ms_since(start);
  return Engine(std::move(impl));
}

const ModelInfo &Engine::model() const {
  return impl_->model;
}
const PluginInfo &Engine::backend() const {
  return impl_->plugin().info;
}
const EngineOptions &Engine::options() const {
  return impl_->options;
}
double Engine::load_ms() const {
  return impl_->load_ms;
}
int32_t Engine::n_vocab() const {
  return impl_->n_vocab();
}

std::vector<int32_t> Engine::tokenize(std::string_view text, bool parse_special) const {
  try {
    return impl_->tokenizer.encode(text, parse_special);
  } catch (const Error &error) {
    throw InvalidArgument(error.what());
  }
}

std::string Engine::detokenize(std::span<const int32_t> tokens) const {
  const int32_t vocab = impl_->tokenizer.n_vocab();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      throw InvalidArgument(fmt::format(
          "detokenize: token {} at index {} is outside the tokenizer's vocabulary [0, {})",
          tokens[i], i, vocab));
  return impl_->tokenizer.decode(tokens);
}

std::string Engine::token_piece(int32_t token) const {
  if (token < 0 || token >= impl_->tokenizer.n_vocab())
    throw InvalidArgument(fmt::format("token {} is outside the tokenizer's vocabulary [0, {})",
                                      token, impl_->tokenizer.n_vocab()));
  return std::string(impl_->tokenizer.token_bytes(token));
}

std::vector<int32_t> Engine::default_stop_tokens() const {
  return impl_->tokenizer.stop_ids();
}

std::string Engine::apply_chat_template(std::span<const ChatMessage> messages,
                                        bool add_generation_prompt, bool enable_thinking) const {
  return impl_->render_chat(messages, {add_generation_prompt, enable_thinking}).text;
}

std::vector<int32_t> Engine::tokenize_chat(std::span<const ChatMessage> messages,
                                           bool add_generation_prompt, bool enable_thinking) const {
  return impl_->tokenize_chat(messages, {add_generation_prompt, enable_thinking});
}

} // namespace bonsai
