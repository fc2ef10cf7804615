// GET /metrics. The load gauges are read from the scheduler when the page
// is rendered, on the I/O thread: the scheduler's lock is held only for a
// few assignments, never across a step, so a scrape does not wait for one.
#include "server_impl.hpp"

namespace bonsai::server {

HttpResponse metrics_answer(const Server::Impl &impl) {
  std::optional<LoadGauges> load;
  std::string model;
  {
    // Set once by the loader, then kept until the Server is destroyed
    // (also while it drains, when the load matters most).
    std::lock_guard lock(impl.mutex);
    if (impl.scheduler)
      load = impl.scheduler->load();
    model = impl.model_id;
  }
  return HttpResponse(200, impl.metrics.render(load, model),
                      "text/plain; version=0.0.4; charset=utf-8");
}

} // namespace bonsai::server
