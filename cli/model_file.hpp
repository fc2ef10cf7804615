#pragma once
// Facts about the model file that the command line needs before (or
// without) loading it through the engine.
#include <string>

namespace bonsai::cli {

// Throws bonsai::Error "<path>: model file not found" (or "is a directory"):
// a plain message for the commonest mistake with -m.
void check_model_path(const std::string &path);

// Whether the GGUF metadata holds a non-empty tokenizer.chat_template.
// Throws bonsai::Error for a file that is not valid GGUF.
bool model_has_chat_template(const std::string &path);

} // namespace bonsai::cli
