#pragma once
// The checkpoints of a bound model (ABI 1.2 layer kinds): ids above 0 given
// out in order, each with the position it was saved at and the plugin's own
// copy of the recurrent state (host or device memory).
#include <climits>
#include <cstdint>
#include <map>
#include <utility>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

template <class State> class CheckpointStore {
public:
  struct Entry {
    int32_t position = 0;
    State state;
  };

  // OUT_OF_MEMORY naming `call` when every id has been given out; call it
  // before making the copy, so that a refusal changes nothing.
  void check_room(const char *call) const {
    if (next_ == INT32_MAX)
      fail(BONSAI_ERR_OUT_OF_MEMORY, strformat("%s: checkpoint ids are used up", call));
  }
  // Keeps a saved state; returns its id.
  int32_t add(int32_t position, State state) {
    check_room("checkpoint_save");
    const int32_t id = next_++;
    entries_.emplace(id, Entry{position, std::move(state)});
    return id;
  }
  // INVALID_ARGUMENT naming `call` for an id that is not a checkpoint.
  const Entry &at(int32_t id, const char *call) const {
    auto it = entries_.find(id);
    if (it == entries_.end())
      fail_invalid(
          strformat("%s: checkpoint %d does not exist (checkpoint_save makes them)", call, id));
    return it->second;
  }
  void erase(int32_t id, const char *call) {
    at(id, call);
    entries_.erase(id);
  }

private:
  std::map<int32_t, Entry> entries_;
  int32_t next_ = 1;
};

} // namespace bonsai::plugin
