// bonsai chat: an interactive conversation. Each turn is formatted with the
// chat template over the whole history; the session reuses the KV cache for
// the prefix it already holds, so only the new turn is evaluated. When a turn
// would not leave room for a reply, the oldest turns are dropped (the system
// message stays) instead of stopping.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "chat_commands.hpp"
#include "chat_prompt.hpp"
#include "commands.hpp"
#include "context_check.hpp"
#include "conversation_file.hpp"
#include "engine_setup.hpp"
#include "interrupt.hpp"
#include "line_reader.hpp"
#include "options.hpp"
#include "stats.hpp"
#include "think_filter.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

struct ChatSettings {
  PromptArgs style; // --system, --think, --thinking
  GenerationArgs generation;
  bool show_stats = false;
};

// Tokens kept free for the reply when -n is -1: a turn that leaves fewer
// drops the oldest turns first.
int64_t reply_room(int64_t n_predict, int64_t n_ctx) {
  return n_predict >= 0 ? n_predict : std::min<int64_t>(512, n_ctx / 4);
}

class Conversation {
public:
  Conversation(const Engine &engine, Session &session, const ChatSettings &settings,
               const DraftRuntime &draft, ThinkingDisplay thinking)
      : engine_(engine), session_(session), settings_(settings), draft_(draft), interrupt_(session),
        thinking_(thinking), think_(settings.style.think != Toggle::off),
        system_(settings.style.system) {
    clear();
  }

  // Reads and answers lines until /exit or end of input.
  void loop() {
    for (;;) {
      const std::optional<std::string> line = reader_.read("> ");
      if (!line) {
        reader_.end_prompt_line();
        return;
      }
      const ChatCommand command = parse_chat_command(*line);
      switch (command.kind) {
      case ChatCommand::exit:
        return;
      case ChatCommand::message:
        if (command.argument.find_first_not_of(" \t\n") != std::string::npos)
          answer(command.argument);
        break;
      default:
        run(command);
      }
    }
  }

private:
  void say(const std::string &text) { std::fprintf(stderr, "(%s)\n", text.c_str()); }

  void run(const ChatCommand &command) {
    switch (command.kind) {
    case ChatCommand::clear:
      clear();
      say("conversation cleared");
      break;
    case ChatCommand::help:
      std::fputs(chat_help(), stderr);
      break;
    case ChatCommand::system:
      if (command.argument.empty()) {
        say(system_.empty() ? "no system message" : "system message: " + system_);
        break;
      }
      system_ = command.argument;
      if (!history_.empty() && history_.front().role == "system")
        history_.front().content = system_;
      else
        history_.insert(history_.begin(), {"system", system_});
      say("system message set");
      break;
    case ChatCommand::think:
      think_ = command.argument.empty() ? !think_ : command.argument == "on";
      say(think_ ? "thinking on: the model reasons before it answers"
                 : "thinking off: the model answers directly");
      break;
    case ChatCommand::save:
      try {
        save_conversation(command.argument, history_);
        say("saved " + std::to_string(history_.size()) + " messages to " + command.argument);
      } catch (const Error &e) {
        std::fprintf(stderr, "bonsai: error: %s\n", e.what());
      }
      break;
    case ChatCommand::load:
      try {
        history_ = load_conversation(command.argument);
        system_ = !history_.empty() && history_.front().role == "system" ? history_.front().content
                                                                         : std::string();
        session_.reset();
        say("loaded " + std::to_string(history_.size()) + " messages from " + command.argument);
      } catch (const Error &e) {
        std::fprintf(stderr, "bonsai: error: %s\n", e.what());
      }
      break;
    case ChatCommand::invalid:
      std::fprintf(stderr, "bonsai: error: %s\n", command.argument.c_str());
      break;
    default:
      break;
    }
  }

  void clear() {
    history_.clear();
    if (!system_.empty())
      history_.push_back({"system", system_});
    session_.reset();
  }

  // The prompt for the history, dropping the oldest turns while it leaves
  // less than reply_room() tokens. Throws Error (tokenizer) as tokenize does.
  std::vector<int32_t> fitting_prompt() {
    const int64_t n_ctx = session_.n_ctx();
    const int64_t room = reply_room(settings_.generation.n_predict, n_ctx);
    const size_t first_turn = !history_.empty() && history_.front().role == "system" ? 1 : 0;
    int dropped = 0;
    for (;;) {
      std::vector<int32_t> tokens = chat_prompt_tokens(engine_, history_, think_);
      // Only the new user turn left: check_context says what does not fit.
      if (static_cast<int64_t>(tokens.size()) + room <= n_ctx ||
          history_.size() <= first_turn + 1) {
        if (dropped > 0)
          say("context full: dropped the " + std::to_string(dropped) + " oldest message" +
              (dropped > 1 ? "s" : ""));
        return tokens;
      }
      // A user turn and the reply after it go together.
      const bool pair =
          history_.size() > first_turn + 2 && history_[first_turn + 1].role == "assistant";
      history_.erase(history_.begin() + static_cast<std::ptrdiff_t>(first_turn),
                     history_.begin() + static_cast<std::ptrdiff_t>(first_turn + (pair ? 2 : 1)));
      dropped += pair ? 2 : 1;
    }
  }

  void answer(const std::string &user_text) {
    history_.push_back({"user", user_text});
    GenerateRequest request;
    try {
      request.prompt_tokens = fitting_prompt();
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
    request.draft = draft_.options;
    try {
      request.n_predict = static_cast<int32_t>(
          fit_to_context({.prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size()),
                          .n_predict = request.n_predict,
                          .n_ctx = session_.n_ctx(),
                          .predict_flag = "-n/--n-predict"}));
    } catch (const Error &e) {
      history_.pop_back();
      std::fprintf(stderr, "bonsai: error: %s (type /clear to start over)\n", e.what());
      return;
    }
    ThinkFilter filter(thinking_);
    const auto print = [](const std::string &text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
    interrupt_.arm();
    GenerateResult result;
    try {
      result = session_.generate(request, [&](std::string_view piece) {
        print(filter.push(piece));
        return true;
      });
    } catch (...) {
      interrupt_.disarm();
      throw;
    }
    interrupt_.disarm();
    print(filter.finish() + "\n");
    // What was generated stays in the history, even a reply cut short.
    history_.push_back({"assistant", result.text});
    if (interrupt_.interrupted())
      say("reply stopped");
    else if (result.stop_reason == StopReason::length && filter.in_reasoning())
      say("the reply stopped inside the model's reasoning: raise -n, or /think off to answer "
          "directly");
    if (result.stop_reason == StopReason::context_full)
      say("the context is full; the next turn drops the oldest messages");
    if (settings_.show_stats)
      std::fprintf(stderr, "%s\n",
                   format_stats(engine_.backend().name, result.stats, result.stop_reason,
                                *request.sampling.seed)
                       .c_str());
  }

  const Engine &engine_;
  Session &session_;
  const ChatSettings &settings_;
  const DraftRuntime &draft_;
  InterruptHandler interrupt_;
  LineReader reader_;
  ThinkingDisplay thinking_;
  bool think_;
  std::string system_;
  std::vector<ChatMessage> history_;
};

} // namespace

int chat_command(const Args &argv) {
  EngineArgs engine_args;
  ChatSettings settings;
  DraftArgs draft_args;
  settings.generation.n_predict = -1; // a reply ends at the model's end-of-turn token
  CommandLine command_line("chat", "chat -m FILE [options]");
  command_line.engine(engine_args)
      .chat_style(settings.style)
      .generation(settings.generation)
      .draft(draft_args)
      .logging();
  command_line.add_options()("stats", po::bool_switch(&settings.show_stats),
                             "print timing statistics after each reply");
  if (!command_line.parse(argv))
    return kExitOk;
  const ThinkingDisplay thinking =
      *parse_thinking_display(settings.style.thinking, isatty(STDOUT_FILENO) == 1);

  Engine engine = open_engine(engine_args);
  if (settings.generation.n_predict > engine.options().n_ctx)
    throw Error("-n/--n-predict " + std::to_string(settings.generation.n_predict) +
                " goes past the context of " + std::to_string(engine.options().n_ctx) +
                " tokens; lower it or raise -c/--ctx-size");
  // Fails here, before the prompt appears, when the model has no template.
  chat_prompt_tokens(engine, std::vector<ChatMessage>{{"user", "hi"}}, true);
  Session session = open_session(engine, engine_args);
  std::fprintf(stderr,
               "chat with %s on %s. /help lists the commands; /exit or Ctrl-D quits; Ctrl-C "
               "stops a reply.\n",
               engine.model().name.empty() ? engine.model().path.filename().c_str()
                                           : engine.model().name.c_str(),
               engine.backend().name.c_str());
  DraftRuntime draft;
  open_draft(draft_args, engine, engine_args, draft);
  Conversation conversation(engine, session, settings, draft, thinking);
  conversation.loop();
  return kExitOk;
}

} // namespace bonsai::cli
