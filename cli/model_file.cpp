#include "model_file.hpp"

#include <filesystem>
#include <system_error>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"

namespace bonsai::cli {

void check_model_path(const std::string &path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw Error(path + ": model file not found");
  if (std::filesystem::is_directory(status))
    throw Error(path + ": is a directory, not a model file");
}

bool model_has_chat_template(const std::string &path) {
  const gguf::File file = gguf::File::open(path);
  const gguf::Value *value = file.find("tokenizer.chat_template");
  return value != nullptr && value->type == gguf::ValueType::STRING &&
         value->as_string("tokenizer.chat_template").find_first_not_of(" \t\r\n") !=
             std::string::npos;
}

} // namespace bonsai::cli
