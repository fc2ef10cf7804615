#pragma once
// Command-line options of the bonsai subcommands, llama.cpp-style flags.
// Each subcommand builds a CommandLine from the option groups it accepts; the
// groups bind straight into the structs below and are validated after
// parsing, so a bad value is reported before any model is loaded.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <vector>

#include <boost/program_options.hpp>

#include "bonsai/core/rope.hpp"

#include "bonsai/engine.hpp"
#include "text_file.hpp"

namespace bonsai::cli {

namespace po = boost::program_options;

// Model and backend flags shared by run, chat and eval.
struct EngineArgs {
  std::string model;                      // -m
  std::string backend = "auto";           // auto | cpu | cuda | PATH.so | list
  std::string backend_options;            // "key=value;key=value" for the plugin
  int32_t n_threads = 0;                  // 0 = the plugin's choice (the first of thread_list)
  std::vector<int32_t> thread_list = {0}; // -t 1,2,4 where the command takes a list (bench)
  int32_t n_ctx = 4096;                   // 0 = the model's training context
  int32_t n_batch = 512;
  bool progress = true; // load progress bar (drawn only on a terminal)
  RopeOverrides rope;   // --rope-scaling, --rope-scale, --rope-freq-base, --yarn-orig-ctx
  // "-ngl 99" when that flag chose the backend: a CPU fallback says so.
  std::string gpu_request;
};

// A --x / --no-x pair; `unset` when neither was given.
enum class Toggle { unset, on, off };

struct PromptArgs {
  std::string text;   // -p
  std::string file;   // -f, "-" = standard input
  std::string system; // --system
  Toggle chat = Toggle::unset;
  Toggle think = Toggle::unset;
  std::string thinking; // --thinking show|dim|hide ("" = dim on a terminal, else show)
};

struct GenerationArgs {
  int32_t n_predict = 128; // -1 = until a stop token or the context is full
  SamplingParams sampling;
  bool ignore_eos = false;       // generate through end-of-turn tokens
  std::vector<std::string> stop; // --stop / -r: end the answer at any of these strings
};

// Speculative decoding (docs/speculative.md): the draft's flags.
struct DraftArgs {
  DraftOptions options;    // --draft-ngram, --draft-mtp, --draft-max, --draft-min, --draft-p-min
  std::string model_draft; // -md/--model-draft FILE
  // --backend-draft NAME and --backend-options-draft "k=v;..."; empty: the model's
  std::string backend_draft;
  std::string backend_options_draft;
  bool fixed = false; // --draft-fixed
  bool any() const { return options.ngram > 0 || !model_draft.empty() || options.mtp; }
};

// One subcommand's option table. Groups are added before parse().
class CommandLine {
public:
  // Help lines of a --x / --no-x pair.
  struct ToggleHelp {
    const char *name; // "chat" gives --chat and --no-chat
    const char *on;
    const char *off;
  };

  // `synopsis` is the usage line after "bonsai ", e.g. "run -m FILE -p TEXT".
  CommandLine(std::string command, std::string synopsis);

  CommandLine &model(std::string &path); // -m/--model (required)
  // -m, the backend/context and RoPE flags; with `thread_list` -t takes a
  // comma list (bench), else one number.
  CommandLine &engine(EngineArgs &args, bool thread_list = false);
  CommandLine &rope(RopeOverrides &rope);    // the RoPE override flags alone
  CommandLine &prompt(PromptArgs &args);     // -p, -f, --system, --chat, --think, --thinking
  CommandLine &chat_style(PromptArgs &args); // --system, --think, --thinking (chat)
  CommandLine &generation(GenerationArgs &args);
  CommandLine &
  draft(DraftArgs &args); // -md, --draft-ngram, --draft-max, --draft-min, --draft-p-min
  CommandLine &logging(); // --log-level
  // Options that only this subcommand has.
  po::options_description_easy_init add_options();

  // Parses the arguments after the subcommand name, applies --log-level and
  // validates every group. Returns false when --help was printed. Throws
  // UsageError (exit 2) for anything wrong.
  bool parse(const std::vector<std::string> &args);
  // Whether the user gave option `name` (long name) on the command line.
  bool given(const std::string &name) const;

private:
  std::string command_;
  std::string synopsis_;
  po::options_description general_;
  po::options_description own_;
  std::vector<po::options_description> groups_;
  po::variables_map values_;
  std::vector<std::function<void()>> checks_; // run after parsing
  // Storage for --x / --no-x switches (heap cells: bound addresses stay put).
  struct SwitchPair {
    bool on = false;
    bool off = false;
  };
  std::vector<std::unique_ptr<SwitchPair>> switches_;
  std::string log_level_;
  std::string threads_text_ = "0"; // -t as given
  std::string gpu_request_;        // the -ngl flag that asked for the GPU, if any
  int64_t seed_ = -1;
  std::vector<std::string> positional_; // words outside any flag: an error
  void store(const std::vector<std::string> &args, const po::options_description &all);
  void add_toggle(po::options_description &group, const ToggleHelp &help, Toggle &target);
  void add_thinking(po::options_description &group, PromptArgs &args); // --think..., --thinking
};

// "512,1024" -> {512, 1024}; each must be >= `min`. Throws UsageError
// naming `flag` for anything else (empty items, words, out of range).
std::vector<int32_t> parse_int_list(const std::string &flag, const std::string &text, int32_t min);

// The prompt text from -p or -f (exactly one of them). Throws UsageError when
// both or neither are given, bonsai::Error when the file cannot be read.
std::string read_prompt(const PromptArgs &args);

} // namespace bonsai::cli
