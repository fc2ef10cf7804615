#include "llama_flags.hpp"

#include <charconv>
#include <initializer_list>

#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

enum class Action {
  alias,         // becomes bonsai's `target`, value and all
  gpu_layers,    // -ngl N: 0 = --backend cpu, else the GPU if usable (kGpuLayersBackend)
  ignore_switch, // dropped with a note (takes no value)
  ignore_toggle, // dropped with a note; an on/off/auto value after it goes too
  ignore_value,  // dropped with its value and a note
};

struct LlamaFlag {
  std::initializer_list<const char *> spellings;
  Action action;
  const char *target_or_note; // the bonsai long option for alias, else the note
};

const LlamaFlag kLlamaFlags[] = {
    {{"-ngl", "--n-gpu-layers", "--gpu-layers"}, Action::gpu_layers, nullptr},
    {{"-ub", "--ubatch-size"}, Action::alias, "--batch-size"},
    {{"-sys", "--system-prompt"}, Action::alias, "--system"},
    {{"-s"}, Action::alias, "--seed"},
    {{"-r", "--reverse-prompt"}, Action::alias, "--stop"},
    {{"-np"}, Action::alias, "--parallel"},
    {{"-md"}, Action::alias, "--model-draft"},
    {{"-fa", "--flash-attn"},
     Action::ignore_toggle,
     "attention is always fused in bonsai; ignored"},
    {{"-tb", "--threads-batch"},
     Action::ignore_value,
     "bonsai uses -t for the prompt and generation alike; ignored"},
    {{"-cnv", "--conversation"},
     Action::ignore_switch,
     "for a conversation use 'bonsai chat'; ignored"},
    {{"-no-cnv", "--no-conversation", "-st", "--single-turn"},
     Action::ignore_switch,
     "'bonsai run' answers one prompt and exits; ignored"},
    {{"--mlock", "--no-mmap", "-mmp"},
     Action::ignore_switch,
     "bonsai maps the model file read-only and lets the OS page it; ignored"},
    {{"-co", "--color"}, Action::ignore_toggle, "bonsai does not colour its output; ignored"},
    {{"-e", "--escape", "-no-e", "--no-escape"},
     Action::ignore_switch,
     "bonsai takes the prompt text as it is; ignored"},
    {{"--no-warmup"}, Action::ignore_switch, "bonsai does no warm-up run; ignored"},
    {{"-ctk", "--cache-type-k", "-ctv", "--cache-type-v"},
     Action::ignore_value,
     "the KV cache type is the backend's choice; ignored"},
    {{"-dev", "--device", "-sm", "--split-mode", "-mg", "--main-gpu"},
     Action::ignore_value,
     "bonsai uses one device, chosen with --backend; ignored"},
};

// The flag `name` (a token without any "=value") is, or nullptr.
const LlamaFlag *find_llama_flag(const std::string &name) {
  for (const LlamaFlag &flag : kLlamaFlags)
    for (const char *spelling : flag.spellings)
      if (name == spelling)
        return &flag;
  return nullptr;
}

bool is_toggle_value(const std::string &v) {
  return v == "on" || v == "off" || v == "auto" || v == "1" || v == "0";
}

int parse_gpu_layers(const std::string &flag, const std::string &value) {
  int n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < -1)
    throw UsageError(flag + " needs a number of layers (0 = CPU, any other = the GPU), got '" +
                     value + "'");
  return n;
}

} // namespace

TranslatedArgs translate_llama_flags(const std::vector<std::string> &args,
                                     const FlagSchema &schema) {
  TranslatedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &token = args[i];
    if (token == "--") { // everything after is positional
      out.args.insert(out.args.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    const size_t eq = token.rfind("--", 0) == 0 ? token.find('=') : std::string::npos;
    const std::string name = token.substr(0, eq);
    const LlamaFlag *flag =
        token.size() > 1 && token[0] == '-' && !schema.has(name) ? find_llama_flag(name) : nullptr;
    if (flag == nullptr) {
      out.args.push_back(token);
      // A value of one of our flags passes through untouched, even "-fa".
      if (eq == std::string::npos && schema.has(name) && schema.takes_value(name) &&
          i + 1 < args.size())
        out.args.push_back(args[++i]);
      continue;
    }
    // The flag's value, from "--flag=value" or the next argument.
    auto value = [&]() -> std::string {
      if (eq != std::string::npos)
        return token.substr(eq + 1);
      if (i + 1 >= args.size())
        throw UsageError(name + " needs a value");
      return args[++i];
    };
    switch (flag->action) {
    case Action::alias:
      if (!schema.has(flag->target_or_note)) {
        value();
        out.notes.push_back(name + ": this command has no " + flag->target_or_note + "; ignored");
        break;
      }
      out.args.push_back(flag->target_or_note);
      out.args.push_back(value());
      break;
    case Action::gpu_layers: {
      const std::string text = value();
      const int layers = parse_gpu_layers(name, text);
      if (!schema.has("--backend")) {
        out.notes.push_back(name + ": this command runs no model; ignored");
        break;
      }
      out.args.push_back("--backend");
      out.args.push_back(layers == 0 ? "cpu" : kGpuLayersBackend);
      out.gpu_request = layers == 0 ? std::string() : name + " " + text;
      break;
    }
    case Action::ignore_switch:
      out.notes.push_back(name + ": " + flag->target_or_note);
      break;
    case Action::ignore_toggle:
      if (eq == std::string::npos && i + 1 < args.size() && is_toggle_value(args[i + 1]))
        ++i;
      out.notes.push_back(name + ": " + flag->target_or_note);
      break;
    case Action::ignore_value:
      value();
      out.notes.push_back(name + ": " + flag->target_or_note);
      break;
    }
  }
  return out;
}

} // namespace bonsai::cli
