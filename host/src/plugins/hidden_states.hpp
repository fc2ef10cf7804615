#pragma once
// The ABI 1.3 hidden-states extension as the host uses it: the output-normed
// last hidden states of a step's tokens, which an MTP draft reads.
#include "bonsai/bonsai_backend.h"

namespace bonsai::host {

// The plugin's hidden-states extension when it offers a usable one, else
// nullptr.
const bonsai_hidden_states_extension *hidden_states_extension(const bonsai_backend_api &api);

} // namespace bonsai::host
