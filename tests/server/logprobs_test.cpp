// logprobs through the server, checked against the float64 reference logits
// of the golden tiny-q1 prompt (tests/data/tiny-q1.ref.logits.f32): the
// chosen token's log probability and the best alternatives at a step are
// those of softmax(reference logits / temperature), computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

#include "server_test_support.hpp"

namespace {

using namespace server_test;

constexpr size_t kVocab = 2048;

std::vector<int32_t> golden_prompt() {
  std::ifstream in(data_path("tiny-q1.prompt.json"));
  return json::parse(in)["tokens"].get<std::vector<int32_t>>();
}

std::vector<float> read_f32(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto bytes = static_cast<size_t>(in.tellg());
  std::vector<float> out(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(out.data()), static_cast<std::streamsize>(bytes));
  return out;
}

// log softmax(row / t) at every id, in double.
std::vector<double> log_softmax(const float *row, double t) {
  double top = row[0];
  for (size_t v = 1; v < kVocab; ++v)
    top = std::max(top, static_cast<double>(row[v]));
  double sum = 0;
  for (size_t v = 0; v < kVocab; ++v)
    sum += std::exp((row[v] - top) / t);
  std::vector<double> out(kVocab);
  for (size_t v = 0; v < kVocab; ++v)
    out[v] = (row[v] - top) / t - std::log(sum);
  return out;
}

// Whether a token's bytes are part of a UTF-8 character rather than whole
// characters.
bool partial_character(const std::string &piece) {
  return json(piece).dump(-1, ' ', false, json::error_handler_t::replace) !=
         json(piece).dump(-1, ' ', false, json::error_handler_t::ignore);
}

// A token's key in the legacy top_logprobs object: its text, or for part
// of a character OpenAI's "bytes:" and a \xNN escape per byte.
std::string legacy_key(const bonsai::Engine &engine, size_t id) {
  const std::string piece = engine.token_piece(static_cast<int32_t>(id));
  if (!partial_character(piece))
    return piece;
  static const char kHex[] = "0123456789abcdef";
  std::string text = "bytes:";
  for (const unsigned char c : piece) {
    text += "\\x";
    text += kHex[c >> 4];
    text += kHex[c & 15];
  }
  return text;
}

class ServerLogprobs : public ::testing::Test {
protected:
  static void SetUpTestSuite() { server_ = new RunningServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static inline RunningServer *server_ = nullptr;
};

TEST_F(ServerLogprobs, CompletionLogprobsMatchTheReferenceDistribution) {
  const std::vector<int32_t> prompt = golden_prompt();
  const std::vector<float> reference = read_f32(data_path("tiny-q1.ref.logits.f32"));
  ASSERT_EQ(reference.size(), prompt.size() * kVocab);
  const bonsai::Engine engine = open_tiny();
  for (const size_t k : {size_t{9}, size_t{30}}) {
    for (const double t : {0.0, 0.7}) {
      const json body = {{"prompt", std::vector<int32_t>(prompt.begin(), prompt.begin() + k)},
                         {"max_tokens", 1},
                         {"temperature", t},
                         {"seed", 5},
                         {"logprobs", 3}};
      const auto r = post(*server_, "/v1/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const json lp = parse(r.body)["choices"][0]["logprobs"];
      const std::vector<double> expected = log_softmax(&reference[(k - 1) * kVocab], t > 0 ? t : 1);
      std::vector<size_t> order(kVocab);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return expected[a] > expected[b]; });
      // The three alternatives are the reference's three most likely tokens.
      ASSERT_EQ(lp["top_logprobs"][0].size(), 3u) << r.body;
      double best = 0;
      for (size_t i = 0; i < 3; ++i) {
        const std::string piece = legacy_key(engine, order[i]);
        ASSERT_TRUE(lp["top_logprobs"][0].contains(piece)) << piece << " " << r.body;
        EXPECT_NEAR(lp["top_logprobs"][0][piece].get<double>(), expected[order[i]], 2e-3);
        best = std::max(best, expected[order[i]]);
      }
      const double chosen = lp["token_logprobs"][0].get<double>();
      EXPECT_LE(chosen, best + 2e-3);
      if (t == 0.0) {
        EXPECT_NEAR(chosen, expected[order[0]], 2e-3); // greedy takes the best
      }
      EXPECT_EQ(lp["text_offset"][0], 0);
    }
  }
}

// Where the best alternatives include tokens that hold part of a UTF-8
// character, each keeps a key of its own: OpenAI's "bytes:\xNN" form, not a
// U+FFFD that two of them would share (the object would lose one).
TEST_F(ServerLogprobs, PartialCharacterAlternativesKeepTheirOwnKeys) {
  const std::vector<int32_t> prompt = golden_prompt();
  const std::vector<float> reference = read_f32(data_path("tiny-q1.ref.logits.f32"));
  const bonsai::Engine engine = open_tiny();
  size_t checked = 0;
  for (size_t k = 1; k <= prompt.size() && checked < 3; ++k) {
    const std::vector<double> expected = log_softmax(&reference[(k - 1) * kVocab], 1);
    std::vector<size_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](size_t a, size_t b) { return expected[a] > expected[b]; });
    if (std::count_if(order.begin(), order.begin() + 5, [&](size_t id) {
          return partial_character(engine.token_piece(static_cast<int32_t>(id)));
        }) < 2)
      continue;
    ++checked;
    const json body = {{"prompt", std::vector<int32_t>(prompt.begin(), prompt.begin() + k)},
                       {"max_tokens", 1},
                       {"temperature", 0},
                       {"logprobs", 5}};
    const auto r = post(*server_, "/v1/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json top = parse(r.body)["choices"][0]["logprobs"]["top_logprobs"][0];
    ASSERT_EQ(top.size(), 5u) << r.body;
    for (size_t i = 0; i < 5; ++i) {
      const std::string key = legacy_key(engine, order[i]);
      ASSERT_TRUE(top.contains(key)) << key << " " << r.body;
      EXPECT_NEAR(top[key].get<double>(), expected[order[i]], 2e-3);
    }
  }
  EXPECT_GT(checked, 0u) << "no golden position has two partial characters among its best five";
}

TEST_F(ServerLogprobs, ChatLogprobsCoverTheReplyBestFirst) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}},
                     {"max_tokens", 8},
                     {"temperature", 0},
                     {"logprobs", true},
                     {"top_logprobs", 4}};
  const auto r = post(*server_, "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = parse(r.body)["choices"][0];
  const json content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), parse(r.body)["usage"]["completion_tokens"].get<size_t>());
  std::string bytes;
  for (const json &entry : content) {
    for (const auto &b : entry["bytes"])
      bytes.push_back(static_cast<char>(b.get<int>()));
    const json top = entry["top_logprobs"];
    ASSERT_EQ(top.size(), 4u);
    for (size_t i = 1; i < top.size(); ++i)
      EXPECT_GE(top[i - 1]["logprob"].get<double>(), top[i]["logprob"].get<double>());
    // Greedy: the chosen token is the best alternative.
    EXPECT_EQ(entry["token"], top[0]["token"]);
    EXPECT_DOUBLE_EQ(entry["logprob"].get<double>(), top[0]["logprob"].get<double>());
    double mass = 0;
    for (const json &alt : top)
      mass += std::exp(alt["logprob"].get<double>());
    EXPECT_LE(mass, 1.0 + 1e-6);
  }
  EXPECT_EQ(bytes, choice["message"]["content"].get<std::string>());
}

TEST_F(ServerLogprobs, StreamedChunksCarryEveryTokenOnce) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}},
                     {"max_tokens", 10},
                     {"temperature", 0},
                     {"logprobs", true},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  const Streamed s = post_stream(*server_, "/v1/chat/completions", body.dump());
  ASSERT_EQ(s.status, 200);
  size_t entries = 0, tokens = 0;
  for (const std::string &event : s.events) {
    if (event == "[DONE]")
      continue;
    const json chunk = parse(event);
    if (chunk.contains("usage") && chunk["usage"].is_object())
      tokens = chunk["usage"]["completion_tokens"].get<size_t>();
    if (!chunk["choices"].empty() && chunk["choices"][0]["logprobs"].is_object())
      entries += chunk["choices"][0]["logprobs"]["content"].size();
  }
  EXPECT_EQ(entries, tokens);
  EXPECT_GT(tokens, 0u);
}

TEST_F(ServerLogprobs, BadValuesAreRefusedByName) {
  const std::pair<json, std::string> cases[] = {
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}, "top_logprobs"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}},
        {"logprobs", true},
        {"top_logprobs", 21}},
       "top_logprobs"},
      {{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"logprobs", 3}}, "logprobs"},
  };
  for (const auto &[body, param] : cases) {
    const auto r = post(*server_, "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 400) << body << r.body;
    EXPECT_EQ(parse(r.body)["error"]["param"], param) << r.body;
  }
  const auto r = post(*server_, "/v1/completions", R"({"prompt": "x", "logprobs": 6})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(parse(r.body)["error"]["param"], "logprobs");
}

} // namespace
