#pragma once
// Putting qwen35's MTP layer to work in a plugin context: whether the model
// and the backend allow it, its matrices uploaded, and a track (a layer with
// its own KV entries) per sequence. Session::Impl::attach_mtp does it for a
// session, SlotBatchRunner for each sequence of a Batch.
#include <memory>
#include <string>

#include "model/engine_impl.hpp"
#include "model/mtp_track.hpp"
#include "plugins/plugin_context.hpp"

namespace bonsai::host {

// Throws InvalidArgument, naming `what`, when the model has no usable MTP
// layer or the backend `backend` gives no hidden states (`gives_hidden`).
void check_mtp_usable(const Engine::Impl &engine, bool gives_hidden, const std::string &backend,
                      const char *what);

// Uploads the MTP layer's matrices into `context`, whose LM head is
// `lm_head`. Throws PluginError.
MtpHandles upload_mtp(const Engine::Impl &engine, const PluginContext &context,
                      const bonsai_weight *lm_head);

// A track whose layer runs through `context`'s matmul (which outlives it),
// with room for the engine's context window.
std::unique_ptr<MtpTrack> make_mtp_track(const Engine::Impl &engine, const PluginContext &context,
                                         const MtpHandles &handles);

} // namespace bonsai::host
