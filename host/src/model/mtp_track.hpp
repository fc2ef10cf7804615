#pragma once
// What a session keeps for drafting with qwen35's MTP layer
// (docs/speculative.md, "The MTP layer as a draft"): the layer with its KV
// entries, the tokens those entries were made from, and the trunk's hidden
// states of the positions the layer has not read yet.
//
// Entry p pairs token t_p with the trunk's hidden state at p - 1 (zeros at
// p = 0), as llama.cpp's MTP draft does; its logits predict t_{p+1}. An
// entry is valid while the context still holds the tokens up to t_p, so the
// entries follow any change of the session's cache (truncation, another
// prompt) by comparing tokens, like a draft model's cache. Hidden states
// arrive as the trunk runs (run_tokens) and are read lazily: a plain step
// costs the layer nothing until a draft is asked for.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/mtp_layer.hpp"

namespace bonsai::host {

class MtpTrack {
public:
  explicit MtpTrack(std::unique_ptr<MtpLayer> layer);

  // The trunk ran positions [first, first + n) (hidden: n x n_embd).
  void trunk_ran(int32_t first, int32_t n, const float *hidden);
  // The trunk's cache was cut back to n positions.
  void trunk_truncated(int32_t n);
  // Hidden states held and not read yet.
  int32_t unread() const;
  // The trunk's cache now holds the first n positions of `other`'s (a
  // track of the same model): its entries and hidden states of them.
  void copy_prefix_of(const MtpTrack &other, int32_t n);

  // Brings the entries in line with `context` (the trunk's tokens, and with
  // `with_next` the token about to be fed, whose position has no hidden
  // state yet but whose entry reads the one before): drops the entries of
  // positions whose tokens changed, then makes an entry for every position
  // up to the last whose hidden state is known. Returns whether the last
  // position has an entry; its logits and output-normed state are then in
  // `logits` and `hidden` (when `want_last`). Counts the entries it made.
  bool sync(std::span<const int32_t> context, bool want_last, std::vector<float> &logits,
            std::vector<float> &hidden, int32_t *made = nullptr);
  // A chained entry at `position` (past every entry) from `token` and the
  // previous entry's state `h`; its logits and state replace `logits` and
  // `hidden`. Chained entries are not part of the context: drop_chained()
  // removes them.
  void chain(int32_t token, int32_t position, std::vector<float> &logits,
             std::vector<float> &hidden);
  void drop_chained();

  MtpLayer &layer() { return *layer_; }

private:
  // Rows of `rows_` for positions [rows_first_, rows_first_ + count).
  int32_t rows_end() const;
  bool has_hidden_for(int32_t position) const; // the entry's h: at position - 1
  const float *hidden_for(int32_t position) const;
  void forget_rows_before(int32_t position);

  std::unique_ptr<MtpLayer> layer_;
  int32_t n_embd_ = 0;
  std::vector<int32_t> seen_; // the context's tokens up to the last made entry's position
  int32_t chained_ = 0;       // entries made by chain() since the last sync
  std::vector<float> rows_;   // trunk hidden states, n_embd each
  int32_t rows_first_ = 0;
  std::vector<float> zeros_; // h of position 0's entry
  std::vector<int32_t> tokens_, positions_;
};

} // namespace bonsai::host
