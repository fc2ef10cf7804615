#include "plugins/plugin_context.hpp"

#include <cstring>

#include <fmt/format.h>

#include "common/log_internal.hpp"

namespace bonsai::host {

PluginContext::PluginContext(std::shared_ptr<const PluginLibrary> library,
                             const ContextConfig &config)
    : library_(std::move(library)) {
  bonsai_context_desc desc{};
  desc.struct_size = sizeof desc;
  desc.device_index = config.device_index;
  desc.max_context = config.max_context;
  desc.max_batch = config.max_batch;
  desc.n_threads = config.n_threads;
  desc.log = &plugin_log_sink;
  // The library object outlives the context, so its name is a stable pointer.
  desc.log_user_data = const_cast<char *>(library_->name_cstr());
  desc.log_level = plugin_log_level();
  desc.options = config.options.c_str();

  char error_text[512] = {};
  bonsai_context *context = nullptr;
  const bonsai_status status =
      library_->api().create_context(&desc, &context, error_text, sizeof error_text);
  if (status != BONSAI_OK || context == nullptr) {
    if (context != nullptr)
      library_->api().destroy_context(context);
    const std::string reason(error_text, strnlen(error_text, sizeof error_text));
    library_->fail(fmt::format("create_context failed ({}){}", status_name(status),
                               reason.empty() ? "" : ": " + reason));
  }
  context_ = context;
}

PluginContext::~PluginContext() {
  if (context_ != nullptr)
    library_->api().destroy_context(context_);
}

std::string PluginContext::last_error() const {
  const char *text = library_->api().last_error(context_);
  return text != nullptr ? std::string(text, strnlen(text, 4096)) : std::string();
}

void PluginContext::check(bonsai_status status, const std::string &what) const {
  if (status == BONSAI_OK)
    return;
  const std::string reason = last_error();
  library_->fail(fmt::format("{} failed ({}){}", what, status_name(status),
                             reason.empty() ? "" : ": " + reason));
}

} // namespace bonsai::host
