#include "generation/constrained_choice.hpp"

#include <chrono>
#include <limits>

#include "bonsai/core/grammar.hpp"
#include "generation/generate_support.hpp"

namespace bonsai::host {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Grammar compile(const ReplyFormat &format) {
  switch (format.kind) {
  case ReplyFormat::Kind::json_object:
    return Grammar::json_object();
  case ReplyFormat::Kind::json_schema:
    return Grammar::json_schema(format.schema);
  case ReplyFormat::Kind::tool_calls: {
    std::vector<ToolSchema> tools;
    for (const auto &tool : format.tools)
      tools.push_back({tool.name, tool.parameters});
    return Grammar::tool_calls(tools, format.parallel_tool_calls);
  }
  case ReplyFormat::Kind::tool_calls_or_json: {
    std::vector<ToolSchema> tools;
    for (const auto &tool : format.tools)
      tools.push_back({tool.name, tool.parameters});
    return Grammar::tool_calls_or_value(tools, format.parallel_tool_calls, format.schema);
  }
  case ReplyFormat::Kind::text:
    break;
  }
  throw FormatError("reply format: nothing to compile for plain text");
}

} // namespace

int32_t tighter_budget(int32_t a, int32_t b) {
  if (a < 0)
    return b;
  if (b < 0)
    return a;
  return std::min(a, b);
}

ConstrainedChoice::ConstrainedChoice(const Engine::Impl &engine, const GenerateRequest &request,
                                     std::span<const int32_t> prompt,
                                     std::vector<int32_t> end_tokens) {
  if (request.format.kind == ReplyFormat::Kind::text)
    return;
  Grammar grammar = [&] {
    try {
      return compile(request.format);
    } catch (const FormatError &) {
      throw;
    } catch (const Error &e) {
      throw FormatError(e.what());
    }
  }();
  // A chat whose thinking is on may reason first; a prompt that opened the
  // block starts inside it.
  const ThinkTags tags(engine.tokenizer);
  const bool chat = request.chat || !request.messages.empty();
  if (tags.ends_open(prompt))
    grammar = grammar.after_reasoning(true);
  else if (tags.known() && chat && request.enable_thinking)
    grammar = grammar.after_reasoning(false);
  constraint_.emplace(std::move(grammar), engine.token_index(), std::move(end_tokens));
}

int32_t ConstrainedChoice::choose(std::span<const float> logits, Sampler *sampler, int32_t budget) {
  const int32_t first = sampler ? sampler->sample(logits) : argmax(logits);
  const auto start = Clock::now();
  ++tokens_;
  masked_last_ = false;
  if (constraint_->allows(first, budget)) {
    ms_ += ms_since(start);
    return first;
  }
  ++masks_;
  const std::vector<uint8_t> *mask = &constraint_->mask(budget);
  const auto any = [](const std::vector<uint8_t> &m) {
    return std::find(m.begin(), m.end(), uint8_t{1}) != m.end();
  };
  // A budget below the shortest completion cannot be met: the reply is then
  // cut at the limit (finish "length") instead of being refused outright.
  if (!any(*mask))
    mask = &constraint_->mask(-1);
  if (!any(*mask))
    throw Error("constrained decoding: no token can continue the reply");
  masked_.assign(logits.begin(), logits.end());
  for (size_t i = 0; i < masked_.size(); ++i)
    if (i >= mask->size() || (*mask)[i] == 0)
      masked_[i] = -std::numeric_limits<float>::infinity();
  masked_last_ = true;
  ms_ += ms_since(start);
  return sampler ? sampler->sample(masked_) : argmax(masked_);
}

void ConstrainedChoice::accept(int32_t token) {
  const auto start = Clock::now();
  constraint_->accept(token);
  ms_ += ms_since(start);
}

void ConstrainedChoice::add_to(GenerateStats &stats) const {
  stats.constrained_tokens += tokens_;
  stats.constraint_masks += masks_;
  stats.constraint_ms += ms_;
}

} // namespace bonsai::host
