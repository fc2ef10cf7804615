// Schemas outside the supported subset, and hostile ones, are refused with
// a message that names the keyword (or the limit) and where it sits.
#include <gtest/gtest.h>

#include <string>

#include "bonsai/core/grammar.hpp"

namespace bonsai {
namespace {

// Definition i: an object whose two properties both refer to definition i+1.
std::string fmt_pair(int i) {
  std::string next = "\"#/$defs/d";
  next.append(std::to_string(i + 1)).append("\"");
  std::string out = "\"d";
  out.append(std::to_string(i))
      .append(R"(":{"type":"object","properties":{"a":{"$ref":)")
      .append(next)
      .append(R"(},"b":{"$ref":)")
      .append(next)
      .append("}}},");
  return out;
}

std::string refusal(const std::string &schema, const GrammarLimits &limits = {}) {
  try {
    (void)Grammar::json_schema(schema, limits);
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

TEST(SchemaRefusal, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"d":{"not":{"type":"null"}}}})"),
            "json_schema: the keyword 'not' is not supported (at #/properties/d)");
  for (const char *keyword :
       {"if", "patternProperties", "contains", "dependentSchemas", "unevaluatedProperties",
        "unevaluatedItems", "$dynamicRef", "$anchor", "nullable"})
    EXPECT_EQ(refusal(std::string(R"({"type":"object",")") + keyword + R"(":{}})"),
              std::string("json_schema: the keyword '") + keyword + "' is not supported (at #)");
  EXPECT_NE(refusal(R"({"not":{}})").find("'not'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"array","items":[{"type":"string"}]})").find("tuple"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"array","uniqueItems":true})").find("uniqueItems"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"strng"})").find("not a JSON Schema type"), std::string::npos);
  EXPECT_EQ(refusal(R"({"type":"string","title":"x","description":"y","default":"z"})"),
            "accepted");
}

TEST(SchemaRefusal, UnsatisfiableAndAmbiguousSchemas) {
  EXPECT_NE(refusal("false").find("matches nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","minLength":3,"maxLength":2})").find("below"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})").find("oneOf"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"oneOf":[{"type":"string"},{"type":"null"}]})"), "accepted");
  EXPECT_NE(
      refusal(R"({"type":"object","required":["x"],"additionalProperties":false})").find("'x'"),
      std::string::npos);
  EXPECT_NE(refusal("{not json").find("not valid JSON"), std::string::npos);
}

TEST(SchemaRefusal, RecursiveRefsAndBadPointers) {
  // Recursion through an object or array is grammar recursion; back to
  // itself before one opens, it is refused.
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"next":{"$ref":"#"}}})"), "accepted");
  EXPECT_NE(refusal(R"({"$ref":"#"})").find("recursive"), std::string::npos);
  // Beside other keywords a recursive reference takes its target's
  // keywords in once more; a chain that only ever does so is refused.
  EXPECT_EQ(refusal(R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a","maxItems":2}}},)"
                    R"("$ref":"#/$defs/a"})"),
            "accepted");
  EXPECT_NE(refusal(R"({"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}],"type":"array"}},)"
                    R"("$ref":"#/$defs/a"})")
                .find("comes back to itself"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},)"
                    R"("$ref":"#/$defs/a"})")
                .find("recursive"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"https://example.com/s.json"})").find("not a reference"),
            std::string::npos);
}

TEST(SchemaRefusal, HostileSizesHitLimits) {
  std::string deep;
  for (int i = 0; i < 40; ++i)
    deep += R"({"type":"array","items":)";
  deep += "true";
  for (int i = 0; i < 40; ++i)
    deep += "}";
  EXPECT_NE(refusal(deep).find("deeper than 32"), std::string::npos);

  std::string big_enum = R"({"enum":[0)";
  for (int i = 1; i < 2000; ++i)
    big_enum.append(",").append(std::to_string(i));
  big_enum += "]}";
  EXPECT_NE(refusal(big_enum).find("2000 values"), std::string::npos);

  // A chain of definitions that each use the next twice: 2^12 copies would
  // pass the node limit; each is compiled once and shared.
  std::string chain = R"({"$defs":{)";
  for (int i = 0; i < 12; ++i)
    chain += fmt_pair(i);
  chain += R"("d12":{"type":"integer"}},"$ref":"#/$defs/d0"})";
  EXPECT_EQ(refusal(chain), "accepted");

  // Optional parts nested deep fan out into many transitions.
  EXPECT_NE(refusal(R"({"type":"string","pattern":"(a?){1000}(b?){1000}"})")
                .find("automaton transitions"),
            std::string::npos);
  // Two length tables of 2,001 states x 1,501 lengths pass the schema's
  // budget of 4,194,304 entries.
  EXPECT_NE(
      refusal(
          R"({"type":"object","properties":{)"
          R"("a":{"type":"string","pattern":"^[a-z]{0,1000}[0-9]{0,1000}$","maxLength":1500},)"
          R"("b":{"type":"string","pattern":"^[A-Z]{0,1000}[0-9]{0,1000}$","maxLength":1500}}})")
          .find("table entries in all"),
      std::string::npos);
}

TEST(SchemaRefusal, PatternsOutsideTheRegularSubset) {
  auto pattern = [](const std::string &p) {
    return refusal(R"({"type":"string","pattern":)" + p + "}");
  };
  EXPECT_NE(pattern(R"x("(a)\\1")x").find("back-references"), std::string::npos);
  EXPECT_NE(pattern(R"x("(?<=a)b")x").find("look-behind"), std::string::npos);
  EXPECT_NE(pattern(R"("\\bword")").find("word boundaries"), std::string::npos);
  EXPECT_NE(pattern(R"("\\p{L}")").find("property"), std::string::npos);
  EXPECT_NE(pattern(R"("a{2000}")").find("above 1000"), std::string::npos);
  EXPECT_NE(pattern(R"x("(a{1000}){1000}")x").find("automaton states"), std::string::npos);
  EXPECT_NE(pattern(R"("[")").find("without its ']'"), std::string::npos);
  EXPECT_NE(pattern(R"("^\"$")").find("matches no string"), std::string::npos);
  EXPECT_EQ(pattern(R"x("^(a+)+$")x"), "accepted"); // catastrophic for backtracking, linear here
}

} // namespace
} // namespace bonsai
