#include "options.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "bonsai/log.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

// Shortest text that reads back as `v` ("0.95", not "0.949999988").
std::string shortest(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

[[noreturn]] void invalid(const std::string &flag, const std::string &rule,
                          const std::string &got) {
  throw UsageError(flag + " " + rule + ", got " + got);
}

void check_finite(const std::string &flag, float v) {
  if (!std::isfinite(v))
    invalid(flag, "must be a finite number", shortest(v));
}

void validate_engine(const EngineArgs &a) {
  if (a.model.empty())
    throw UsageError("no model given: pass -m FILE (a GGUF model)");
  if (a.backend.empty())
    throw UsageError("--backend must not be empty (use auto, cpu, cuda or a plugin path)");
  if (a.n_ctx < 0)
    invalid("-c/--ctx-size", "must be >= 0 (0 = the model's training context)",
            std::to_string(a.n_ctx));
  if (a.n_batch < 1)
    invalid("-b/--batch-size", "must be >= 1", std::to_string(a.n_batch));
  if (a.n_threads < 0)
    invalid("-t/--threads", "must be >= 0 (0 = automatic)", std::to_string(a.n_threads));
}

void validate_generation(const GenerationArgs &g) {
  const SamplingParams &s = g.sampling;
  if (g.n_predict < -1)
    invalid("-n/--n-predict", "must be >= 0, or -1 for no limit", std::to_string(g.n_predict));
  check_finite("--temp", s.temperature);
  if (s.temperature < 0)
    invalid("--temp", "must be >= 0 (0 = greedy)", shortest(s.temperature));
  if (s.top_k < 0)
    invalid("--top-k", "must be >= 0 (0 = off)", std::to_string(s.top_k));
  if (!(s.top_p > 0 && s.top_p <= 1)) // also rejects NaN
    invalid("--top-p", "must be in (0, 1] (1 = off)", shortest(s.top_p));
  if (!(s.min_p >= 0 && s.min_p <= 1))
    invalid("--min-p", "must be in [0, 1] (0 = off)", shortest(s.min_p));
  check_finite("--repeat-penalty", s.repeat_penalty);
  if (s.repeat_penalty <= 0)
    invalid("--repeat-penalty", "must be > 0 (1 = off)", shortest(s.repeat_penalty));
  if (s.repeat_last_n < 0)
    invalid("--repeat-last-n", "must be >= 0", std::to_string(s.repeat_last_n));
  check_finite("--presence-penalty", s.presence_penalty);
  check_finite("--frequency-penalty", s.frequency_penalty);
}

const CommandLine::ToggleHelp kThinkHelp = {
    "think", "let the model reason in a <think> block first (default)",
    "pre-fill an empty <think> block so the model answers directly"};

} // namespace

CommandLine::CommandLine(std::string command, std::string synopsis)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), general_("General"),
      own_("Options") {
  general_.add_options()("help,h", "show this help and exit");
}

CommandLine &CommandLine::model(std::string &path) {
  po::options_description group("Model");
  group.add_options()("model,m", po::value(&path)->value_name("FILE"), "GGUF model file");
  groups_.push_back(group);
  checks_.push_back([&path] {
    if (path.empty())
      throw UsageError("no model given: pass -m FILE (a GGUF model)");
  });
  return *this;
}

CommandLine &CommandLine::engine(EngineArgs &a) {
  po::options_description group("Model and backend");
  auto add = group.add_options();
  add("model,m", po::value(&a.model)->value_name("FILE"), "GGUF model file (required)");
  add("backend", po::value(&a.backend)->value_name("SPEC")->default_value(a.backend),
      "auto (cuda, then cpu), cpu, cuda, a plugin file PATH.so, or a comma-separated list "
      "tried in order");
  add("backend-options", po::value(&a.backend_options)->value_name("K=V;..."),
      "options passed to the plugin, e.g. kernels=reference");
  add("threads,t", po::value(&a.n_threads)->value_name("N")->default_value(a.n_threads),
      "CPU threads (0 = automatic)");
  add("ctx-size,c", po::value(&a.n_ctx)->value_name("N")->default_value(a.n_ctx),
      "context window in tokens (0 = the model's training context)");
  add("batch-size,b", po::value(&a.n_batch)->value_name("N")->default_value(a.n_batch),
      "most prompt tokens evaluated in one step");
  add("no-progress", po::bool_switch(), "do not draw the load progress bar");
  groups_.push_back(group);
  checks_.push_back([this, &a] {
    a.progress = !values_["no-progress"].as<bool>();
    validate_engine(a);
  });
  return rope(a.rope);
}

CommandLine &CommandLine::rope(RopeOverrides &r) {
  po::options_description group("RoPE (the file's settings unless given)");
  auto add = group.add_options();
  add("rope-scaling", po::value(&r.scaling)->value_name("TYPE"), "none, linear or yarn");
  add("rope-scale", po::value(&r.scale)->value_name("N"),
      "context extension factor (alone: linear scaling)");
  add("rope-freq-base", po::value(&r.freq_base)->value_name("N"), "RoPE base frequency");
  add("yarn-orig-ctx", po::value(&r.yarn_orig_ctx)->value_name("N"),
      "the context the model was trained with, for YaRN");
  groups_.push_back(group);
  checks_.push_back([&r] {
    RopeSettings probe; // the same checks as the engine, as usage errors
    try {
      apply_rope_overrides(probe, r);
    } catch (const Error &e) {
      throw UsageError(e.what());
    }
  });
  return *this;
}

void CommandLine::add_toggle(po::options_description &group, const ToggleHelp &help,
                             Toggle &target) {
  switches_.push_back(std::make_unique<SwitchPair>());
  SwitchPair &pair = *switches_.back();
  const std::string name = help.name;
  const std::string negated = "no-" + name;
  group.add_options()(name.c_str(), po::bool_switch(&pair.on), help.on);
  group.add_options()(negated.c_str(), po::bool_switch(&pair.off), help.off);
  checks_.push_back([&pair, &target, name] {
    if (pair.on && pair.off)
      throw UsageError("--" + name + " and --no-" + name + " cannot be used together");
    if (pair.on)
      target = Toggle::on;
    if (pair.off)
      target = Toggle::off;
  });
}

CommandLine &CommandLine::prompt(PromptArgs &a) {
  po::options_description group("Prompt");
  auto add = group.add_options();
  add("prompt,p", po::value(&a.text)->value_name("TEXT"), "the prompt");
  add("file,f", po::value(&a.file)->value_name("FILE"), "read the prompt from FILE (- = stdin)");
  add("system", po::value(&a.system)->value_name("TEXT"), "system message (chat mode)");
  add_toggle(group,
             {"chat",
              "wrap the prompt as a user turn in the model's chat template (default when the "
              "model has a template, or with --system/--think/--no-think)",
              "complete the prompt text as it is"},
             a.chat);
  add_toggle(group, kThinkHelp, a.think);
  groups_.push_back(group);
  return *this;
}

CommandLine &CommandLine::chat_style(PromptArgs &a) {
  po::options_description group("Conversation");
  auto add = group.add_options();
  add("system", po::value(&a.system)->value_name("TEXT"), "system message");
  add_toggle(group, kThinkHelp, a.think);
  groups_.push_back(group);
  return *this;
}

CommandLine &CommandLine::generation(GenerationArgs &g) {
  SamplingParams &s = g.sampling;
  po::options_description group("Generation and sampling");
  auto add = group.add_options();
  add("n-predict,n", po::value(&g.n_predict)->value_name("N")->default_value(g.n_predict),
      "tokens to generate (-1 = until an end-of-turn token or the context is full)");
  add("temp",
      po::value(&s.temperature)
          ->value_name("T")
          ->default_value(s.temperature, shortest(s.temperature)),
      "temperature (0 = greedy)");
  add("top-k", po::value(&s.top_k)->value_name("K")->default_value(s.top_k), "top-k (0 = off)");
  add("top-p", po::value(&s.top_p)->value_name("P")->default_value(s.top_p, shortest(s.top_p)),
      "top-p, in (0, 1] (1 = off)");
  add("min-p", po::value(&s.min_p)->value_name("P")->default_value(s.min_p, shortest(s.min_p)),
      "min-p, in [0, 1] (0 = off)");
  add("repeat-penalty",
      po::value(&s.repeat_penalty)
          ->value_name("X")
          ->default_value(s.repeat_penalty, shortest(s.repeat_penalty)),
      "penalty for recently seen tokens (1 = off)");
  add("repeat-last-n", po::value(&s.repeat_last_n)->value_name("N")->default_value(s.repeat_last_n),
      "how many recent tokens the penalties look at");
  add("presence-penalty",
      po::value(&s.presence_penalty)
          ->value_name("X")
          ->default_value(s.presence_penalty, shortest(s.presence_penalty)),
      "presence penalty (0 = off)");
  add("frequency-penalty",
      po::value(&s.frequency_penalty)
          ->value_name("X")
          ->default_value(s.frequency_penalty, shortest(s.frequency_penalty)),
      "frequency penalty (0 = off)");
  add("seed", po::value(&seed_)->value_name("N")->default_value(seed_),
      "random seed (-1 = a random one)");
  add("ignore-eos", po::bool_switch(&g.ignore_eos), "keep generating through end-of-turn tokens");
  groups_.push_back(group);
  checks_.push_back([this, &g] {
    if (seed_ < -1)
      invalid("--seed", "must be >= 0, or -1 for a random seed", std::to_string(seed_));
    if (seed_ >= 0)
      g.sampling.seed = static_cast<uint64_t>(seed_);
    validate_generation(g);
  });
  return *this;
}

CommandLine &CommandLine::logging() {
  general_.add_options()("log-level", po::value(&log_level_)->value_name("LEVEL"),
                         "trace, debug, info, warn (default), error or off");
  checks_.push_back([this] {
    if (log_level_.empty())
      return;
    const auto level = parse_log_level(log_level_);
    if (!level)
      throw UsageError("--log-level must be one of trace, debug, info, warn, error, off; got '" +
                       log_level_ + "'");
    set_log_level(*level);
  });
  return *this;
}

po::options_description_easy_init CommandLine::add_options() {
  return own_.add_options();
}

bool CommandLine::parse(const std::vector<std::string> &args) {
  po::options_description all;
  all.add(general_);
  if (!own_.options().empty())
    all.add(own_);
  for (const auto &g : groups_)
    all.add(g);
  // No abbreviations: `--temp` must never silently mean another flag.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  try {
    po::store(po::command_line_parser(args).options(all).style(style).run(), values_);
    if (values_.count("help")) {
      std::cout << "usage: bonsai " << synopsis_ << "\n" << all << std::flush;
      return false;
    }
    po::notify(values_);
  } catch (const po::error &e) {
    throw UsageError(std::string(e.what()) + " (see 'bonsai " + command_ + " --help')");
  }
  for (const auto &check : checks_)
    check();
  return true;
}

bool CommandLine::given(const std::string &name) const {
  const auto it = values_.find(name);
  return it != values_.end() && !it->second.defaulted();
}

std::string read_prompt(const PromptArgs &args) {
  const bool has_text = !args.text.empty();
  const bool has_file = !args.file.empty();
  if (has_text && has_file)
    throw UsageError("-p/--prompt and -f/--file cannot be used together");
  if (!has_text && !has_file)
    throw UsageError("no prompt given: pass -p TEXT or -f FILE");
  if (has_text)
    return args.text;
  std::string text;
  if (args.file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(args.file, std::ios::binary);
    if (!in)
      throw Error(args.file + ": cannot open the prompt file");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad())
      throw Error(args.file + ": error while reading the prompt file");
  }
  if (text.empty())
    throw Error(args.file + ": the prompt file is empty");
  return text;
}

} // namespace bonsai::cli
