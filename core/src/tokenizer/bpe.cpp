#include "bpe.hpp"

#include <algorithm>

namespace bonsai::tokenizer_detail {

void MergeTable::reserve(size_t n_merges) {
  size_t capacity = 16;
  int bits = 4;
  // Load factor <= 0.75 keeps linear-probe chains short (Qwen3: 151,387
  // merges in 262,144 slots, 4 MiB); at <= 0.5 the table took 8 MiB for the
  // same encode speed (bench_tokenizer).
  while (capacity * 3 < n_merges * 4) {
    capacity *= 2;
    ++bits;
  }
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  shift_ = 64 - bits;
  size_ = 0;
}

size_t MergeTable::slot_of(uint64_t key) const {
  // Fibonacci hashing: the top bits of the product mix every bit of the key.
  return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
}

void MergeTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  reserve(std::max<size_t>(size_ + 1, old.size())); // at least doubles the capacity
  for (const Slot &slot : old)
    if (slot.key != kEmpty)
      place(slot);
}

bool MergeTable::place(const Slot &slot) {
  for (size_t i = slot_of(slot.key);; i = (i + 1) & mask_) {
    if (slots_[i].key == slot.key)
      return false;
    if (slots_[i].key == kEmpty) {
      slots_[i] = slot;
      ++size_;
      return true;
    }
  }
}

bool MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 4 > slots_.size() * 3) // the load factor of reserve()
    grow();
  return place(Slot{key_of(left, right), merge});
}

const Merge *MergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty())
    return nullptr;
  const uint64_t key = key_of(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    if (slots_[i].key == key)
      return &slots_[i].merge;
    if (slots_[i].key == kEmpty)
      return nullptr;
  }
}

namespace {

using Candidate = BpeScratch::Candidate;

// Min-heap order: best rank first; among equal ranks the leftmost pair, which
// is how Hugging Face resolves overlapping pairs such as "a a a".
bool worse(const Candidate &a, const Candidate &b) {
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

void push_candidate(int32_t left, BpeScratch &s, const MergeTable &merges) {
  if (left < 0)
    return;
  const int32_t right = s.symbols[left].next;
  if (right < 0)
    return;
  const int32_t left_id = s.symbols[left].id;
  const int32_t right_id = s.symbols[right].id;
  const Merge *m = merges.find(left_id, right_id);
  if (m == nullptr)
    return;
  s.heap.push_back(Candidate{m->rank, left, left_id, right_id, m->merged});
  std::push_heap(s.heap.begin(), s.heap.end(), worse);
}

} // namespace

namespace {

// Pieces up to this many bytes use the array scan below; longer ones the heap,
// whose O(n log n) keeps pathological inputs (100 KB of letters) linear-ish.
constexpr size_t kShortPiece = 24;

// Short pieces (nearly all words): keep the pair ranks in an array and merge
// the best pair until none is left. O(n^2) in theory, but n is a handful of
// bytes and this touches no heap and no linked list.
void bpe_short(std::string_view piece, const int32_t (&byte_tokens)[256], const MergeTable &merges,
               std::vector<int32_t> &out) {
  constexpr uint32_t kNone = ~uint32_t{0};
  int32_t ids[kShortPiece];
  uint32_t ranks[kShortPiece]; // ranks[i]: pair (ids[i], ids[i + 1])
  int32_t merged[kShortPiece];
  size_t n = piece.size();
  for (size_t i = 0; i < n; ++i)
    ids[i] = byte_tokens[static_cast<unsigned char>(piece[i])];
  const auto rank_pair = [&](size_t i) {
    const Merge *m = merges.find(ids[i], ids[i + 1]);
    ranks[i] = m ? m->rank : kNone;
    merged[i] = m ? m->merged : -1;
  };
  for (size_t i = 0; i + 1 < n; ++i)
    rank_pair(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) // strict: the leftmost of equal ranks wins
        best = i;
    if (ranks[best] == kNone)
      break;
    ids[best] = merged[best];
    for (size_t i = best + 1; i + 1 < n; ++i) {
      ids[i] = ids[i + 1];
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0)
      rank_pair(best - 1);
    if (best + 1 < n)
      rank_pair(best);
  }
  out.insert(out.end(), ids, ids + n);
}

} // namespace

void bpe_encode(std::string_view piece, const int32_t (&byte_tokens)[256], const MergeTable &merges,
                BpeScratch &s, std::vector<int32_t> &out) {
  if (piece.size() <= kShortPiece) {
    bpe_short(piece, byte_tokens, merges, out);
    return;
  }
  const auto n = static_cast<int32_t>(piece.size());
  s.symbols.resize(piece.size());
  for (int32_t i = 0; i < n; ++i)
    s.symbols[i] = {byte_tokens[static_cast<unsigned char>(piece[i])], i - 1,
                    i + 1 < n ? i + 1 : -1};
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i)
    push_candidate(i, s, merges);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), worse);
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    // Entries are never removed when a neighbour changes; a stale one is
    // recognised because one of its two symbols no longer holds the same id.
    auto &left = s.symbols[c.left];
    if (left.id != c.left_id || left.next < 0 || s.symbols[left.next].id != c.right_id)
      continue;
    auto &right = s.symbols[left.next];
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0)
      s.symbols[right.next].prev = c.left;
    right.id = -1;
    push_candidate(left.prev, s, merges);
    push_candidate(c.left, s, merges);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next)
    out.push_back(s.symbols[i].id);
}

} // namespace bonsai::tokenizer_detail
