#pragma once
// How a session runs the model, independent of who runs the layers: the
// plugin (bind_model accepted) or the host itself through the plugin's
// matmul (bind_model returned UNSUPPORTED).
#include <atomic>
#include <cstdint>
#include <span>

namespace bonsai::host {

// What the LM head produces for one step: rows [first, first + count) of the
// step's tokens. count == 0: no LM head at all (prompt steps before the last).
struct StepOutputs {
  int32_t first = 0;
  int32_t count = 0;
  float *logits = nullptr;   // count x n_vocab, or NULL
  int32_t *argmax = nullptr; // count ids (lowest id wins ties), or NULL
  // Every token's last hidden state after the final norm (what the LM head
  // multiplies), n_tokens x n_embd, or NULL: what an MTP draft reads.
  float *hidden = nullptr;
  // The caller may cut this step's tokens back (it verifies drafted
  // tokens): a runner with recurrent state keeps a checkpoint from before
  // the step, so that a cut replays only the tokens kept, not everything
  // since the last checkpoint.
  bool may_cut_back = false;
};

class ForwardRunner {
public:
  virtual ~ForwardRunner() = default;

  // Appends `tokens` (1..max_batch, ids already validated) at positions
  // kv_length()... and fills `outputs`. Returns false when `cancel` was seen
  // between layers: the step is then dropped and kv_length() is unchanged.
  // Throws PluginError when a plugin call fails.
  virtual bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                        const std::atomic<bool> &cancel) = 0;

  // Keeps the first n_keep positions (0 empties the cache).
  virtual void truncate(int32_t n_keep) = 0;

  virtual int32_t kv_length() const = 0;

  // Whether run_step can fill StepOutputs::hidden (a plugin that runs the
  // layers needs the ABI 1.3 hidden-states extension).
  virtual bool gives_hidden_states() const = 0;
};

} // namespace bonsai::host
