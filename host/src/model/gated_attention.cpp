#include "model/gated_attention.hpp"

#include <algorithm>

namespace bonsai::host {

void gated_attention_token(const GatedAttentionShape &shape, const GatedAttentionToken &t) {
  const int32_t d = shape.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(shape.n_head_kv) * d;
  for (int32_t head = 0; head < shape.n_head; ++head) // the query half of each head's pair
    std::copy_n(t.qg + 2 * head * d, d, t.q + head * d);
  norm_and_rotate(t.q, shape.n_head, t.position, shape.q_rotation);
  norm_and_rotate(t.k, shape.n_head_kv, t.position, shape.k_rotation);
  const int64_t row = static_cast<int64_t>(t.row) * kv_dim;
  std::copy_n(t.k, kv_dim, t.k_cache + row);
  std::copy_n(t.v, kv_dim, t.v_cache + row);
  const int32_t group = shape.n_head / shape.n_head_kv;
  for (int32_t head = 0; head < shape.n_head; ++head) {
    const int32_t kv_offset = (head / group) * d;
    HeadAttention one;
    one.query = t.q + head * d;
    one.keys = t.k_cache + kv_offset;
    one.values = t.v_cache + kv_offset;
    one.n_visible = t.row + 1;
    one.head_dim = d;
    one.stride = kv_dim;
    float *out = t.out + head * d;
    attend(one, t.scores, out);
    const float *gate = t.qg + (2 * head + 1) * d;
    for (int32_t i = 0; i < d; ++i)
      out[i] *= sigmoid(gate[i]);
  }
}

} // namespace bonsai::host
