#include "data_dir.hpp"

#include <system_error>

namespace bonsai::plugin_check {

std::filesystem::path find_golden_dir() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  std::filesystem::path candidates[] = {
      error ? std::filesystem::path() : exe.parent_path().parent_path() / "share" / "bonsai",
      BONSAI_SOURCE_DATA_DIR};
  for (const std::filesystem::path &dir : candidates)
    if (!dir.empty() && std::filesystem::exists(dir / "tiny-q1.gguf", error))
      return dir;
  return {};
}

} // namespace bonsai::plugin_check
