#pragma once
// The bonsai C++ API (libbonsai_host): load a GGUF model once (`Engine`), run
// any number of independent sequences on it (`Session`), generate text with
// streaming, stop strings/tokens, cancellation and timing statistics.
//
//   bonsai::Engine engine = bonsai::Engine::open("model.gguf", {.backend = "auto"});
//   bonsai::Session session = engine.create_session();
//   bonsai::GenerateRequest request;
//   request.prompt = "Hello";
//   auto result = session.generate(request, [](std::string_view piece) {
//     std::fputs(std::string(piece).c_str(), stdout);
//     return true; // false stops the generation
//   });
//
// Errors: every failure throws a class derived from bonsai::Error (see below);
// messages are complete sentences naming the file and what is wrong.
//
// Threading: an Engine is immutable after open(); its const members and
// create_session() may be called from several threads at once. A Session is
// used by one thread at a time, except Session::cancel(), which any thread may
// call at any time. Sessions of one engine may run in parallel threads.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bonsai/core/chat_template.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/export.hpp"
#include "bonsai/log.hpp"

namespace bonsai {

// ---------------------------------------------------------------------------
// Errors (all derive from bonsai::Error, itself a std::runtime_error)
// ---------------------------------------------------------------------------

// A plugin could not be found, loaded or used: not a shared library, missing
// entry symbol, ABI major mismatch, probe failure, a failing plugin call. The
// message names the plugin file.
class BONSAI_HOST_API PluginError : public Error {
public:
  using Error::Error;
};

// The model file cannot be used (unreadable, not GGUF, wrong architecture,
// missing or mis-shaped tensors, bad tokenizer metadata). Names the file.
class BONSAI_HOST_API ModelError : public Error {
public:
  using Error::Error;
};

// A caller-supplied value is out of range (token id >= n_vocab, n_batch < 1,
// unknown backend spec, bad sampling parameter, truncate past the position).
// Thrown before any work is done.
class BONSAI_HOST_API InvalidArgument : public Error {
public:
  using Error::Error;
};

// GenerateRequest::format cannot be followed: a JSON Schema outside the
// supported subset (the message names the keyword and where it is), a
// malformed schema, a bad tool name. Thrown before any work is done.
class BONSAI_HOST_API FormatError : public InvalidArgument {
public:
  using InvalidArgument::InvalidArgument;
};

// The request does not fit in the session's context window (prompt longer than
// n_ctx, position + n_predict > n_ctx, eval past the end). Thrown before any
// work is done; the session is unchanged.
class BONSAI_HOST_API ContextFullError : public Error {
public:
  using Error::Error;
};

// Session::eval() was interrupted by Session::cancel(). The tokens of the
// interrupted step are not in the KV cache (position() is unchanged by that
// step). generate() does not throw this: it returns StopReason::cancelled.
class BONSAI_HOST_API CancelledError : public Error {
public:
  using Error::Error;
};

// ---------------------------------------------------------------------------
// Plugins
// ---------------------------------------------------------------------------

// What a plugin's probe() reported about its device 0.
struct DeviceInfo {
  uint32_t device_count = 0;       // usable devices (0 when none)
  std::string name;                // device name, e.g. "NVIDIA H100" or the CPU model
  uint64_t total_memory_bytes = 0; // device memory (host RAM for a CPU)
  uint64_t free_memory_bytes = 0;  // free now; 0 when unknown
  uint32_t compute_major = 0;      // e.g. CUDA compute capability; 0 if n/a
  uint32_t compute_minor = 0;
  std::string detail; // features, or why there is no device
  // How strongly `--backend auto` prefers the plugin (ABI 1.1; higher wins;
  // 0 when the plugin does not say, as a 1.0 plugin).
  uint32_t preference = 0;
};

// One plugin file as seen by list_plugins() / inspect_plugin().
struct PluginInfo {
  std::filesystem::path path; // the .so file
  // Backend name from the plugin's table ("cpu", "cuda"); when the file could
  // not be loaded, the NAME part of libbonsai_NAME.so.
  std::string name;
  std::string version;     // plugin version string ("" if not loaded)
  std::string description; // one line from the plugin ("" if not loaded)
  uint32_t abi_major = 0;  // ABI the plugin was built for (0 if not loaded)
  uint32_t abi_minor = 0;
  bool loaded = false;      // the file loaded and its API table is usable
  std::string load_error;   // why not, when !loaded (names the file)
  bool device_ok = false;   // probe() returned OK
  std::string probe_status; // "ok", "no device", or the failing status's name ("" if not loaded)
  DeviceInfo device;        // probe() output (valid when loaded)
};

// The folders searched for libbonsai_NAME.so, in order: each entry of
// $BONSAI_PLUGIN_PATH (colon-separated, empty entries skipped), the install
// folder `<folder of libbonsai_host.so>/bonsai/plugins`, then the build tree's
// plugin folder. Folders that do not exist are included (they simply hold
// nothing); duplicates are removed.
BONSAI_HOST_API std::vector<std::filesystem::path> plugin_search_path();

// Every libbonsai_*.so in `dirs` (default: plugin_search_path()), each loaded
// and probed. Files that fail to load are reported with load_error, never
// thrown. Sorted by folder order, then file name. A backend NAME found in an
// earlier folder shadows the same file name in later ones (both are listed).
BONSAI_HOST_API std::vector<PluginInfo> list_plugins();
BONSAI_HOST_API std::vector<PluginInfo>
list_plugins(const std::vector<std::filesystem::path> &dirs);

// Loads and probes one plugin file; never throws for a bad plugin (see
// PluginInfo::load_error).
BONSAI_HOST_API PluginInfo inspect_plugin(const std::filesystem::path &file);

// ---------------------------------------------------------------------------
// Engine
// ---------------------------------------------------------------------------

// Progress of a long operation, fraction in [0, 1]; called with 1.0 last.
using ProgressFn = std::function<void(double fraction)>;

struct EngineOptions {
  // Which plugin runs the model:
  //  - "auto": try "cuda", then "cpu"; a plugin that cannot be loaded or whose
  //    probe reports no device is skipped with one info-level log line.
  //  - "NAME": libbonsai_NAME.so from plugin_search_path(); errors are thrown.
  //  - a path (contains '/' or ends in ".so"): exactly that file.
  //  - a comma-separated list of the above ("cuda,cpu", "/a.so,/b.so"):
  //    tried in order like "auto"; the first usable one wins.
  // When nothing usable is found, PluginError lists every candidate and why.
  std::string backend = "auto";
  int32_t n_threads = 0;    // CPU worker threads for the plugin; 0 = plugin's choice
  int32_t device_index = 0; // device of the plugin to use
  // Context window (KV positions) of every session. 0 = the model's training
  // context. Larger than the context the model is made for (its training
  // context, or original context x factor with RoPE scaling): clamped to it,
  // with a warning that says how to turn scaling on. Negative: InvalidArgument.
  int32_t n_ctx = 4096;
  // Most tokens evaluated in one step (prompt is split into steps of at most
  // n_batch); >= 1, clamped to n_ctx.
  int32_t n_batch = 512;
  // Plugin-specific options, "key=value;key=value" (e.g. "kernels=reference").
  std::string plugin_options;
  // RoPE overrides for extending the context yourself, as llama.cpp's flags:
  // rope_scaling "none" | "linear" | "yarn" ("" = the file's), rope_scale the
  // context factor (0 = the file's; alone it means linear), rope_freq_base
  // (0 = the file's), yarn_orig_ctx (0 = the file's). Bad values:
  // InvalidArgument. ModelInfo::rope shows the result.
  std::string rope_scaling;
  float rope_scale = 0.0f;
  float rope_freq_base = 0.0f;
  int32_t yarn_orig_ctx = 0;
  // Weight upload progress of every new session (0 at the start, 1 when all
  // weights are in), unless SessionOptions::on_progress is set. Opening the
  // model itself is quick (mmap) and reports nothing. May be empty.
  ProgressFn on_progress;
};

// Model facts for display and validation (from the GGUF metadata).
struct ModelInfo {
  std::filesystem::path path;
  std::string name;         // general.name ("" if absent)
  std::string architecture; // general.architecture, "qwen3" or "qwen35"
  uint64_t file_bytes = 0;
  uint64_t weight_bytes = 0; // bytes of all tensors (llama-bench's "size"): the file less metadata
  uint64_t n_params = 0;     // elements of all tensors
  std::string weight_type;   // type name of layer 0's first projection, e.g. "q1_0"
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  std::string rope;          // effective RoPE: "yarn, factor 4, original context 1024, ..."
  bool tied_lm_head = false; // no output.weight: the LM head is token_embd
  // Bytes of weights one decode step reads, as stored in the file: every
  // tensor of the model but the embedding table, of which one row (all of it
  // when tied). Tensors the forward pass never uses (qwen35's MTP layers) are
  // not counted.
  uint64_t decode_weight_bytes = 0;
  int32_t n_kv_layers = 0; // layers with a KV cache: all for qwen3, the attention ones for qwen35
  // qwen35: one sequence's recurrent state (conv windows and DeltaNet states,
  // f32), which every decode step reads and writes; 0 for qwen3.
  uint64_t recurrent_state_bytes = 0;
  // qwen35: multi-token-prediction layers after the trunk
  // (nextn_predict_layers), which DraftOptions::mtp drafts with; 0 for qwen3.
  int32_t n_mtp_layers = 0;
};

// Chat turns are core's bonsai::ChatMessage {role, content} (from
// bonsai/core/chat_template.hpp), roles "system", "user", "assistant", "tool".

class Session;
struct SessionOptions;
class Batch;         // bonsai/batch.hpp
struct BatchOptions; // bonsai/batch.hpp

// A loaded model: the memory-mapped GGUF file, its tensor views, tokenizer and
// the selected plugin. Cheap to move; copies share the same loaded model.
// Sessions keep what they need alive, so an Engine may be destroyed before
// its sessions.
class BONSAI_HOST_API Engine {
public:
  // Opens `model_path`, validates it as a Qwen3 model, loads the tokenizer and
  // selects the plugin (options.backend). Weights are uploaded per session.
  // Throws ModelError, PluginError or InvalidArgument.
  static Engine open(const std::filesystem::path &model_path, const EngineOptions &options = {});

  // A new independent sequence with its own plugin context, weights bound and
  // an empty KV cache. Throws PluginError (e.g. create_context failed).
  Session create_session() const;
  Session create_session(const SessionOptions &options) const;
  // Several sequences in one plugin context, stepped together
  // (bonsai/batch.hpp). Throws PluginError, InvalidArgument.
  Batch create_batch(const BatchOptions &options) const;

  const ModelInfo &model() const;
  // The selected plugin (loaded, probed OK).
  const PluginInfo &backend() const;
  // The effective options (n_ctx after clamping, n_batch after clamping).
  const EngineOptions &options() const;
  // Milliseconds Engine::open took (mmap, validation, tokenizer, plugin).
  double load_ms() const;

  // Tokenizer access. `parse_special`: match control tokens like <|im_end|>
  // in the text. Throws InvalidArgument for invalid UTF-8.
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special = true) const;
  // Bytes of the tokens concatenated; InvalidArgument for an id out of range.
  std::string detokenize(std::span<const int32_t> tokens) const;
  // What one token decodes to (may be a partial UTF-8 sequence).
  std::string token_piece(int32_t token) const;
  int32_t n_vocab() const;
  // Default stop tokens: eos, <|im_end|>, <|endoftext|> (those present).
  std::vector<int32_t> default_stop_tokens() const;
  // The model's chat template applied to `messages` (ChatML for Qwen3); with
  // `add_generation_prompt` the assistant turn is opened. Throws
  // InvalidArgument if a role is unknown. A template that is not Qwen3's falls back to plain
  // ChatML (with a warning in the log).
  // `enable_thinking` false pre-fills an empty <think></think> block (Qwen3).
  // For display: tokenize(apply_chat_template(...)) would also turn marker
  // text inside the messages into control tokens; use tokenize_chat.
  std::string apply_chat_template(std::span<const ChatMessage> messages,
                                  bool add_generation_prompt = true,
                                  bool enable_thinking = true) const;
  // The same conversation as token ids, what generate() evaluates for
  // GenerateRequest::messages. Only the markers the template writes
  // (<|im_start|>, <|im_end|>) become control tokens; message content is
  // tokenized as plain text (as tokenize(text, false): user-defined tokens
  // such as <think> are still matched), so a message holding "<|im_end|>"
  // cannot close its turn or open another. Throws InvalidArgument for an
  // unknown role or content that is not valid UTF-8.
  std::vector<int32_t> tokenize_chat(std::span<const ChatMessage> messages,
                                     bool add_generation_prompt = true,
                                     bool enable_thinking = true) const;

  struct Impl; // internal
  explicit Engine(std::shared_ptr<const Impl> impl);
  const std::shared_ptr<const Impl> &impl() const { return impl_; }

private:
  std::shared_ptr<const Impl> impl_;
};

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

struct SessionOptions {
  // Weight upload progress; empty = EngineOptions::on_progress.
  ProgressFn on_progress;
};

// Token selection. temperature <= 0 with no penalties is greedy (computed on
// the device without copying logits). Otherwise logits are processed in this
// order: penalties, top-k, temperature, top-p, min-p, then a random draw.
struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;             // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off; > 1 discourages recent tokens
  int32_t repeat_last_n = 64;     // tokens considered by the penalties
  float presence_penalty = 0.0f;  // 0: off
  float frequency_penalty = 0.0f; // 0: off
  std::optional<uint64_t> seed;   // nullopt: random seed
  // True when these parameters select argmax (no randomness, no penalties).
  bool is_greedy() const {
    return temperature <= 0.0f && repeat_penalty == 1.0f && presence_penalty == 0.0f &&
           frequency_penalty == 0.0f;
  }
};

// Constrained decoding (docs/structured-output.md): tokens the format does
// not allow are never chosen, and the reply is finished within the tokens it
// may take, so a complete reply always follows the format.
struct ReplyFormat {
  enum class Kind {
    text,        // no constraint
    json_object, // any JSON object
    json_schema, // a JSON value valid under `schema`
    tool_calls,  // one or more calls (one unless parallel_tool_calls) of `tools`
    // Either tool_calls or one JSON value valid under `schema` (empty: any
    // object): an agent with tools that must answer in a format.
    tool_calls_or_json,
  };
  struct Tool {
    std::string name;
    std::string parameters; // JSON Schema text of the arguments; empty: any object
  };
  Kind kind = Kind::text;
  std::string schema; // json_schema: the JSON Schema, as JSON text
  std::vector<Tool> tools;
  bool parallel_tool_calls = true;
};

// Speculative decoding (docs/speculative.md): tokens proposed cheaply are
// checked by the model in one multi-token step, and the reply is what the
// model alone gives: the same tokens when greedy, the same distribution when
// sampling. Session::generate only, for now.
struct DraftOptions {
  // > 0: prompt lookup: propose the tokens that followed the most recent
  // earlier occurrence of the last `ngram` tokens of the context.
  int32_t ngram = 0;
  // Most tokens proposed per step. Within it, each step proposes the number
  // that promises the most tokens per millisecond, from the measured step
  // times and the share of proposals kept, or none when a plain step wins.
  int32_t max = 16;
  int32_t min = 1; // fewer proposals than this: a plain one-token step instead
  // false: propose `max` (what the draft offers, up to it) every step, for
  // measuring acceptance or where a verified step costs about a plain one.
  bool adaptive = true;
  // A draft model: a session of a smaller model with the same vocabulary
  // (the caller opens it; generate() takes its cache over). It proposes its
  // own next tokens; with `ngram` too, a lookup hit is proposed first.
  Session *model = nullptr;
  // qwen35: propose with the model's own multi-token-prediction (MTP)
  // layer (ModelInfo::n_mtp_layers), chained: each proposal from the layer's
  // state after the one before. Its weights are uploaded to the session the
  // first time. Not with `model`; with `ngram`, a lookup hit goes first.
  // InvalidArgument when the model has no MTP layer.
  bool mtp = false;
  // With `model` or `mtp`: stop proposing once the draft's most likely token
  // has a probability below this (0: never).
  float p_min = 0.75f;
};

struct GenerateRequest {
  // The prompt, in order of precedence: `prompt_tokens` if non-empty, else
  // `messages` if non-empty (formatted with the chat template, assistant turn
  // opened), else `prompt` (with `chat`, wrapped as one user message, after
  // `system_prompt` if non-empty).
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  std::vector<ChatMessage> messages;
  bool chat = false;
  std::string system_prompt;
  // Match <|im_start|> etc. in `prompt` when it is used as is; chat content
  // (`messages`, or `prompt` with `chat`) is always plain text.
  bool parse_special = true;
  bool enable_thinking = true; // chat: false pre-fills an empty <think></think> block
  // Most tokens a <think> block may hold before </think> is put in its place
  // (the block then ends and the answer follows); -1: no limit. Counts the
  // block the prompt opened too.
  int32_t reasoning_budget = -1;
  // Chat: tools the model may call, each as the JSON text the template lists
  // (ChatOptions::tools); assistant messages carry their calls in
  // ChatMessage::tool_calls.
  std::vector<std::string> tools;

  // false (default): the session starts over for this prompt, reusing the
  // longest prefix already in its KV cache. true: the prompt is appended after
  // what the session already holds (multi-turn chat).
  bool continue_session = false;

  // Tokens to generate at most. -1: until a stop or the context is full
  // (StopReason::context_full). If position + prompt + n_predict > n_ctx,
  // ContextFullError is thrown before any work.
  int32_t n_predict = 128;
  SamplingParams sampling;
  // Generation stops when the text contains one of these; the stop string and
  // anything after it is not part of the output (not streamed either). Not
  // with `format` (InvalidArgument): a stop could cut the value short.
  std::vector<std::string> stop_strings;
  // Tokens that end generation (not part of the output). nullopt: the model's
  // default_stop_tokens(); empty vector: none.
  std::optional<std::vector<int32_t>> stop_tokens;
  // The stop tokens cannot end the reply before it holds this many tokens
  // (their logits are masked until then; vLLM's min_tokens). Not with a
  // draft (InvalidArgument).
  int32_t min_tokens = 0;
  // Speculative decoding; none by default. Not with `format` or `logprobs`
  // yet (InvalidArgument).
  DraftOptions draft;
  // What the reply must look like. In a chat whose thinking is on, the model
  // may write its <think> block first; the format applies after it.
  ReplyFormat format;
  // Fill GenerateResult::logprobs (and Generation's steps). The logits of
  // every step are then copied to the host (greedy decoding otherwise takes
  // only the backend's argmax). See TokenLogprob for the distribution.
  bool logprobs = false;
  // With logprobs: also the most likely tokens of each step, best first
  // (0..20).
  int32_t top_logprobs = 0;
};

// A token and its natural log probability under the distribution the step
// drew from: the logits after the penalties and the reply format's mask,
// divided by the temperature (1 for greedy), before top-k, top-p and min-p.
struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
  std::string bytes; // what the token decodes to (may be part of a UTF-8 character)
};

// One generated token's log probability and the step's best alternatives.
struct StepLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top; // GenerateRequest::top_logprobs of them, best first
};

enum class StopReason {
  length,       // n_predict tokens generated
  stop_token,   // a stop token was sampled
  stop_string,  // a stop string appeared in the text
  cancelled,    // Session::cancel() or the text callback returned false
  context_full, // the context window is full (n_predict = -1)
};
// "length", "stop token", "stop string", "cancelled", "context full".
BONSAI_HOST_API std::string_view to_string(StopReason reason);

struct GenerateStats {
  double load_ms = 0;        // engine open + this session's weight upload
  int32_t prompt_tokens = 0; // prompt tokens evaluated (excludes reused prefix)
  int32_t reused_tokens = 0; // prompt tokens already in the KV cache
  double prompt_ms = 0;
  double prompt_tps = 0;  // prompt_tokens / prompt seconds (0 if none)
  int32_t gen_tokens = 0; // tokens sampled (including a stop token)
  double gen_ms = 0;      // from the first sampled token to the last
  // Decode steps per second, as llama.cpp's "eval time" counts them: the
  // first token is sampled from the prompt's logits (its cost is in
  // prompt_ms), so N tokens take N - 1 steps when the last is not fed back.
  double gen_tps = 0;    // gen_steps / gen seconds (0 if none)
  int32_t gen_steps = 0; // forward passes after the prompt (a verified draft is one)
  // Speculative decoding: tokens proposed by the draft, and of them the ones
  // the model kept.
  int32_t drafted_tokens = 0;
  int32_t accepted_tokens = 0;
  // Constrained decoding (GenerateRequest::format): tokens chosen under the
  // format, how many needed the full mask (the sampled token was refused),
  // and the time spent checking and masking.
  int32_t constrained_tokens = 0;
  int32_t constraint_masks = 0;
  double constraint_ms = 0;
};

struct GenerateResult {
  std::string text;            // generated text, without stop string/token
  std::vector<int32_t> tokens; // generated ids, without a stop token
  StopReason stop_reason = StopReason::length;
  GenerateStats stats;
  // With GenerateRequest::logprobs: for each of `tokens`, its natural log
  // probability (TokenLogprob says under which distribution), and with
  // top_logprobs the step's best alternatives.
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
};

// Receives generated text as complete UTF-8 pieces, in order; return false
// to stop (StopReason::cancelled).
using TextCallback = std::function<bool(std::string_view piece)>;

struct EvalOptions {
  bool all_logits = false; // logits of every token (true) or only the last
};

struct EvalResult {
  int32_t n_vocab = 0;
  int32_t n_outputs = 0;     // rows in `logits`
  std::vector<float> logits; // n_outputs x n_vocab, row-major
  // Row i of the logits.
  std::span<const float> row(int32_t i) const {
    return std::span<const float>(logits).subspan(static_cast<size_t>(i) * n_vocab, n_vocab);
  }
};

// One sequence: a plugin context with the model's weights and a KV cache.
// Move-only. Not thread-safe except cancel().
class BONSAI_HOST_API Session {
public:
  Session(Session &&) noexcept;
  Session &operator=(Session &&) noexcept;
  ~Session();

  // Runs `tokens` from the current position (in steps of at most n_batch)
  // and appends them to the KV cache. Returns the logits of every token or of
  // the last one. Throws InvalidArgument (empty input, id out of range),
  // ContextFullError (position + size > n_ctx), CancelledError, PluginError.
  EvalResult eval(std::span<const int32_t> tokens, const EvalOptions &options = {});
  // Like eval() but returns only the argmax of the last token's logits
  // (lowest id on ties), computed on the device when the plugin can.
  int32_t eval_argmax(std::span<const int32_t> tokens);
  // One token: eval({token}) and its logits (n_vocab floats).
  std::vector<float> decode_step(int32_t token);

  // Generates text for `request`, streaming it through `on_text` (optional).
  // Throws InvalidArgument / ContextFullError before any work when the
  // request cannot be served; PluginError if the plugin fails.
  GenerateResult generate(const GenerateRequest &request, const TextCallback &on_text = {});

  // Asks the running eval()/generate() to stop at the next layer or step
  // boundary. Thread-safe. A cancel() while nothing runs applies to the next
  // eval()/generate() of this session. The request is consumed when that call
  // returns.
  void cancel();

  // Empties the KV cache (position 0).
  void reset();
  // Keeps the first n positions (0 <= n <= position(), else InvalidArgument).
  void truncate(int32_t n);
  // Tokens in the KV cache.
  int32_t position() const;
  // The ids in the KV cache, in order (size position()).
  const std::vector<int32_t> &tokens() const;
  int32_t n_ctx() const;
  // True when the plugin runs whole layers; false when the host runs them
  // through the plugin's matmul (bind_model returned UNSUPPORTED).
  bool plugin_runs_layers() const;
  // Milliseconds this session took to create its context and upload weights.
  double upload_ms() const;

  struct Impl; // internal
  explicit Session(std::unique_ptr<Impl> impl);

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace bonsai
