// GrammarMatcher against hand-written expectations: which texts a schema
// accepts, where a prefix dies, and the shortest completion it reports.
#include <gtest/gtest.h>

#include <string>

#include "bonsai/core/grammar.hpp"

namespace bonsai {
namespace {

// The whole text is accepted and complete.
bool matches(const Grammar &g, const std::string &text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.complete();
}

// The text is a prefix of something valid.
bool prefix_ok(const Grammar &g, const std::string &text) {
  GrammarMatcher m(g);
  return m.advance(text);
}

const char *kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
  },
  "required": ["name"],
  "additionalProperties": false
})";

TEST(GrammarMatcher, ObjectPropertiesInSchemaOrder) {
  const Grammar g = Grammar::json_schema(kPerson);
  EXPECT_TRUE(matches(g, R"({"name":"Ada"})"));
  EXPECT_TRUE(matches(g, R"({"name": "Ada", "age": 36})"));
  EXPECT_TRUE(matches(g, "{\n  \"name\": \"Ada\",\n  \"tags\": [\"x\", \"y\"]\n}"));
  EXPECT_TRUE(matches(g, R"({"name":"A","age":-7,"tags":[]})"));
  EXPECT_FALSE(prefix_ok(g, R"({"age")"));                       // name is required and comes first
  EXPECT_FALSE(prefix_ok(g, R"({"name":"A","x")"));              // no additional properties
  EXPECT_FALSE(prefix_ok(g, R"({"name":"A","age":1.5)"));        // integer
  EXPECT_FALSE(prefix_ok(g, R"({"name":"A","tags":["a","b",)")); // maxItems 2
  EXPECT_FALSE(prefix_ok(g, R"({"name":"A"} )"));                // nothing after the value
  EXPECT_FALSE(matches(g, R"({"name":"A")"));                    // not complete
  EXPECT_FALSE(prefix_ok(g, R"({"name":"A","name")"));
}

TEST(GrammarMatcher, ShortestCompletionCountsBytes) {
  const Grammar g = Grammar::json_schema(kPerson);
  GrammarMatcher m(g);
  EXPECT_EQ(m.min_bytes_to_complete(), 11); // {"name":""}
  ASSERT_TRUE(m.advance(R"({"name":"Ad)"));
  EXPECT_EQ(m.min_bytes_to_complete(), 2); // "}
  ASSERT_TRUE(m.advance(R"(","tags":[)"));
  EXPECT_EQ(m.min_bytes_to_complete(), 2); // ]}
  ASSERT_TRUE(m.advance(R"("q"]})"));
  EXPECT_EQ(m.min_bytes_to_complete(), 0);
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.can_continue());
}

TEST(GrammarMatcher, StringsEscapesAndUtf8) {
  const Grammar g = Grammar::json_schema(R"({"type": "string", "maxLength": 3})");
  EXPECT_TRUE(matches(g, R"("a\"b")"));
  EXPECT_TRUE(matches(g, "\"\xC3\xA9\xE2\x82\xAC\"")); // é€: two characters
  EXPECT_FALSE(prefix_ok(g, "\"abcd"));                // a fourth character
  EXPECT_FALSE(prefix_ok(g, "\"\xC0\xAF"));            // overlong
  EXPECT_FALSE(prefix_ok(g, "\"\xED\xA0"));            // a surrogate
  EXPECT_FALSE(prefix_ok(g, "\"a\nb"));                // raw control character
  EXPECT_FALSE(prefix_ok(g, R"("\u0041)"));            // \u escapes are not produced
  const Grammar at_least = Grammar::json_schema(R"({"type": "string", "minLength": 2})");
  EXPECT_FALSE(matches(at_least, R"("a")"));
  EXPECT_TRUE(matches(at_least, R"("ab")"));
  GrammarMatcher m(at_least);
  EXPECT_EQ(m.min_bytes_to_complete(), 4);
}

TEST(GrammarMatcher, NumbersFollowJsonSyntax) {
  const Grammar num = Grammar::json_schema(R"({"type": "number"})");
  for (const char *ok : {"0", "-0", "12.5", "1e9", "-3.25E-2", "7E+1"})
    EXPECT_TRUE(matches(num, ok)) << ok;
  for (const char *bad : {"01", "+1", ".5", "1.", "1e", "--1", "1.2.3"})
    EXPECT_FALSE(matches(num, bad)) << bad;
  const Grammar integer = Grammar::json_schema(R"({"type": "integer"})");
  EXPECT_TRUE(matches(integer, "-42"));
  EXPECT_FALSE(prefix_ok(integer, "4."));
  EXPECT_FALSE(prefix_ok(integer, "12345678901234567")); // 17 digits: past the bound
}

TEST(GrammarMatcher, EnumConstAnyOfAndTypeLists) {
  const Grammar e = Grammar::json_schema(R"({"enum": ["red", "green", 3, null]})");
  EXPECT_TRUE(matches(e, R"("green")"));
  EXPECT_TRUE(matches(e, "3"));
  EXPECT_TRUE(matches(e, "null"));
  EXPECT_FALSE(prefix_ok(e, R"("blue")"));
  const Grammar typed = Grammar::json_schema(R"({"type": "string", "enum": ["a", 1]})");
  EXPECT_FALSE(prefix_ok(typed, "1")); // the enum value of another type is left out
  const Grammar c = Grammar::json_schema(R"({"const": {"k": [1, true]}})");
  EXPECT_TRUE(matches(c, R"({"k":[1,true]})"));
  const Grammar any =
      Grammar::json_schema(R"({"anyOf": [{"type": "string"}, {"type": "null"}], "title": "t"})");
  EXPECT_TRUE(matches(any, R"("x")"));
  EXPECT_TRUE(matches(any, "null"));
  EXPECT_FALSE(prefix_ok(any, "1"));
  const Grammar list = Grammar::json_schema(R"({"type": ["boolean", "null"]})");
  EXPECT_TRUE(matches(list, "false"));
  EXPECT_FALSE(prefix_ok(list, "\""));
}

TEST(GrammarMatcher, AdditionalPropertiesAvoidDeclaredNames) {
  const Grammar g = Grammar::json_schema(R"({
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "additionalProperties": {"type": "boolean"}
  })");
  EXPECT_TRUE(matches(g, R"({"id":1,"flag":true})"));
  EXPECT_TRUE(matches(g, R"({"idx":false})"));
  EXPECT_TRUE(matches(g, R"({})"));
  EXPECT_FALSE(prefix_ok(g, R"({"flag":1)"));
  // "id" as an additional key would be a second, differently typed "id".
  EXPECT_FALSE(prefix_ok(g, R"({"id":1,"id")"));
}

TEST(GrammarMatcher, RefsAndDefinitions) {
  const Grammar g = Grammar::json_schema(R"({
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}},
                        "required": ["x"], "additionalProperties": false}},
    "type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1
  })");
  EXPECT_TRUE(matches(g, R"([{"x":1},{"x":2.5}])"));
  EXPECT_FALSE(matches(g, "[]"));
  GrammarMatcher m(g);
  EXPECT_EQ(m.min_bytes_to_complete(), 9); // [{"x":0}]
}

TEST(GrammarMatcher, PatternsAreMatchedWhileWriting) {
  const Grammar g = Grammar::json_schema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})");
  EXPECT_TRUE(matches(g, R"("AB-123")"));
  EXPECT_FALSE(prefix_ok(g, R"("A1)"));
  EXPECT_FALSE(prefix_ok(g, R"("AB-1234)"));
  EXPECT_FALSE(matches(g, R"("AB-12")"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.advance(R"("AB)"));
  EXPECT_EQ(m.min_bytes_to_complete(), 5); // -000"
  EXPECT_FALSE(prefix_ok(g, "\"\xC3"));    // no letter of the pattern starts with this byte
  const Grammar accent = Grammar::json_schema(R"({"type": "string", "pattern": "^\u00e9$"})");
  EXPECT_TRUE(prefix_ok(accent, "\"\xC3"));
  EXPECT_FALSE(prefix_ok(accent, "\"\xC4"));
  EXPECT_TRUE(matches(accent, "\"\xC3\xA9\""));
  const Grammar search = Grammar::json_schema(R"({"type": "string", "pattern": "ab|cd"})");
  EXPECT_TRUE(matches(search, R"("xxcdyy")")); // unanchored: anywhere in the text
  EXPECT_FALSE(matches(search, R"("xy")"));
}

TEST(GrammarMatcher, AnyJsonObject) {
  const Grammar g = Grammar::json_object();
  EXPECT_TRUE(matches(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(matches(g, "{ }"));
  EXPECT_FALSE(prefix_ok(g, "["));
  EXPECT_FALSE(prefix_ok(g, R"({"a" 1)"));
}

TEST(GrammarMatcher, ToolCallsInQwenForm) {
  const ToolSchema tools[] = {{"get_weather",
                               R"({"type":"object","properties":{"city":{"type":"string"}},)"
                               R"("required":["city"],"additionalProperties":false})"},
                              {"now", ""}};
  const Grammar one = Grammar::tool_calls(tools, false);
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  EXPECT_TRUE(matches(one, call));
  EXPECT_TRUE(matches(one, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(prefix_ok(one, "<tool_call>\n{\"name\": \"later\""));
  EXPECT_FALSE(prefix_ok(one, call + "\n<"));
  const Grammar many = Grammar::tool_calls(tools, true);
  EXPECT_TRUE(matches(many, call + "\n" + call));
}

// An agent with tools and an output format: its reply is calls, or one
// value of the format, never prose and never both.
TEST(GrammarMatcher, ToolCallsOrAValueOfTheFormat) {
  const ToolSchema tools[] = {
      {"get_weather", R"({"type":"object","properties":{"city":{"type":"string"}}})"}};
  const Grammar g = Grammar::tool_calls_or_value(
      tools, true,
      R"({"type":"object","properties":{"t":{"type":"number"}},"required":["t"],"additionalProperties":false})");
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  EXPECT_TRUE(matches(g, call));
  EXPECT_TRUE(matches(g, call + "\n" + call));
  EXPECT_TRUE(matches(g, R"({"t": 18})"));
  EXPECT_FALSE(matches(g, R"({"t": "warm"})"));
  EXPECT_FALSE(matches(g, R"({})"));
  EXPECT_FALSE(prefix_ok(g, "It is"));
  EXPECT_FALSE(prefix_ok(g, R"({"t": 1})" + call));
  // An empty schema text: any object.
  const Grammar any = Grammar::tool_calls_or_value(tools, false, "");
  EXPECT_TRUE(matches(any, R"({"anything": [1]})"));
  EXPECT_FALSE(matches(any, "[1]"));
  EXPECT_THROW((void)Grammar::tool_calls_or_value(
                   tools, false, R"({"type":"object","required":["a"],"properties":{"a":false}})"),
               Error);
}

// A tool's arguments are a JSON object whatever its parameters schema
// allows: a schema that says nothing means any object, a type list is
// narrowed to object, and a schema without a type is one of an object.
TEST(GrammarMatcher, ToolArgumentsAreAlwaysAnObject) {
  const auto call = [](const std::string &arguments) {
    return "<tool_call>\n{\"name\": \"f\", \"arguments\": " + arguments + "}\n</tool_call>";
  };
  for (const char *parameters :
       {"", "{}", "true", R"({"description":"no arguments"})", R"({"type":["object","null"]})"}) {
    SCOPED_TRACE(parameters);
    const ToolSchema tools[] = {{"f", parameters}};
    const Grammar g = Grammar::tool_calls(tools, false);
    EXPECT_TRUE(matches(g, call("{}")));
    for (const char *other : {"[]", "2883791", "null", R"("{}")"})
      EXPECT_FALSE(matches(g, call(other))) << other;
  }
  for (const char *parameters : {"", "{}", "true"}) {
    const ToolSchema tools[] = {{"f", parameters}};
    EXPECT_TRUE(matches(Grammar::tool_calls(tools, false), call(R"({"a": [1]})"))) << parameters;
  }
  const ToolSchema typed[] = {{"f", R"({"properties":{"a":{"type":"integer"}},"required":["a"]})"}};
  const Grammar g = Grammar::tool_calls(typed, false);
  EXPECT_TRUE(matches(g, call(R"({"a": 5})")));
  EXPECT_FALSE(matches(g, call("5")));
  EXPECT_FALSE(matches(g, call(R"({"a": "5"})")));
}

// Parameters that allow no object, or whose top level is a reference or a
// combination, are refused with the tool's name and the reason.
TEST(GrammarMatcher, ToolParametersThatAllowNoObjectAreRefused) {
  const auto refusal = [](const char *parameters) -> std::string {
    const ToolSchema tools[] = {{"f", parameters}};
    try {
      (void)Grammar::tool_calls(tools, false);
    } catch (const Error &e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal(R"({"type":"integer"})"),
            "tool 'f' parameters: arguments are a JSON object, but 'type' is \"integer\"");
  EXPECT_EQ(
      refusal(R"({"type":["string","null"]})"),
      "tool 'f' parameters: arguments are a JSON object, but 'type' is [\"string\",\"null\"]");
  EXPECT_EQ(refusal(R"({"enum":[{"a":1},2]})"),
            "tool 'f' parameters: arguments are a JSON object, but 'enum' allows 2");
  EXPECT_NE(refusal(R"({"anyOf":[{"type":"object"},{"type":"null"}]})").find("not 'anyOf'"),
            std::string::npos);
  // A reference to an object schema (Pydantic's recursive models) is one.
  EXPECT_EQ(refusal(R"({"$ref":"#/$defs/a","$defs":{"a":{"type":"object"}}})"), "accepted");
  EXPECT_NE(refusal(R"({"$ref":"#/$defs/a","$defs":{"a":{"type":["object","null"]}}})")
                .find("not '$ref' that allows other values"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"type":"object","properties":{}})"), "accepted");
}

TEST(GrammarMatcher, ReasoningBlockBeforeTheValue) {
  const Grammar g = Grammar::json_schema(R"({"type": "boolean"})");
  const Grammar optional = g.after_reasoning(false);
  EXPECT_TRUE(matches(optional, "true"));
  EXPECT_TRUE(matches(optional, "<think>\nno </thin yes</think>\n\nfalse"));
  EXPECT_FALSE(prefix_ok(optional, "<think>x</think>1"));
  // Blank lines only after a think block: without one the value comes first.
  EXPECT_TRUE(matches(optional, "<think>x</think>\n\ntrue"));
  EXPECT_FALSE(prefix_ok(optional, " "));
  EXPECT_FALSE(prefix_ok(optional, "\n"));
  const Grammar opened = g.after_reasoning(true);
  EXPECT_TRUE(matches(opened, "plan</think>true"));
  GrammarMatcher m(opened);
  EXPECT_EQ(m.min_bytes_to_complete(), 12); // </think>true
}

} // namespace
} // namespace bonsai
