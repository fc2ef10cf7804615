#pragma once
// What an Engine holds: the mapped model, its spec and tokenizer, and the
// selected plugins. Immutable after Engine::open (but for which plugin is
// active), shared by every session.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/core/chat_template.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/token_constraint.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "bonsai/engine.hpp"
#include "plugins/plugin_catalog.hpp"

namespace bonsai {

struct Engine::Impl {
  EngineOptions options; // effective values (n_ctx, n_batch clamped)
  // The file's mapping must outlive `spec` (views into it) and every
  // session's uploaded weights (uploaded with
  // BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT); sessions hold a shared_ptr to this
  // Impl, which guarantees both. The parsed gguf::File itself is not kept:
  // its metadata (vocabulary and merges, ~20 MB for Qwen3) is only needed
  // while the spec and the tokenizer are built.
  std::shared_ptr<const void> mapping;
  std::string path;
  ModelSpec spec;
  // qwen35's MTP layer (views into the mapping, nothing uploaded) when the
  // file has a usable one; else why not, for a request that drafts with it.
  std::optional<MtpWeights> mtp;
  std::string mtp_problem;
  Tokenizer tokenizer;
  ChatTemplateKind chat_template = ChatTemplateKind::ChatMLFallback;
  // Why the template fell back to plain ChatML ("" if it did not); logged
  // once, when a template is first applied, not on every open.
  std::string chat_template_warning;
  mutable std::once_flag chat_template_warned;
  ModelInfo model;
  // The usable plugins in the order to try them (docs/cli.md, "--backend"):
  // the first is the choice; a session that cannot load the model on the
  // active one moves `active` on to the next, for itself and later sessions.
  std::vector<host::SelectedPlugin> plugins;
  mutable std::atomic<size_t> active{0};
  double load_ms = 0;

  const host::SelectedPlugin &plugin() const { return plugins[active.load()]; }

  Impl(const gguf::File &file, ModelSpec spec, Tokenizer tokenizer)
      : mapping(file.mapping_handle()), path(file.path()), spec(std::move(spec)),
        tokenizer(std::move(tokenizer)) {}

  int32_t n_vocab() const { return static_cast<int32_t>(spec.hparams.n_vocab); }
  // The vocabulary sorted for constrained decoding, built on first use
  // (~30 ms for Qwen3) and shared by every request: it is read-only.
  std::shared_ptr<const TokenIndex> token_index() const {
    std::call_once(token_index_built,
                   [&] { token_index_ = std::make_shared<const TokenIndex>(tokenizer); });
    return token_index_;
  }
  mutable std::once_flag token_index_built;
  mutable std::shared_ptr<const TokenIndex> token_index_;
  // Renders `messages` with the model's template; InvalidArgument for an
  // unknown role.
  ChatPrompt render_chat(std::span<const ChatMessage> messages, const ChatOptions &options) const;
  // The rendered conversation as ids, control tokens only where the template
  // put them; InvalidArgument for an unknown role or invalid UTF-8.
  std::vector<int32_t> tokenize_chat(std::span<const ChatMessage> messages,
                                     const ChatOptions &options) const;
  // Throws InvalidArgument for ids outside [0, n_vocab).
  void check_tokens(std::span<const int32_t> tokens, const char *what) const;
};

} // namespace bonsai
