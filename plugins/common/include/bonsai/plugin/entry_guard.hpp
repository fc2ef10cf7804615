#pragma once
// The frame every ABI entry point of a plugin shares: the context handle
// check, exception-to-status translation with last_error, and
// create_context's error buffer. No exception leaves a function wrapped in
// it. Decided once for every plugin: a call that succeeds clears last_error.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

// The plugin's context behind a handle, or nullptr when the handle is NULL or
// not a live context: Ctx carries `uint64_t magic`, equal to Tag while alive
// (a best-effort check against stale or foreign pointers).
template <class Ctx, uint64_t Tag> Ctx *live_context(bonsai_context *handle) {
  Ctx *ctx = reinterpret_cast<Ctx *>(handle);
  return ctx != nullptr && ctx->magic == Tag ? ctx : nullptr;
}
template <class Ctx, uint64_t Tag> const Ctx *live_context(const bonsai_context *handle) {
  const Ctx *ctx = reinterpret_cast<const Ctx *>(handle);
  return ctx != nullptr && ctx->magic == Tag ? ctx : nullptr;
}

// Per-call setup a plugin may need around every call (the CUDA plugin makes
// its device context current); this one does nothing.
struct NoCallScope {
  template <class Ctx> explicit NoCallScope(const Ctx &) {}
};

// Runs body(*ctx) inside Scope(*ctx). Failures become a status plus
// ctx->last_error (a mutable std::string); success clears last_error. A NULL
// ctx (see live_context) is INVALID_ARGUMENT.
template <class Scope = NoCallScope, class Ctx, class Body>
bonsai_status guarded(Ctx *ctx, Body &&body) {
  if (ctx == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
  try {
    Scope scope(*ctx);
    body(*ctx);
    ctx->last_error.clear();
    return BONSAI_OK;
  } catch (const PluginError &e) {
    ctx->last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc &) {
    ctx->last_error = "out of host memory";
    return BONSAI_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    ctx->last_error = std::string("internal error: ") + e.what();
    return BONSAI_ERR_INTERNAL;
  } catch (...) {
    ctx->last_error = "internal error: unknown exception";
    return BONSAI_ERR_INTERNAL;
  }
}

// create_context's frame: *out = make(desc) (a bonsai_context *), or NULL
// with the reason written to error_text (truncated to error_text_size).
template <class Make>
bonsai_status guarded_create(const bonsai_context_desc *desc, bonsai_context **out,
                             char *error_text, size_t error_text_size, Make &&make) {
  const auto write_error = [&](const char *message) {
    if (error_text != nullptr && error_text_size > 0)
      std::snprintf(error_text, error_text_size, "%s", message);
  };
  if (out == nullptr) {
    write_error("create_context: out is NULL");
    return BONSAI_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  try {
    *out = make(read_abi_struct(desc, "create_context: desc"));
    return BONSAI_OK;
  } catch (const PluginError &e) {
    write_error(e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    write_error("create_context: out of host memory");
    return BONSAI_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    write_error(e.what());
    return BONSAI_ERR_INTERNAL;
  } catch (...) {
    write_error("create_context: unknown internal error");
    return BONSAI_ERR_INTERNAL;
  }
}

} // namespace bonsai::plugin
