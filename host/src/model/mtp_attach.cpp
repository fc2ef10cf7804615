#include "model/mtp_attach.hpp"

#include <fmt/format.h>

#include "model/host_projection.hpp"
#include "model/model_upload.hpp"
#include "model/session_impl.hpp"

namespace bonsai::host {

void check_mtp_usable(const Engine::Impl &engine, bool gives_hidden, const std::string &backend,
                      const char *what) {
  if (!engine.mtp)
    throw InvalidArgument(
        fmt::format("{}: the MTP draft needs the model's MTP layer: {}", what, engine.mtp_problem));
  if (!gives_hidden)
    throw InvalidArgument(fmt::format(
        "{}: the MTP draft reads the model's hidden states, which backend {} does not give (it "
        "has no ABI 1.3 hidden-states extension)",
        what, backend));
}

MtpHandles upload_mtp(const Engine::Impl &engine, const PluginContext &context,
                      const bonsai_weight *lm_head) {
  return binding::bind_mtp(
      *engine.mtp,
      [&](const TensorView &tensor) { return upload_tensor(context, engine.mapping, tensor); },
      lm_head);
}

std::unique_ptr<MtpTrack> make_mtp_track(const Engine::Impl &engine, const PluginContext &context,
                                         const MtpHandles &handles) {
  auto layer = std::make_unique<MtpLayer>(
      engine.spec, *engine.mtp, handles,
      [&context](const bonsai_weight *weight, int32_t n_tokens, const float *x, float *y) {
        plugin_matmul(context, weight, n_tokens, x, y, "matmul (MTP layer)");
      },
      MtpLayerConfig{engine.options.n_ctx, engine.options.n_batch});
  return std::make_unique<MtpTrack>(std::move(layer));
}

} // namespace bonsai::host

namespace bonsai {

host::MtpTrack &Session::Impl::attach_mtp(const char *what) {
  if (mtp)
    return *mtp;
  host::check_mtp_usable(*engine, runner->gives_hidden_states(), context->library().name(), what);
  mtp = host::make_mtp_track(*engine, *context,
                             host::upload_mtp(*engine, *context, weights.desc.lm_head));
  return *mtp;
}

} // namespace bonsai
