// Grammar's factories and the fixed point that gives every node the fewest
// bytes it can read.
#include "bonsai/core/grammar.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schema_compiler.hpp"

namespace bonsai {
namespace {

using namespace constrain;
using ojson = nlohmann::ordered_json;

constexpr int32_t kMaxParallelCalls = 16;

ojson parse_schema(std::string_view text, const std::string &what) {
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw Error(fmt::format("{}: not valid JSON ({})", what, e.what()));
  }
}

// A tool's `parameters` as the schema of its arguments, which are a JSON
// object (the call's "arguments" is parsed as one): a schema that says more
// than nothing but not the type gets "type": "object", a type list is
// narrowed to it, and a schema that allows no object, or whose top level the
// narrowing cannot reach, is refused. A top level that only ever allows
// objects ($ref to an object schema, as Pydantic writes recursive models,
// or alternatives that are all objects) stays as it is. (One that says
// nothing means any object: the caller checks accepts_anything first.)
ojson object_arguments(ojson doc, const std::string &where) {
  if (!doc.is_object())
    return doc; // the compiler says what is wrong with it
  for (const char *keyword : {"$ref", "anyOf", "oneOf", "allOf"})
    if (doc.contains(keyword)) {
      if (constrain::value_types(doc, constrain::Resolver(doc)) == std::set<std::string>{"object"})
        return doc;
      throw Error(fmt::format("{}: arguments are a JSON object, so the top level must be an "
                              "object schema (\"type\": \"object\"), not '{}' that allows "
                              "other values",
                              where, keyword));
    }
  for (const char *keyword : {"const", "enum"}) {
    const auto values = doc.find(keyword);
    if (values == doc.end())
      continue;
    for (const ojson &v : values->is_array() && std::string_view(keyword) == "enum"
                              ? *values
                              : ojson::array({*values}))
      if (!v.is_object())
        throw Error(fmt::format("{}: arguments are a JSON object, but '{}' allows {}", where,
                                keyword, v.dump(-1, ' ', false, ojson::error_handler_t::replace)));
  }
  const auto type = doc.find("type");
  if (type == doc.end()) {
    doc["type"] = "object";
    return doc;
  }
  for (const ojson &name : type->is_array() ? *type : ojson::array({*type}))
    if (name == "object") {
      *type = "object";
      return doc;
    }
  throw Error(fmt::format("{}: arguments are a JSON object, but 'type' is {}", where,
                          type->dump(-1, ' ', false, ojson::error_handler_t::replace)));
}

int32_t add_sum(int32_t a, int32_t b) {
  return static_cast<int32_t>(std::min<int64_t>(int64_t{a} + b, kUnreachable));
}

// The `n.min` cheapest of `costs`, each with `each` added, summed.
int32_t cheapest(std::vector<int32_t> costs, int32_t n, int32_t each) {
  if (n <= 0)
    return 0;
  if (costs.size() < static_cast<size_t>(n))
    return kUnreachable;
  std::partial_sort(costs.begin(), costs.begin() + n, costs.end());
  int32_t total = 0;
  for (int32_t i = 0; i < n; ++i)
    total = add_sum(total, add_sum(costs[static_cast<size_t>(i)], each));
  return total;
}

} // namespace

void constrain::GrammarData::compute_min_bytes() {
  min_bytes.assign(nodes.size(), kUnreachable);
  auto m = [&](int32_t k) { return k < 0 ? 0 : min_bytes[static_cast<size_t>(k)]; };
  auto automaton_min = [&](const Node &n) {
    const Automaton &a = automata[static_cast<size_t>(n.automaton)];
    return a.min_bytes_to_match(a.start(), 0);
  };
  // A distinct repeat: its `min` cheapest choices and the separators between.
  auto distinct_min = [&](const Node &n) {
    if (n.min == 0)
      return 0;
    std::vector<int32_t> costs;
    for (const int32_t c : nodes[static_cast<size_t>(n.kids[0])].kids)
      costs.push_back(m(c));
    const int32_t sep = n.kids.size() > 1 ? m(n.kids[1]) : 0;
    const int32_t total = cheapest(std::move(costs), n.min, sep);
    return total >= kUnreachable ? kUnreachable : total - sep;
  };
  // An object: its required members, then the cheapest others that
  // minProperties asks for (further members count once), then the close.
  auto object_min = [&](const Node &n) {
    int32_t total = m(n.close), count = 0;
    std::vector<int32_t> optional;
    for (const ObjectMember &member : n.members) {
      if (member.required) {
        total = add_sum(total, add_sum(m(member.first), 1));
        ++count;
      } else {
        optional.push_back(m(member.first));
      }
    }
    if (count < n.min) {
      if (n.additional.first >= 0)
        optional.push_back(m(n.additional.first));
      total = add_sum(total, cheapest(std::move(optional), n.min - count, 1));
      count = n.min;
    }
    if (n.max >= 0 && count > n.max)
      return kUnreachable;
    return count > 0 && total < kUnreachable ? total - 1 : total; // no comma before the first
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node &n = nodes[i];
      int32_t v = kUnreachable;
      switch (n.kind) {
      case NodeKind::literal:
      case NodeKind::until:
        v = static_cast<int32_t>(n.text.size());
        break;
      case NodeKind::string:
        v = 2 + (n.automaton >= 0 ? automaton_min(n) : n.min);
        break;
      case NodeKind::number:
        v = n.automaton >= 0 ? automaton_min(n) : 1;
        break;
      case NodeKind::ws:
        v = 0;
        break;
      case NodeKind::seq:
        v = 0;
        for (const int32_t k : n.kids)
          v = add_sum(v, m(k));
        break;
      case NodeKind::alt:
        for (const int32_t k : n.kids)
          v = std::min(v, m(k));
        break;
      case NodeKind::repeat: {
        if (n.distinct) {
          v = distinct_min(n);
          break;
        }
        const int64_t item = m(n.kids[0]), sep = n.kids.size() > 1 ? m(n.kids[1]) : 0;
        v = n.min == 0 ? 0
                       : static_cast<int32_t>(
                             std::min<int64_t>(item + (n.min - 1) * (sep + item), kUnreachable));
        break;
      }
      case NodeKind::object:
        v = object_min(n);
        break;
      }
      if (v < min_bytes[i]) {
        min_bytes[i] = v;
        changed = true;
      }
    }
  }
}

Grammar Grammar::json_schema(std::string_view schema, const GrammarLimits &limits) {
  const ojson doc = parse_schema(schema, "json_schema");
  auto data = std::make_shared<GrammarData>();
  SchemaCompiler compiler(*data, limits);
  data->root = compiler.value(doc, doc, "#");
  data->compute_min_bytes();
  if (data->min_bytes[static_cast<size_t>(data->root)] >= kUnreachable)
    throw Error("json_schema: no finite JSON value matches the schema");
  return Grammar(std::move(data));
}

Grammar Grammar::json_object() {
  auto data = std::make_shared<GrammarData>();
  SchemaCompiler compiler(*data, GrammarLimits{});
  data->root = compiler.any_object();
  data->compute_min_bytes();
  return Grammar(std::move(data));
}

namespace {

// The calls of `tools` (one, or up to kMaxParallelCalls when `parallel`),
// added to the compiler's grammar; `docs` keeps the parsed schemas alive.
int32_t add_tool_calls(SchemaCompiler &compiler, std::vector<ojson> &docs,
                       std::span<const ToolSchema> tools, bool parallel) {
  if (tools.empty())
    throw Error("tool calls: no tool to call");
  std::vector<int32_t> calls;
  for (const ToolSchema &tool : tools) {
    for (const char c : tool.name)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
        throw Error(fmt::format("tool calls: the tool name {} holds a quote, a backslash or a "
                                "control character",
                                nlohmann::json(tool.name).dump()));
    const std::string where = fmt::format("tool '{}' parameters", tool.name);
    int32_t arguments;
    const ojson parsed =
        tool.parameters.empty() ? ojson(true) : parse_schema(tool.parameters, where);
    if (constrain::accepts_anything(parsed)) {
      arguments = compiler.any_object();
    } else {
      const ojson &doc = docs.emplace_back(object_arguments(parsed, where));
      try {
        arguments = compiler.value(doc, doc, "#");
      } catch (const Error &e) {
        throw Error(fmt::format("{}: {}", where, e.what()));
      }
    }
    calls.push_back(compiler.seq(
        {compiler.literal("<tool_call>\n{\"name\": \"" + tool.name + "\", \"arguments\": "),
         arguments, compiler.literal("}\n</tool_call>")}));
  }
  Node rep;
  rep.kind = NodeKind::repeat;
  rep.kids = {compiler.alt(std::move(calls)), compiler.literal("\n")};
  rep.min = 1;
  rep.max = parallel ? kMaxParallelCalls : 1;
  return compiler.add(std::move(rep));
}

} // namespace

Grammar Grammar::tool_calls(std::span<const ToolSchema> tools, bool parallel,
                            const GrammarLimits &limits) {
  auto data = std::make_shared<GrammarData>();
  SchemaCompiler compiler(*data, limits);
  // The compiler keeps pointers into each document (its $ref targets), so
  // they live as long as it does.
  std::vector<ojson> docs;
  docs.reserve(tools.size());
  data->root = add_tool_calls(compiler, docs, tools, parallel);
  data->compute_min_bytes();
  return Grammar(std::move(data));
}

Grammar Grammar::tool_calls_or_value(std::span<const ToolSchema> tools, bool parallel,
                                     std::string_view schema, const GrammarLimits &limits) {
  auto data = std::make_shared<GrammarData>();
  SchemaCompiler compiler(*data, limits);
  std::vector<ojson> docs;
  docs.reserve(tools.size() + 1);
  const int32_t calls = add_tool_calls(compiler, docs, tools, parallel);
  int32_t value;
  if (schema.empty()) {
    value = compiler.any_object();
  } else {
    const ojson &doc = docs.emplace_back(parse_schema(schema, "json_schema"));
    value = compiler.value(doc, doc, "#");
  }
  data->root = compiler.alt({calls, value});
  data->compute_min_bytes();
  if (data->min_bytes[static_cast<size_t>(value)] >= kUnreachable)
    throw Error("json_schema: no finite JSON value matches the schema");
  return Grammar(std::move(data));
}

Grammar Grammar::after_reasoning(bool opened) const {
  auto data = std::make_shared<GrammarData>(*data_);
  auto add = [&](Node n) {
    data->nodes.push_back(std::move(n));
    return static_cast<int32_t>(data->nodes.size() - 1);
  };
  Node until;
  until.kind = NodeKind::until;
  until.text = "</think>";
  const int32_t block_end = add(std::move(until));
  Node ws;
  ws.kind = NodeKind::ws;
  ws.max = 20;
  const int32_t space = add(std::move(ws));
  // The blank lines a template writes after </think>, and only there: a
  // reply without a think block starts with the value itself.
  Node closed;
  closed.kind = NodeKind::seq;
  closed.kids = {block_end, space};
  int32_t block = add(std::move(closed));
  if (!opened) {
    Node open;
    open.kind = NodeKind::literal;
    open.text = "<think>";
    Node both;
    both.kind = NodeKind::seq;
    both.kids = {add(std::move(open)), block};
    Node nothing;
    nothing.kind = NodeKind::literal;
    Node optional;
    optional.kind = NodeKind::alt;
    optional.kids = {add(std::move(both)), add(std::move(nothing))};
    block = add(std::move(optional));
  }
  Node root;
  root.kind = NodeKind::seq;
  root.kids = {block, data->root};
  data->root = add(std::move(root));
  data->compute_min_bytes();
  return Grammar(std::move(data));
}

} // namespace bonsai
