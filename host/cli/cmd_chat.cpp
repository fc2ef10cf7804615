// bonsai chat: an interactive conversation. Each turn is formatted with the
// chat template over the whole history; the session reuses the KV cache for
// the prefix it already holds, so only the new turn is evaluated.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "chat_prompt.hpp"
#include "commands.hpp"
#include "context_check.hpp"
#include "engine_setup.hpp"
#include "interrupt.hpp"
#include "options.hpp"
#include "stats.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

struct ChatSettings {
  PromptArgs style; // --system, --think
  GenerationArgs generation;
  bool show_stats = false;
};

class Conversation {
public:
  Conversation(const Engine &engine, Session &session, const ChatSettings &settings)
      : engine_(engine), session_(session), settings_(settings), interrupt_(session) {
    reset();
  }

  // Reads and answers lines until /exit or end of input.
  void loop() {
    std::string line;
    for (;;) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
      if (!std::getline(std::cin, line)) {
        std::fputs("\n", stdout);
        return;
      }
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line == "/exit" || line == "/quit")
        return;
      if (line == "/reset") {
        reset();
        std::fputs("(conversation cleared)\n", stderr);
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string::npos)
        continue;
      answer(line);
    }
  }

private:
  void reset() {
    history_.clear();
    if (!settings_.style.system.empty())
      history_.push_back({"system", settings_.style.system});
    session_.reset();
  }

  void answer(const std::string &user_text) {
    history_.push_back({"user", user_text});
    GenerateRequest request;
    try {
      request.prompt_tokens = engine_.tokenize(
          format_chat_prompt(engine_, history_, settings_.style.think != Toggle::off));
    } catch (const Error &e) {
      // e.g. a line that is not valid UTF-8: drop it, keep the conversation.
      history_.pop_back();
      std::fprintf(stderr, "bonsai: error: %s; that line was not sent, type it again\n", e.what());
      return;
    }
    request.n_predict = settings_.generation.n_predict;
    request.sampling = settings_.generation.sampling;
    request.stop_strings = settings_.generation.stop;
    if (settings_.generation.ignore_eos)
      request.stop_tokens = std::vector<int32_t>{};
    try {
      check_context({.prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size()),
                     .n_predict = request.n_predict,
                     .n_ctx = session_.n_ctx(),
                     .predict_flag = "-n/--n-predict"});
    } catch (const Error &e) {
      history_.pop_back();
      std::fprintf(stderr, "bonsai: error: %s (type /reset to start over)\n", e.what());
      return;
    }
    interrupt_.arm();
    GenerateResult result;
    try {
      result = session_.generate(request, [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
      });
    } catch (...) {
      interrupt_.disarm();
      throw;
    }
    interrupt_.disarm();
    std::fputs("\n", stdout);
    std::fflush(stdout);
    // What was shown stays in the history, even a reply cut short.
    history_.push_back({"assistant", result.text});
    if (interrupt_.interrupted())
      std::fputs("(reply stopped)\n", stderr);
    if (settings_.show_stats)
      std::fprintf(stderr, "%s\n",
                   format_stats(engine_.backend().name, result.stats, result.stop_reason,
                                *request.sampling.seed)
                       .c_str());
  }

  const Engine &engine_;
  Session &session_;
  const ChatSettings &settings_;
  InterruptHandler interrupt_;
  std::vector<ChatMessage> history_;
};

} // namespace

int chat_command(const Args &argv) {
  EngineArgs engine_args;
  ChatSettings settings;
  settings.generation.n_predict = -1; // a reply ends at the model's end-of-turn token
  CommandLine command_line("chat", "chat -m FILE [options]");
  command_line.engine(engine_args)
      .chat_style(settings.style)
      .generation(settings.generation)
      .logging();
  command_line.add_options()("stats", po::bool_switch(&settings.show_stats),
                             "print timing statistics after each reply");
  if (!command_line.parse(argv))
    return kExitOk;

  Engine engine = open_engine(engine_args);
  if (settings.generation.n_predict > engine.options().n_ctx)
    throw Error("-n/--n-predict " + std::to_string(settings.generation.n_predict) +
                " goes past the context of " + std::to_string(engine.options().n_ctx) +
                " tokens; lower it or raise -c/--ctx-size");
  // Fails here, before the prompt appears, when the model has no template.
  format_chat_prompt(engine, std::vector<ChatMessage>{{"user", "hi"}}, true);
  Session session = open_session(engine, engine_args);
  std::fprintf(stderr,
               "chat with %s on %s. Type /exit or Ctrl-D to quit, /reset to start over; "
               "Ctrl-C stops a reply.\n",
               engine.model().name.empty() ? engine.model().path.filename().c_str()
                                           : engine.model().name.c_str(),
               engine.backend().name.c_str());
  Conversation conversation(engine, session, settings);
  conversation.loop();
  return kExitOk;
}

} // namespace bonsai::cli
