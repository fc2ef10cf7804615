#pragma once
// Byte-level BPE on token ids: a piece starts as one token per byte and the
// adjacent pair with the best (lowest) merge rank is merged until none is left.
#include <cstdint>
#include <string_view>
#include <vector>

namespace bonsai::tokenizer_detail {

struct Merge {
  uint32_t rank;
  int32_t merged; // id of the token the pair becomes
};

// Open-addressing hash table (left id, right id) -> Merge: the lookup is the
// inner loop of BPE, so it avoids std::unordered_map's node chasing.
class MergeTable {
public:
  void reserve(size_t n_merges);
  // Returns false when the pair is already present (a duplicate merge line).
  bool insert(int32_t left, int32_t right, Merge merge);
  const Merge *find(int32_t left, int32_t right) const;

private:
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key_of(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const;
  void grow();
  bool place(const Slot &slot);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

// Reusable buffers for one encode call (BPE itself is stateless).
struct BpeScratch {
  struct Symbol {
    int32_t id;   // -1 once merged into its left neighbour
    int32_t prev; // index of the previous live symbol or -1
    int32_t next; // index of the next live symbol or -1
  };
  struct Candidate {
    uint32_t rank;
    int32_t left; // symbol index
    int32_t left_id;
    int32_t right_id;
    int32_t merged;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

// Appends the BPE tokens of one pre-token. `byte_tokens[b]` is the id of the
// single-byte token for byte b.
void bpe_encode(std::string_view piece, const int32_t (&byte_tokens)[256], const MergeTable &merges,
                BpeScratch &scratch, std::vector<int32_t> &out);

} // namespace bonsai::tokenizer_detail
