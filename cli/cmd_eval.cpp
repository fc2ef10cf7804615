// bonsai eval: runs a token sequence from position 0 and exposes the raw
// numbers (logits of every position, greedy continuation) for checking a
// backend against reference data.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "commands.hpp"
#include "context_check.hpp"
#include "engine_setup.hpp"
#include "options.hpp"
#include "token_list.hpp"
#include "usage_error.hpp"

namespace bonsai::cli {
namespace {

struct EvalArgs {
  EngineArgs engine;
  std::string tokens;      // --tokens
  std::string prompt;      // -p
  std::string logits_path; // --logits
  int32_t greedy = 0;      // --greedy
  bool one_by_one = false; // --one-by-one
};

int32_t argmax(std::span<const float> row) {
  // The first maximum: ties go to the lowest id, as everywhere in bonsai.
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

void check_ids(const std::vector<int32_t> &ids, int32_t n_vocab) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= n_vocab)
      throw Error("--tokens: id " + std::to_string(ids[i]) + " (item " + std::to_string(i + 1) +
                  ") is outside the model's vocabulary of " + std::to_string(n_vocab) + " tokens");
}

// float32 little-endian [n_tokens][n_vocab] (x86-64 and aarch64 are LE).
void write_logits(const std::string &path, const std::vector<float> &logits) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error(path + ": cannot open for writing the logits");
  out.write(reinterpret_cast<const char *>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
  out.close();
  if (!out)
    throw Error(path + ": error while writing the logits");
}

// Logits of the positions, evaluated as one batch or one token at a time.
// Without `all_rows`, a batch returns only the last row.
std::vector<float> evaluate(Session &session, const std::vector<int32_t> &ids, bool one_by_one,
                            bool all_rows) {
  if (!one_by_one)
    return session.eval(ids, {.all_logits = all_rows}).logits;
  std::vector<float> all;
  for (const int32_t id : ids) {
    const std::vector<float> row = session.decode_step(id);
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

} // namespace

int eval_command(const Args &argv) {
  EvalArgs a;
  CommandLine command_line("eval",
                           "eval -m FILE (--tokens IDS | -p TEXT) [--logits OUT.f32] [--greedy N] "
                           "[--one-by-one]");
  command_line.engine(a.engine).logging();
  command_line.add_options()("tokens", po::value(&a.tokens)->value_name("IDS"),
                             "comma-separated token ids, e.g. 1,2,3")(
      "prompt,p", po::value(&a.prompt)->value_name("TEXT"), "text to tokenize instead")(
      "logits", po::value(&a.logits_path)->value_name("OUT.f32"),
      "write the logits of every position: float32 little-endian [n_tokens][n_vocab]")(
      "greedy", po::value(&a.greedy)->value_name("N")->default_value(0),
      "print the N-token greedy continuation as comma-separated ids")(
      "one-by-one", po::bool_switch(&a.one_by_one),
      "evaluate one token per step instead of one batch");
  if (!command_line.parse(argv))
    return kExitOk;
  if (command_line.given("tokens") == command_line.given("prompt"))
    throw UsageError("give exactly one of --tokens IDS and -p TEXT");
  if (a.greedy < 0)
    throw UsageError("--greedy must be >= 0, got " + std::to_string(a.greedy));
  std::vector<int32_t> ids;
  if (command_line.given("tokens"))
    ids = parse_token_list(a.tokens, "--tokens");

  Engine engine = open_engine(a.engine);
  if (ids.empty())
    ids = engine.tokenize(a.prompt);
  if (ids.empty())
    throw UsageError("-p: the text tokenizes to no tokens");
  check_ids(ids, engine.n_vocab());
  const int64_t n_ctx = engine.options().n_ctx;
  check_context({.prompt_tokens = static_cast<int64_t>(ids.size()), .n_ctx = n_ctx});
  // The greedy loop feeds back greedy - 1 tokens after the prompt.
  if (static_cast<int64_t>(ids.size()) + a.greedy - 1 > n_ctx)
    throw Error("--greedy " + std::to_string(a.greedy) + " goes past the context: the " +
                std::to_string(ids.size()) + " tokens and the continuation need " +
                std::to_string(ids.size() + a.greedy - 1) + " positions, the context holds " +
                std::to_string(n_ctx) + "; lower it or raise -c/--ctx-size");

  Session session = open_session(engine, a.engine);
  const std::vector<float> logits =
      evaluate(session, ids, a.one_by_one, /*all_rows=*/!a.logits_path.empty());
  const int32_t n_vocab = engine.n_vocab();
  if (!a.logits_path.empty())
    write_logits(a.logits_path, logits);

  std::vector<int32_t> continuation;
  if (a.greedy > 0) {
    const auto last = std::span<const float>(logits).last(static_cast<size_t>(n_vocab));
    continuation.push_back(argmax(last));
    while (static_cast<int32_t>(continuation.size()) < a.greedy) {
      const int32_t previous = continuation.back();
      continuation.push_back(session.eval_argmax(std::span<const int32_t>(&previous, 1)));
    }
    std::printf("%s\n", join_token_list(continuation).c_str());
  }
  std::fprintf(stderr, "eval: %zu tokens on backend %s%s\n", ids.size(),
               engine.backend().name.c_str(), a.one_by_one ? ", one by one" : "");
  return kExitOk;
}

} // namespace bonsai::cli
