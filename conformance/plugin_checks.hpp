#pragma once
// The plugin conformance checks: they load any backend plugin and hold it to
// the ABI contract (abi/include/bonsai/bonsai_backend.h, docs/abi.md) and the
// numerics contract (docs/abi.md, "Numerics"). Independent of any test framework,
// so the same checks back the GoogleTest suite and a standalone checker.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plugin_loader.hpp"

namespace bonsai::conformance {

struct CheckOptions {
  std::string plugin_path;
  std::string context_options; // passed to create_context (e.g. "kernels=reference")
  // Hold results to the exact-path tolerances (f32 math against the float64
  // oracle) instead of the fast-path ones.
  bool exact = false;
  int n_threads = 2;
  uint64_t seed = 20240611;
};

// True when the options select the plugin's exact kernels ("kernels=reference").
bool options_select_exact_kernels(const std::string &context_options);

// The outcome of one check: failures are complete sentences with the numbers
// that failed; notes carry measured values worth printing.
struct CheckResult {
  explicit CheckResult(std::string check_name) : name(std::move(check_name)) {}

  std::string name;
  bool skipped = false;
  std::vector<std::string> failures;
  std::vector<std::string> notes;

  bool passed() const { return failures.empty(); }
  void fail(std::string message) { failures.push_back(std::move(message)); }
  void note(std::string message) { notes.push_back(std::move(message)); }
  // Records a failure when `condition` is false; returns the condition.
  bool expect(bool condition, const std::string &message) {
    if (!condition)
      fail(message);
    return condition;
  }
  std::string summary() const; // every failure and note, one per line
};

// "0.99987654": cosines need more digits than std::to_string gives.
std::string format_cosine(double cosine);

// Weight types the checks know (ggml ids): F32, F16, Q8_0, BF16, Q1_0, Q2_0.
const std::vector<uint32_t> &known_weight_types();

class PluginChecker {
public:
  // Loads the plugin; throws std::runtime_error when it cannot be loaded.
  explicit PluginChecker(CheckOptions options);
  ~PluginChecker();

  const CheckOptions &options() const { return options_; }
  const bonsai_backend_api &api() const { return library_->api(); }
  // True when create_context accepts the options and the type is supported.
  bool supports(uint32_t type) const;
  // Empty when the checks that need a context can run; else why not: the
  // API table is shorter than ABI 1.0's (its tail must not be called) or
  // probe finds no device.
  std::string context_skip_reason() const;

  CheckResult api_table() const;                 // versions, names, function pointers
  CheckResult exported_symbols() const;          // exactly one dynamic symbol
  CheckResult probe() const;                     // device info, NO_DEVICE rules
  CheckResult matmul(uint32_t type) const;       // vs dequantize x float64 dot
  CheckResult layer_encode(uint32_t type) const; // small random model vs float64 forward
  CheckResult kv_truncate_redecode() const;      // same logits after truncation
  CheckResult argmax_matches_logits() const;     // ids == argmax(logits), ties -> lowest
  CheckResult error_paths() const;               // NULLs, sizes, handles, order
  CheckResult multi_sequence_step() const;       // batched == each sequence alone (ABI 1.1)
  CheckResult kv_slots() const;                  // slot copy, truncate, free, misuse (ABI 1.1)

  // The checks that need a context on a device, by name, in run order.
  struct NamedCheck {
    std::string name;
    std::function<CheckResult()> run;
  };
  std::vector<NamedCheck> device_checks() const;

  std::vector<CheckResult> run_all() const;

private:
  CheckOptions options_;
  std::unique_ptr<test::PluginLibrary> library_;
};

} // namespace bonsai::conformance
