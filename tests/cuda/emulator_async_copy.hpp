#pragma once
// One emulated GPU thread's cp.async copies (kernels/matmul_mmq.cuh) that
// have not landed yet. As on the GPU, a copy lands only when its thread
// waits for its group, so a kernel that reads shared memory before waiting
// reads the old bytes and its test fails.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace emu {

struct AsyncCopyQueue {
  struct Copy {
    void *dst;
    const void *src;
    int group; // the commit group it belongs to
  };
  std::vector<Copy> copies;
  int open_group = 0; // copies issued now join this group

  // cp.async.wait_group n: lands every copy of committed groups but the n
  // most recent.
  void wait(int pending_groups) {
    const int last_landing = open_group - 1 - pending_groups;
    std::vector<Copy> still;
    for (const Copy &c : copies) {
      if (c.group <= last_landing)
        std::memcpy(c.dst, c.src, 16);
      else
        still.push_back(c);
    }
    copies.swap(still);
  }
  // A thread must not end with copies in flight: their bytes would be lost.
  void check_empty_at_exit() const {
    if (!copies.empty()) {
      std::fprintf(stderr,
                   "emulated kernel: thread ended with %zu cp.async copies never waited for\n",
                   copies.size());
      std::abort();
    }
  }
};

} // namespace emu
