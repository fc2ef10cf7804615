// bonsai run: one prompt in, the completion streamed to stdout as it is
// generated, timing statistics to stderr.
#include <cstdio>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "chat_prompt.hpp"
#include "commands.hpp"
#include "context_check.hpp"
#include "engine_setup.hpp"
#include "interrupt.hpp"
#include "model_file.hpp"
#include "options.hpp"
#include "stats.hpp"
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

// The text the model sees: the prompt, in the chat template when chatting.
std::string build_prompt(const Engine &engine, const PromptArgs &args, const std::string &prompt,
                         bool chat) {
  if (!chat)
    return prompt;
  std::vector<ChatMessage> messages;
  if (!args.system.empty())
    messages.push_back({"system", args.system});
  messages.push_back({"user", prompt});
  return format_chat_prompt(engine, messages, args.think != Toggle::off);
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
  CommandLine command_line("run", "run -m FILE (-p TEXT | -f FILE) [options]");
  command_line.engine(engine_args).prompt(prompt_args).generation(generation).logging();
  if (!command_line.parse(argv))
    return kExitOk;
  check_flags(prompt_args);
  const std::string prompt = read_prompt(prompt_args);

  Engine engine = open_engine(engine_args);
  const bool chat = use_chat(prompt_args, engine_args.model);
  GenerateRequest request;
  request.prompt_tokens = engine.tokenize(build_prompt(engine, prompt_args, prompt, chat));
  request.n_predict = generation.n_predict;
  request.sampling = generation.sampling;
  request.stop_strings = generation.stop;
  if (generation.ignore_eos)
    request.stop_tokens = std::vector<int32_t>{};
  check_context({.prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size()),
                 .n_predict = generation.n_predict,
                 .n_ctx = engine.options().n_ctx,
                 .predict_flag = "-n/--n-predict"});

  Session session = open_session(engine, engine_args);
  InterruptHandler interrupt(session);
  interrupt.arm();
  const GenerateResult result = session.generate(request, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  interrupt.disarm();
  std::fputs("\n", stdout);
  std::fflush(stdout);
  std::fprintf(
      stderr, "%s\n",
      format_stats(engine.backend().name, result.stats, result.stop_reason, *request.sampling.seed)
          .c_str());
  return interrupt.interrupted() ? kExitInterrupted : kExitOk;
}

} // namespace bonsai::cli
