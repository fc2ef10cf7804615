#pragma once
// The golden tiny models (tests/data/README.md, installed in share/bonsai) run
// through libbonsai_host with the plugin under test: the host drives the
// plugin's layers when bind_model succeeds, else its own layers over the
// plugin's matmul. Either way the logits and greedy ids must meet the gates
// of docs/abi.md, "Numerics".
#include <filesystem>
#include <string>

#include "plugin_checks.hpp"

namespace bonsai::plugin_check {

struct GoldenOptions {
  std::filesystem::path data_dir; // holds NAME.gguf, NAME.prompt.json, ...
  std::string model_name;         // "tiny-q1", "tiny-q1-tied", "tiny-q2", "tiny-q35-q1", ...
  std::string plugin_path;
  std::string plugin_options;
  bool exact = false;          // exact gates (cosine >= 0.99999, all 24 greedy ids)
  double fast_cosine = 0.9995; // else: least cosine at every position
  double fast_top1 = 0.95;     // and least top-1 agreement over the positions
  int n_threads = 2;
};

// One CheckResult named "golden NAME"; never throws (failures are recorded).
conformance::CheckResult check_golden_model(const GoldenOptions &options);

} // namespace bonsai::plugin_check
