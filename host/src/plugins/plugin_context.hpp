#pragma once
// RAII owner of one plugin context, with status checking that turns a failed
// call into a PluginError carrying the plugin's own message.
#include <memory>
#include <string>

#include "plugins/plugin_library.hpp"

namespace bonsai::host {

struct ContextConfig {
  int32_t device_index = 0;
  int32_t max_context = 0;
  int32_t max_batch = 0;
  int32_t n_threads = 0;
  std::string options; // "key=value;..."
};

class PluginContext {
public:
  // Creates the context; throws PluginError naming the file and the reason.
  PluginContext(std::shared_ptr<const PluginLibrary> library, const ContextConfig &config);
  PluginContext(const PluginContext &) = delete;
  PluginContext &operator=(const PluginContext &) = delete;
  ~PluginContext();

  bonsai_context *get() const { return context_; }
  const bonsai_backend_api &api() const { return library_->api(); }
  const PluginLibrary &library() const { return *library_; }

  // Throws PluginError "<file>: <what> failed (<status>): <last_error>"
  // unless status is OK.
  void check(bonsai_status status, const std::string &what) const;
  // The context's last error text ("" if none).
  std::string last_error() const;

private:
  // Declared first so it is destroyed last: the code must outlive the context.
  std::shared_ptr<const PluginLibrary> library_;
  bonsai_context *context_ = nullptr;
};

} // namespace bonsai::host
