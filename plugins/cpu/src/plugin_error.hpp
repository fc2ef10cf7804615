#pragma once
// The plugins' shared error helpers (plugins/common), visible unqualified in
// this plugin's namespace.
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::cpu {
using namespace bonsai::plugin;
} // namespace bonsai::cpu
