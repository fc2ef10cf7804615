#pragma once
// The plugins' shared log sink (plugins/common), visible unqualified in this
// plugin's namespace.
#include "bonsai/plugin/logger.hpp"

namespace bonsai::cpu {
using namespace bonsai::plugin;
} // namespace bonsai::cpu
