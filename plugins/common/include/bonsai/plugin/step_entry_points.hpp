#pragma once
// The entry points every plugin writes the same way: create_context,
// last_error, and the step protocol and KV cache (ABI groups 4-6). A plugin
// names its Context type (with `magic` and `last_error`), its tag value, its
// per-call Scope and its context factory, and provides, in Context's
// namespace (found by argument-dependent lookup):
//   void step_begin(Context &, const bonsai_step_desc &);
//   void step_encode_layer(Context &, int32_t layer);
//   void step_lm_head(Context &, const bonsai_lm_head_desc &);
//   void step_end(Context &);
//   void discard_step(Context &);   // closes an open step (KV calls do)
//   std::unique_ptr<W> new_weight(Context &, const bonsai_weight_desc &);
// and Context has `weights` (a map from const W * to its unique_ptr),
// `find_weight(handle)` and `model` (null, or with a `used` set of weights
// and `slots`, a SlotTable of its KV caches: the kv_* functions act on slot 0).
// A plugin offering the sequences extension (sequences()) also provides:
//   int32_t slot_create(Context &);   // allocates a cache, SlotTable::add
//   void slot_copy(Context &, int32_t from, int32_t to, int32_t n_positions);
//   void step_begin_batch(Context &, const bonsai_batch_step_desc &);
// A plugin offering the layer-kinds extension (layer_kinds()) also provides:
//   void bind_layered(Context &, const bonsai_layered_model_desc &);
//   uint64_t recurrent_state_bytes(const Context &);
//   int32_t checkpoint_save(Context &, int32_t slot);
//   void checkpoint_restore(Context &, int32_t checkpoint, int32_t slot);
//   void checkpoint_free(Context &, int32_t checkpoint);
//   int32_t checkpoint_position(const Context &, int32_t checkpoint);
// A plugin offering the hidden-states extension (hidden_states()) also provides:
//   void step_hidden_states(Context &, const bonsai_hidden_states_desc &);
// Each may throw PluginError; the entry points turn that into a status.
#include <cstdint>
#include <memory>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/entry_guard.hpp"
#include "bonsai/plugin/sequence_checks.hpp"
#include "bonsai/plugin/slot_table.hpp"

namespace bonsai::plugin {

template <class Context, uint64_t Tag, class Scope,
          std::unique_ptr<Context> (*MakeContext)(const bonsai_context_desc &)>
struct EntryPoints {
  // What only the plugin itself can write: its identity and the functions
  // of groups 1-3 and bind_model that the common ones above do not cover.
  struct Own {
    const char *name;
    const char *version;
    const char *description;
    bonsai_status (*probe)(bonsai_device_info *);
    void (*destroy_context)(bonsai_context *);
    bonsai_status (*supports_type)(const bonsai_context *, uint32_t);
    bonsai_status (*matmul)(bonsai_context *, const bonsai_matmul_desc *);
    bonsai_status (*bind_model)(bonsai_context *, const bonsai_model_desc *);
    const bonsai_extension *extensions;
  };

  // The plugin's whole API table, built against this header's ABI version.
  static constexpr bonsai_backend_api table(const Own &own) {
    return bonsai_backend_api{sizeof(bonsai_backend_api),
                              BONSAI_ABI_MAJOR,
                              BONSAI_ABI_MINOR,
                              own.name,
                              own.version,
                              own.description,
                              own.probe,
                              create_context,
                              own.destroy_context,
                              last_error,
                              own.supports_type,
                              upload_weight,
                              free_weight,
                              own.matmul,
                              own.bind_model,
                              begin_step,
                              encode_layer,
                              lm_head,
                              end_step,
                              reset,
                              truncate,
                              length,
                              own.extensions};
  }

  // The sequences extension over the plugin's slot and batch functions, for
  // the table's `extensions` chain (keep it in static storage); `next` is the
  // chain's next extension.
  static constexpr bonsai_sequences_extension sequences(const bonsai_extension *next = nullptr) {
    return bonsai_sequences_extension{
        {sizeof(bonsai_sequences_extension), BONSAI_EXTENSION_SEQUENCES, next},
        kMaxSlots,
        create_slot,
        free_slot,
        truncate_slot,
        copy_slot,
        length_of_slot,
        begin_batch};
  }

  // The layer-kinds extension (ABI 1.2) over the plugin's bind and
  // checkpoint functions; `supports_mixer` needs no context, so the plugin
  // gives it as it is.
  static constexpr bonsai_layer_kinds_extension
  layer_kinds(bonsai_status (*supports_mixer)(uint32_t), const bonsai_extension *next = nullptr) {
    return bonsai_layer_kinds_extension{
        {sizeof(bonsai_layer_kinds_extension), BONSAI_EXTENSION_LAYER_KINDS, next},
        supports_mixer,
        bind_layered_model,
        state_size,
        save_checkpoint,
        restore_checkpoint,
        free_checkpoint,
        position_of_checkpoint};
  }

  // The hidden-states extension (ABI 1.3) over the plugin's
  // step_hidden_states.
  static constexpr bonsai_hidden_states_extension
  hidden_states(const bonsai_extension *next = nullptr) {
    return bonsai_hidden_states_extension{
        {sizeof(bonsai_hidden_states_extension), BONSAI_EXTENSION_HIDDEN_STATES, next},
        read_hidden_states};
  }

  static Context *live(bonsai_context *handle) { return live_context<Context, Tag>(handle); }
  static const Context *live(const bonsai_context *handle) {
    return live_context<const Context, Tag>(handle);
  }

  static bonsai_status create_context(const bonsai_context_desc *desc, bonsai_context **out,
                                      char *error_text, size_t error_text_size) {
    return guarded_create(desc, out, error_text, error_text_size, [](const bonsai_context_desc &d) {
      return reinterpret_cast<bonsai_context *>(MakeContext(d).release());
    });
  }
  static bonsai_status upload_weight(bonsai_context *handle, const bonsai_weight_desc *desc,
                                     bonsai_weight **out) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      if (out == nullptr)
        fail_invalid("upload_weight: out is NULL");
      *out = nullptr;
      auto weight = new_weight(ctx, read_abi_struct(desc, "upload_weight: desc"));
      auto *raw = weight.get();
      ctx.weights.emplace(raw, std::move(weight));
      *out = reinterpret_cast<bonsai_weight *>(raw);
    });
  }
  static bonsai_status free_weight(bonsai_context *handle, bonsai_weight *weight) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      const auto *w = ctx.find_weight(weight);
      if (w == nullptr)
        fail_invalid("free_weight: the handle is not a weight of this context");
      if (ctx.model && ctx.model->used.count(w) != 0)
        fail_state("free_weight: " + w->label() + " is part of the bound model");
      ctx.weights.erase(w);
    });
  }
  static const char *last_error(const bonsai_context *handle) {
    const Context *ctx = live(handle);
    return ctx == nullptr ? "invalid context handle" : ctx->last_error.c_str();
  }
  static bonsai_status begin_step(bonsai_context *handle, const bonsai_step_desc *step) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      step_begin(ctx, read_abi_struct(step, "begin_step: step"));
    });
  }
  static bonsai_status encode_layer(bonsai_context *handle, int32_t layer) {
    return guarded<Scope>(live(handle), [layer](Context &ctx) { step_encode_layer(ctx, layer); });
  }
  static bonsai_status lm_head(bonsai_context *handle, const bonsai_lm_head_desc *desc) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      step_lm_head(ctx, read_abi_struct(desc, "lm_head: desc"));
    });
  }
  static bonsai_status read_hidden_states(bonsai_context *handle,
                                          const bonsai_hidden_states_desc *desc) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      step_hidden_states(ctx, read_abi_struct(desc, "hidden_states: desc"));
    });
  }
  static bonsai_status end_step(bonsai_context *handle) {
    return guarded<Scope>(live(handle), [](Context &ctx) { step_end(ctx); });
  }
  static bonsai_status reset(bonsai_context *handle) {
    return guarded<Scope>(live(handle), [](Context &ctx) {
      auto &own = bound_model(ctx, "kv_reset").slots.own();
      discard_step(ctx);
      cut_back(own, 0);
    });
  }
  static bonsai_status truncate(bonsai_context *handle, int32_t n_keep) {
    return guarded<Scope>(live(handle), [n_keep](Context &ctx) {
      auto &own = bound_model(ctx, "kv_truncate").slots.own();
      check_truncate(n_keep, own.length, "kv_truncate");
      discard_step(ctx);
      cut_back(own, n_keep);
    });
  }
  static bonsai_status length(const bonsai_context *handle, int32_t *out) {
    return guarded<Scope>(live(handle), [out](const Context &ctx) {
      if (out == nullptr)
        fail_invalid("kv_length: length is NULL");
      *out = bound_model(ctx, "kv_length").slots.own().length;
    });
  }

  static bonsai_status create_slot(bonsai_context *handle, int32_t *slot) {
    return guarded<Scope>(live(handle), [slot](Context &ctx) {
      if (slot == nullptr)
        fail_invalid("slot_create: slot is NULL");
      *slot = slot_create(ctx);
    });
  }
  static bonsai_status free_slot(bonsai_context *handle, int32_t slot) {
    return guarded<Scope>(live(handle), [slot](Context &ctx) {
      auto &slots = bound_model(ctx, "slot_free").slots;
      slots.check_removable(slot);
      // The open step's queued work may still use the cache: close it first.
      discard_step(ctx);
      slots.remove(slot);
    });
  }
  static bonsai_status truncate_slot(bonsai_context *handle, int32_t slot, int32_t n_keep) {
    return guarded<Scope>(live(handle), [=](Context &ctx) {
      auto &cache = bound_model(ctx, "slot_truncate").slots.at(slot, "slot_truncate");
      check_truncate(n_keep, cache.length, "slot_truncate");
      discard_step(ctx);
      cut_back(cache, n_keep);
    });
  }
  static bonsai_status copy_slot(bonsai_context *handle, int32_t from, int32_t to,
                                 int32_t n_positions) {
    return guarded<Scope>(live(handle),
                          [=](Context &ctx) { slot_copy(ctx, from, to, n_positions); });
  }
  static bonsai_status length_of_slot(const bonsai_context *handle, int32_t slot, int32_t *length) {
    return guarded<Scope>(live(handle), [=](const Context &ctx) {
      if (length == nullptr)
        fail_invalid("slot_length: length is NULL");
      *length = bound_model(ctx, "slot_length").slots.at(slot, "slot_length").length;
    });
  }
  static bonsai_status begin_batch(bonsai_context *handle, const bonsai_batch_step_desc *batch) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      step_begin_batch(ctx, read_abi_struct(batch, "begin_batch: batch"));
    });
  }

  static bonsai_status bind_layered_model(bonsai_context *handle,
                                          const bonsai_layered_model_desc *model) {
    return guarded<Scope>(live(handle), [&](Context &ctx) {
      bind_layered(ctx,
                   read_abi_struct(model, "bind_layered_model: model", kLayeredModelDescV12Size));
    });
  }
  static bonsai_status state_size(const bonsai_context *handle, uint64_t *bytes) {
    return guarded<Scope>(live(handle), [bytes](const Context &ctx) {
      if (bytes == nullptr)
        fail_invalid("state_bytes: bytes is NULL");
      *bytes = recurrent_state_bytes(ctx);
    });
  }
  static bonsai_status save_checkpoint(bonsai_context *handle, int32_t slot, int32_t *checkpoint) {
    return guarded<Scope>(live(handle), [slot, checkpoint](Context &ctx) {
      if (checkpoint == nullptr)
        fail_invalid("checkpoint_save: checkpoint is NULL");
      *checkpoint = checkpoint_save(ctx, slot);
    });
  }
  static bonsai_status restore_checkpoint(bonsai_context *handle, int32_t checkpoint,
                                          int32_t slot) {
    return guarded<Scope>(live(handle),
                          [=](Context &ctx) { checkpoint_restore(ctx, checkpoint, slot); });
  }
  static bonsai_status free_checkpoint(bonsai_context *handle, int32_t checkpoint) {
    return guarded<Scope>(live(handle), [=](Context &ctx) { checkpoint_free(ctx, checkpoint); });
  }
  static bonsai_status position_of_checkpoint(const bonsai_context *handle, int32_t checkpoint,
                                              int32_t *position) {
    return guarded<Scope>(live(handle), [=](const Context &ctx) {
      if (position == nullptr)
        fail_invalid("checkpoint_position: position is NULL");
      *position = checkpoint_position(ctx, checkpoint);
    });
  }
};

} // namespace bonsai::plugin
