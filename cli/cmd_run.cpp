// bonsai run: one prompt in, the completion streamed to stdout as it is
// generated (or, with --json, one JSON object at the end), timing statistics
// to stderr. --thinking shows, dims or hides the model's reasoning.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/engine.hpp"
#include "chat_prompt.hpp"
#include "commands.hpp"
#include "context_check.hpp"
#include "engine_setup.hpp"
#include "interrupt.hpp"
#include "model_file.hpp"
#include "options.hpp"
#include "stats.hpp"
#include "think_filter.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

// Chat mode: --chat / --no-chat when given; otherwise on when the model has
// a chat template, or when --system / --think / --no-think ask for it.
bool use_chat(const PromptArgs &args, const std::string &model_path) {
  if (args.chat != Toggle::unset)
    return args.chat == Toggle::on;
  if (!args.system.empty() || args.think != Toggle::unset)
    return true;
  return model_has_chat_template(model_path);
}

// What the model sees: the prompt as is (control tokens matched), or in the
// chat template when chatting.
std::vector<int32_t> prompt_tokens(const Engine &engine, const PromptArgs &args,
                                   const std::string &prompt, bool chat) {
  if (!chat)
    return engine.tokenize(prompt);
  std::vector<ChatMessage> messages;
  if (!args.system.empty())
    messages.push_back({"system", args.system});
  messages.push_back({"user", prompt});
  return chat_prompt_tokens(engine, messages, args.think != Toggle::off);
}

// OpenAI's finish_reason for ours.
const char *finish_reason(StopReason reason) {
  switch (reason) {
  case StopReason::stop_token:
  case StopReason::stop_string:
    return "stop";
  case StopReason::length:
  case StopReason::context_full:
    return "length";
  case StopReason::cancelled:
    break;
  }
  return "cancelled";
}

// --json: everything a script needs, as one object.
std::string result_json(const Engine &engine, const GenerateRequest &request,
                        const GenerateResult &result) {
  const GenerateStats &s = result.stats;
  const nlohmann::json doc = {{"text", result.text},
                              {"tokens", result.tokens},
                              {"finish_reason", finish_reason(result.stop_reason)},
                              {"stop_reason", std::string(to_string(result.stop_reason))},
                              {"backend", engine.backend().name},
                              {"seed", *request.sampling.seed},
                              {"prompt_tokens", request.prompt_tokens.size()},
                              {"timings",
                               {{"load_ms", s.load_ms},
                                {"prompt_tokens", s.prompt_tokens},
                                {"reused_tokens", s.reused_tokens},
                                {"prompt_ms", s.prompt_ms},
                                {"prompt_per_second", s.prompt_tps},
                                {"generated_tokens", s.gen_tokens},
                                {"decode_steps", s.gen_steps},
                                {"generation_ms", s.gen_ms},
                                {"generation_per_second", s.gen_tps},
                                {"drafted_tokens", s.drafted_tokens},
                                {"accepted_tokens", s.accepted_tokens},
                                {"constrained_tokens", s.constrained_tokens},
                                {"constraint_masks", s.constraint_masks},
                                {"constraint_ms", s.constraint_ms}}}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Thinking models reason before they answer; a reply cut off there (the
// default -n is short) shows no answer at all, so say how to get one.
void note_cut_reasoning(const GenerateResult &result, const ThinkFilter &filter) {
  const bool cut =
      result.stop_reason == StopReason::length || result.stop_reason == StopReason::context_full;
  if (cut && filter.in_reasoning())
    std::fputs("bonsai: note: the reply stopped inside the model's reasoning (<think> without "
               "</think>); raise -n, or pass --no-think to answer directly\n",
               stderr);
}

void check_flags(const PromptArgs &args) {
  if (args.chat == Toggle::off && !args.system.empty())
    throw UsageError("--system needs chat mode (drop --no-chat)");
  if (args.chat == Toggle::off && args.think != Toggle::unset)
    throw UsageError("--think/--no-think need chat mode (drop --no-chat)");
}

} // namespace

int run_command(const Args &argv) {
  EngineArgs engine_args;
  PromptArgs prompt_args;
  GenerationArgs generation;
  bool json = false;
  std::string json_schema, json_schema_file;
  DraftArgs draft;
  bool display_prompt = false;
  bool no_display_prompt = false;
  CommandLine command_line("run", "run -m FILE (-p TEXT | -f FILE) [options]");
  command_line.engine(engine_args)
      .prompt(prompt_args)
      .generation(generation)
      .draft(draft)
      .logging();
  command_line.add_options()(
      "json", po::bool_switch(&json),
      "print one JSON object at the end (text, token ids, finish reason, seed, timings) "
      "instead of streaming the text")("display-prompt", po::bool_switch(&display_prompt),
                                       "print the prompt before the completion")(
      "no-display-prompt", po::bool_switch(&no_display_prompt),
      "print only the completion (the default)")(
      "json-schema,j", po::value(&json_schema)->value_name("SCHEMA"),
      "constrain the reply to JSON valid under this JSON Schema (docs/structured-output.md)")(
      "json-schema-file", po::value(&json_schema_file)->value_name("FILE"),
      "the same, with the schema read from FILE");
  if (!command_line.parse(argv))
    return kExitOk;
  check_flags(prompt_args);
  if (display_prompt && no_display_prompt)
    throw UsageError("--display-prompt and --no-display-prompt cannot be used together");
  if (display_prompt && json)
    throw UsageError("--display-prompt does not apply to --json (the object holds the text)");
  if (!prompt_args.thinking.empty() && json)
    throw UsageError("--thinking does not apply to --json (the object holds the whole text)");
  if (!json_schema.empty() && !json_schema_file.empty())
    throw UsageError("--json-schema and --json-schema-file cannot be used together");
  if ((!json_schema.empty() || !json_schema_file.empty()) && !generation.stop.empty())
    throw UsageError("--stop cannot be used with --json-schema: a stop string could cut the "
                     "value before it is complete");
  if (!json_schema_file.empty())
    json_schema = read_text_file(json_schema_file, "--json-schema-file");
  const std::string prompt = read_prompt(prompt_args);

  Engine engine = open_engine(engine_args);
  const bool chat = use_chat(prompt_args, engine_args.model);
  GenerateRequest request;
  request.prompt_tokens = prompt_tokens(engine, prompt_args, prompt, chat);
  request.n_predict = generation.n_predict;
  request.sampling = generation.sampling;
  request.stop_strings = generation.stop;
  if (generation.ignore_eos)
    request.stop_tokens = std::vector<int32_t>{};
  if (!json_schema.empty()) {
    request.format.kind = ReplyFormat::Kind::json_schema;
    request.format.schema = json_schema;
    // A thinking chat may reason before the JSON (the format then follows).
    request.chat = chat;
    request.enable_thinking = prompt_args.think != Toggle::off;
  }
  request.n_predict = static_cast<int32_t>(
      fit_to_context({.prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size()),
                      .n_predict = generation.n_predict,
                      .n_ctx = engine.options().n_ctx,
                      .predict_flag = "-n/--n-predict"}));

  Session session = open_session(engine, engine_args);
  DraftRuntime draft_runtime;
  open_draft(draft, engine, engine_args, draft_runtime);
  request.draft = draft_runtime.options;
  InterruptHandler interrupt(session);
  if (display_prompt)
    std::fputs(prompt.c_str(), stdout);
  ThinkFilter filter(*parse_thinking_display(prompt_args.thinking, isatty(STDOUT_FILENO) == 1));
  interrupt.arm();
  const GenerateResult result = session.generate(request, [json, &filter](std::string_view piece) {
    const std::string text = filter.push(piece);
    if (!json) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  interrupt.disarm();
  const std::string rest = filter.finish() + "\n";
  std::fputs(json ? result_json(engine, request, result).c_str() : rest.c_str(), stdout);
  std::fflush(stdout);
  note_cut_reasoning(result, filter);
  std::fprintf(
      stderr, "%s\n",
      format_stats(engine.backend().name, result.stats, result.stop_reason, *request.sampling.seed)
          .c_str());
  return interrupt.interrupted() ? kExitInterrupted : kExitOk;
}

} // namespace bonsai::cli
