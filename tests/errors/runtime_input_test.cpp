// Catalogue rows "bad input at run time" (docs/errors.md, section 4): token
// ids outside the vocabulary, a prompt longer than the context, invalid UTF-8
// in the prompt. The C++ API throws a typed error before any work and the
// session is left unchanged; the program prints one line and exits with 1.
#include <gmock/gmock.h>

#include "bonsai/engine.hpp"
#include "errors_support.hpp"

namespace bonsai::errors_test {
namespace {

// The golden tiny model: 2048 embedding rows and 2048 tokens, no chat template.
class RuntimeInputErrors : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    EngineOptions options;
    options.backend = cpu_plugin();
    options.n_ctx = 64;
    options.plugin_options = "kernels=reference";
    engine_ = new Engine(Engine::open(model_, options));
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static inline const std::string model_ = data_file("tiny-q1.gguf");
  static inline Engine *engine_ = nullptr;
};

TEST_F(RuntimeInputErrors, TokenIdOutOfRangeInEval) {
  Session session = engine_->create_session();
  const std::vector<int32_t> too_big = {1, 2048};
  Thrown t = thrown_by([&] { session.eval(too_big); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message, "eval: token 2048 at index 1 is outside the vocabulary [0, 2048)");
  const std::vector<int32_t> negative = {-1};
  t = thrown_by([&] { session.eval(negative); });
  EXPECT_EQ(t.message, "eval: token -1 at index 0 is outside the vocabulary [0, 2048)");
  EXPECT_EQ(session.position(), 0);
}

TEST_F(RuntimeInputErrors, TokenIdOutOfRangeInGenerateAndDetokenize) {
  Session session = engine_->create_session();
  GenerateRequest request;
  request.prompt_tokens = {5, 7, 99999};
  Thrown t = thrown_by([&] { session.generate(request); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message,
            "generate: prompt: token 99999 at index 2 is outside the vocabulary [0, 2048)");
  const std::vector<int32_t> ids = {3, -7};
  t = thrown_by([&] { (void)engine_->detokenize(ids); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message,
            "detokenize: token -7 at index 1 is outside the tokenizer's vocabulary [0, 2048)");
  EXPECT_EQ(session.position(), 0);
}

TEST_F(RuntimeInputErrors, TokenIdOutOfRangeInTheProgram) {
  expect_cli_error(
      run_bonsai({"eval", "-m", model_, "--backend", cpu_plugin(), "--tokens", "1,2048"}), 1,
      "--tokens: id 2048 (item 2) is outside the model's vocabulary of 2048 tokens");
}

TEST_F(RuntimeInputErrors, PromptLongerThanContext) {
  Session session = engine_->create_session();
  GenerateRequest request;
  request.prompt_tokens.assign(100, 42);
  request.n_predict = 1;
  Thrown t = thrown_by([&] { session.generate(request); });
  EXPECT_EQ(t.type, "ContextFullError");
  EXPECT_EQ(t.message,
            "generate: the prompt of 100 tokens does not fit the context window of 64 tokens");
  const std::vector<int32_t> tokens(65, 42);
  t = thrown_by([&] { session.eval(tokens); });
  EXPECT_EQ(t.type, "ContextFullError");
  EXPECT_EQ(t.message, "eval: 65 tokens at position 0 do not fit the context window of 64 tokens");
  EXPECT_EQ(session.position(), 0);
}

TEST_F(RuntimeInputErrors, PromptLongerThanContextInTheProgram) {
  // 100 ids, given explicitly so the count does not depend on the tokenizer.
  std::string ids = "42";
  for (int i = 1; i < 100; ++i)
    ids += ",42";
  expect_cli_error(
      run_bonsai({"eval", "-m", model_, "--backend", cpu_plugin(), "-c", "64", "--tokens", ids}), 1,
      "the prompt is 100 tokens, which does not fit in the context of 64 tokens; "
      "shorten it or raise -c/--ctx-size");
  // "x" is token 87 and " x" token 856 (merge "Ġ x") in the model's
  // vocabulary, so this text is 81 tokens.
  std::string text = "x";
  for (int i = 0; i < 80; ++i)
    text += " x";
  expect_cli_error(
      run_bonsai({"run", "-m", model_, "--backend", cpu_plugin(), "-c", "64", "-p", text}), 1,
      "the prompt is 81 tokens, which does not fit in the context of 64 tokens; "
      "shorten it or raise -c/--ctx-size");
}

TEST_F(RuntimeInputErrors, InvalidUtf8InThePrompt) {
  Thrown t = thrown_by([&] { (void)engine_->tokenize("hi \xFF there"); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message, model_ + ": cannot tokenize text that is not valid UTF-8 (byte 0xFF at "
                                "offset 3)");
  Session session = engine_->create_session();
  GenerateRequest request;
  request.prompt = "ok \xC3\x28";
  t = thrown_by([&] { session.generate(request); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message, "generate: " + model_ +
                           ": cannot tokenize text that is not valid UTF-8 (byte 0xC3 at "
                           "offset 3)");
  expect_cli_error(
      run_bonsai({"run", "-m", model_, "--backend", cpu_plugin(), "-p", "hi \xED\xA0\x80"}), 1,
      model_ + ": cannot tokenize text that is not valid UTF-8 (byte 0xED at offset 3)");
}

TEST_F(RuntimeInputErrors, ReplyFormatsThatCannotBeFollowed) {
  Session session = engine_->create_session();
  GenerateRequest request;
  request.prompt = "hi";
  request.format.kind = ReplyFormat::Kind::json_schema;
  const std::pair<std::string, std::string> rows[] = {
      {R"({"type": "string", "format": "iri"})",
       "json_schema: the format 'iri' is not supported (supported: "},
      {R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})",
       "json_schema: the recursive '$ref' \"#\" comes back to itself before an object or array "
       "opens (left recursion is not supported) (at #/anyOf/0)"},
      {R"({"type": "string", "pattern": "(?<=a)b"})",
       "json_schema: pattern: look-behind groups ((?<=, (?<!) are not supported (at #)"},
      {R"({"type": "string", "minLength": 4, "maxLength": 2})",
       "json_schema: 'maxLength' is below 'minLength': nothing matches (at #)"},
      {"{\"type\": ", "json_schema: not valid JSON ("},
  };
  for (const auto &[schema, message] : rows) {
    request.format.schema = schema;
    const Thrown t = thrown_by([&] { session.generate(request); });
    EXPECT_EQ(t.type, "FormatError") << schema;
    EXPECT_EQ(t.message.substr(0, message.size()), message) << schema;
  }
  request.format.kind = ReplyFormat::Kind::tool_calls;
  request.format.tools = {{"say \"hi\"", ""}};
  const Thrown t = thrown_by([&] { session.generate(request); });
  EXPECT_EQ(t.message, "tool calls: the tool name \"say \\\"hi\\\"\" holds a quote, a "
                       "backslash or a control character");
  EXPECT_EQ(session.position(), 0);
  // A stop string could cut the value short, so a format takes none.
  request.format.kind = ReplyFormat::Kind::json_object;
  request.stop_strings = {"}"};
  const Thrown stop = thrown_by([&] { session.generate(request); });
  EXPECT_EQ(stop.type, "InvalidArgument");
  EXPECT_EQ(stop.message, "generate: stop strings cannot be used with a reply format: one could "
                          "cut the value before it is complete");
  EXPECT_EQ(session.position(), 0);
  expect_cli_error(run_bonsai({"run", "-m", model_, "--backend", cpu_plugin(), "-p", "hi", "-j",
                               R"({"type": "integer", "not": {"multipleOf": 2}})"}),
                   1, "json_schema: the keyword 'not' is not supported (at #)");
}

} // namespace
} // namespace bonsai::errors_test
