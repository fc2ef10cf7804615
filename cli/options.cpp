#include "options.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "bonsai/log.hpp"
#include "llama_flags.hpp"
#include "think_filter.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

// Shortest text that reads back as `v` ("0.95", not "0.949999988").
std::string shortest(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The most threads a plugin context takes (the CPU plugin's limit);
// between the machine's threads and this, plugins clamp with a warning.
constexpr int32_t kMaxThreads = 1024;

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
  for (const int32_t n : a.thread_list)
    if (n < 0 || n > kMaxThreads)
      invalid("-t/--threads",
              "must be in 0.." + std::to_string(kMaxThreads) +
                  " (0 = automatic; more than the machine has are clamped)",
              std::to_string(n));
}

void validate_generation(const GenerationArgs &g) {
  const SamplingParams &s = g.sampling;
  for (const std::string &stop : g.stop)
    if (stop.empty())
      invalid("--stop", "must not be empty", "''");
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

// The option `token` ("-m", "--model") names in `all`, or nullptr.
const po::option_description *find_flag(const po::options_description &all,
                                        const std::string &token) {
  if (token.rfind("--", 0) == 0)
    return all.find_nothrow(token.substr(2), false);
  if (token.size() == 2 && token[0] == '-')
    for (const auto &d : all.options())
      if (d->canonical_display_name(po::command_line_style::allow_dash_for_short) == token)
        return d.get();
  return nullptr;
}

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The known long flag closest to `unknown` ("--tmp" -> "--temp"), or "" when
// none is near enough to be a likely typo.
std::string nearest_flag(const po::options_description &all, const std::string &unknown) {
  std::string word = unknown;
  while (!word.empty() && word[0] == '-')
    word.erase(0, 1);
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto &d : all.options()) {
    const size_t distance = edit_distance(word, d->long_name());
    if (!d->long_name().empty() && distance < best_distance) {
      best_distance = distance;
      best = "--" + d->long_name();
    }
  }
  return best;
}

const CommandLine::ToggleHelp kThinkHelp = {
    "think", "let the model reason in a <think> block first (default)",
    "turn thinking off: pre-fill an empty <think> block so the model answers directly"};

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

CommandLine &CommandLine::engine(EngineArgs &a, bool thread_list) {
  po::options_description group("Model and backend");
  auto add = group.add_options();
  add("model,m", po::value(&a.model)->value_name("FILE"), "GGUF model file (required)");
  add("backend", po::value(&a.backend)->value_name("SPEC")->default_value(a.backend),
      "auto (the usable plugin stating the highest preference: a GPU before the CPU), cpu, cuda, a "
      "plugin file PATH.so, or a comma-separated list "
      "tried in order");
  add("backend-options", po::value(&a.backend_options)->value_name("K=V;..."),
      "options passed to the plugin, e.g. kernels=reference");
  add("threads,t",
      po::value(&threads_text_)
          ->value_name(thread_list ? "N,..." : "N")
          ->default_value(threads_text_),
      thread_list ? "CPU threads, a comma list runs every test with each (0 = automatic)"
                  : "CPU threads (0 = automatic)");
  add("ctx-size,c", po::value(&a.n_ctx)->value_name("N")->default_value(a.n_ctx),
      "context window in tokens (0 = the model's training context)");
  add("batch-size,b", po::value(&a.n_batch)->value_name("N")->default_value(a.n_batch),
      "most prompt tokens evaluated in one step");
  add("no-progress", po::bool_switch(), "do not draw the load progress bar");
  groups_.push_back(group);
  checks_.push_back([this, &a, thread_list] {
    a.progress = !values_["no-progress"].as<bool>();
    a.thread_list = parse_int_list("-t/--threads", threads_text_, INT32_MIN);
    if (!thread_list && a.thread_list.size() != 1)
      throw UsageError("-t/--threads takes one number here, got '" + threads_text_ + "'");
    a.n_threads = a.thread_list.front();
    // A later --backend overrides -ngl, and then no note is due.
    a.gpu_request = a.backend == kGpuLayersBackend ? gpu_request_ : std::string();
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
  checks_.push_back([this, &r] {
    // 0 is how "not given" is stored, so a 0 given is caught here.
    if (given("rope-scale") && r.scale == 0.0f)
      invalid("--rope-scale", "must be a context factor >= 1", "0");
    if (given("rope-freq-base") && r.freq_base == 0.0f)
      invalid("--rope-freq-base", "must be > 0", "0");
    if (given("yarn-orig-ctx") && r.yarn_orig_ctx == 0)
      invalid("--yarn-orig-ctx", "must be > 0", "0");
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
  add_thinking(group, a);
  groups_.push_back(group);
  return *this;
}

CommandLine &CommandLine::chat_style(PromptArgs &a) {
  po::options_description group("Conversation");
  group.add_options()("system", po::value(&a.system)->value_name("TEXT"), "system message");
  add_thinking(group, a);
  groups_.push_back(group);
  return *this;
}

// Side by side in --help: whether the model reasons, and whether it shows.
void CommandLine::add_thinking(po::options_description &group, PromptArgs &a) {
  add_toggle(group, kThinkHelp, a.think);
  group.add_options()("thinking", po::value(&a.thinking)->value_name("MODE"),
                      "how the reasoning (<think> ... </think>) is printed: show, dim, or hide "
                      "(only the answer); default: dim on a terminal, else show");
  checks_.push_back([&a] {
    if (!parse_thinking_display(a.thinking, false))
      throw UsageError("--thinking must be show, dim or hide, not '" + a.thinking + "'");
  });
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
      "random seed (-1 = a random one, printed in the stats line)");
  add("ignore-eos", po::bool_switch(&g.ignore_eos), "keep generating through end-of-turn tokens");
  add("stop", po::value(&g.stop)->value_name("TEXT")->composing(),
      "end the answer where TEXT appears (repeatable; -r/--reverse-prompt is the same)");
  groups_.push_back(group);
  checks_.push_back([this, &g] {
    if (seed_ < -1)
      invalid("--seed", "must be >= 0, or -1 for a random seed", std::to_string(seed_));
    // A random seed is drawn here, not in the sampler, so that the stats
    // line can print it and any run can be repeated with --seed.
    g.sampling.seed =
        seed_ >= 0 ? static_cast<uint64_t>(seed_) : std::random_device{}() & 0x7fffffffu;
    validate_generation(g);
  });
  return *this;
}

CommandLine &CommandLine::draft(DraftArgs &d) {
  DraftOptions &o = d.options;
  po::options_description group("Speculative decoding (docs/speculative.md)");
  group.add_options()("model-draft", po::value(&d.model_draft)->value_name("FILE"),
                      "propose with a draft model of the same vocabulary (-md; the same "
                      "threads and context, and the same backend unless --backend-draft)")(
      "backend-draft", po::value(&d.backend_draft)->value_name("NAME"),
      "the draft model's backend (auto, cpu, cuda or a plugin path; default: the model's)")(
      "backend-options-draft", po::value(&d.backend_options_draft)->value_name("K=V;..."),
      "the draft model's plugin options (default: the model's, with the same backend)")(
      "draft-ngram", po::value(&o.ngram)->value_name("N"),
      "propose with prompt lookup: the tokens that followed the last N tokens earlier in the "
      "context")("draft-mtp", po::bool_switch(&o.mtp),
                 "propose with the model's own multi-token-prediction layer (qwen35)")(
      "draft-max", po::value(&o.max)->value_name("N")->default_value(o.max),
      "most tokens proposed per step")("draft-min",
                                       po::value(&o.min)->value_name("N")->default_value(o.min),
                                       "fewer proposals than this: a plain step")(
      "draft-p-min",
      po::value(&o.p_min)->value_name("P")->default_value(o.p_min, shortest(o.p_min)),
      "the draft model (or MTP layer) stops proposing below this probability of its best token")(
      "draft-fixed", po::bool_switch(&d.fixed),
      "propose --draft-max tokens every step instead of the length that measures best");
  groups_.push_back(group);
  checks_.push_back([&o, &d] {
    o.adaptive = !d.fixed;
    if (o.ngram < 0)
      throw UsageError("--draft-ngram must be >= 1 (or 0: no lookup draft)");
    if (o.max < 1 || o.min < 1 || o.min > o.max)
      throw UsageError("--draft-min and --draft-max need 1 <= min <= max");
    if (!(o.p_min >= 0.0f && o.p_min <= 1.0f))
      throw UsageError("--draft-p-min must be in [0, 1]");
    if (o.mtp && !d.model_draft.empty())
      throw UsageError("--draft-mtp and -md/--model-draft exclude each other; choose one");
    if (d.model_draft.empty() && (!d.backend_draft.empty() || !d.backend_options_draft.empty()))
      throw UsageError("--backend-draft and --backend-options-draft need a draft model (-md FILE)");
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

void CommandLine::store(const std::vector<std::string> &args, const po::options_description &all) {
  po::options_description with_words = all;
  with_words.add_options()("positional-words", po::value(&positional_));
  po::positional_options_description words;
  words.add("positional-words", -1);
  // No abbreviations: `--temp` must never silently mean another flag.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  po::parsed_options parsed =
      po::command_line_parser(args).options(with_words).positional(words).style(style).run();
  // A flag given twice: the last one wins, as in llama.cpp (repeatable
  // flags such as --stop keep every value).
  std::vector<po::option> kept;
  for (size_t i = 0; i < parsed.options.size(); ++i) {
    const po::option &o = parsed.options[i];
    const po::option_description *d = with_words.find_nothrow(o.string_key, false);
    const bool repeatable = o.position_key != -1 || d == nullptr || d->semantic()->is_composing();
    bool later = false;
    for (size_t j = i + 1; j < parsed.options.size() && !repeatable && !later; ++j)
      later = parsed.options[j].string_key == o.string_key;
    if (!later)
      kept.push_back(o);
  }
  parsed.options = kept;
  po::store(parsed, values_);
}

bool CommandLine::parse(const std::vector<std::string> &args) {
  po::options_description all;
  all.add(general_);
  if (!own_.options().empty())
    all.add(own_);
  for (const auto &g : groups_)
    all.add(g);
  const FlagSchema schema{
      [&all](const std::string &token) { return find_flag(all, token) != nullptr; },
      [&all](const std::string &token) {
        const po::option_description *d = find_flag(all, token);
        return d != nullptr && d->semantic()->max_tokens() > 0;
      }};
  const TranslatedArgs translated = translate_llama_flags(args, schema);
  gpu_request_ = translated.gpu_request;
  try {
    store(translated.args, all);
    if (values_.count("help")) {
      std::cout << "usage: bonsai " << synopsis_ << "\n" << all << std::flush;
      return false;
    }
    po::notify(values_);
  } catch (const po::unknown_option &e) {
    const std::string near = nearest_flag(all, e.get_option_name());
    throw UsageError(std::string(e.what()) + (near.empty() ? "" : "; did you mean " + near + "?") +
                     " (see 'bonsai " + command_ + " --help')");
  } catch (const po::error &e) {
    throw UsageError(std::string(e.what()) + " (see 'bonsai " + command_ + " --help')");
  }
  if (!positional_.empty()) {
    std::string words;
    for (const std::string &w : positional_)
      words += (words.empty() ? "'" : ", '") + w + "'";
    throw UsageError("unexpected argument" + std::string(positional_.size() > 1 ? "s " : " ") +
                     words + ": every value belongs to a flag; quote text with spaces, e.g. -p " +
                     "\"Hello world\" (see 'bonsai " + command_ + " --help')");
  }
  for (const auto &check : checks_)
    check();
  // After the checks: a command line that fails says one line, its error.
  for (const std::string &note : translated.notes)
    std::fprintf(stderr, "bonsai: note: %s\n", note.c_str());
  return true;
}

bool CommandLine::given(const std::string &name) const {
  const auto it = values_.find(name);
  return it != values_.end() && !it->second.defaulted();
}

std::vector<int32_t> parse_int_list(const std::string &flag, const std::string &text, int32_t min) {
  std::vector<int32_t> values;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma - start);
    int32_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw UsageError(flag + " takes whole numbers, one or a comma list (e.g. 1,2,4), got '" +
                       text + "'");
    if (v < min)
      throw UsageError(flag + " must be >= " + std::to_string(min) + ", got " + item);
    values.push_back(v);
    if (comma == std::string::npos)
      return values;
    start = comma + 1;
  }
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
  if (args.file != "-")
    return read_text_file(args.file, "-f/--file");
  const std::string text = read_stream(std::cin, "standard input (-f -)");
  if (text.empty())
    throw Error("the prompt on standard input is empty");
  return text;
}

} // namespace bonsai::cli
