// Arrays (prefixItems, uniqueItems), objects (propertyNames, min/max
// properties, dependentRequired, allOf merged), recursion and discriminated
// unions: hand-written texts, shortest completions worked out by hand, and
// random texts checked with nlohmann's parser and the rule each schema
// states.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar_test_support.hpp"

namespace bonsai {
namespace {

using nlohmann::json;
using test::matches;
using test::prefix_ok;
using test::random_text;
using test::schema;
using test::shortest_completion;

std::string refusal(const std::string &s) {
  try {
    (void)Grammar::json_schema(s);
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

TEST(SchemaFeatures, TuplesWithPrefixItems) {
  // zod's z.tuple([z.string(), z.number()]).
  const Grammar pair = schema(R"({"type":"array","prefixItems":[{"type":"string"},)"
                              R"({"type":"number"}],"items":false,"minItems":2,"maxItems":2})");
  EXPECT_TRUE(matches(pair, R"(["a", 1.5])"));
  EXPECT_FALSE(matches(pair, R"(["a"])"));
  EXPECT_FALSE(prefix_ok(pair, R"(["a", 1, )"));
  EXPECT_FALSE(prefix_ok(pair, "[1"));
  EXPECT_EQ(GrammarMatcher(pair).min_bytes_to_complete(), 6); // ["",0]
  // A rest of numbers after one string, at least one item.
  const Grammar rest = schema(
      R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"},"minItems":1})");
  EXPECT_TRUE(matches(rest, R"(["a"])"));
  EXPECT_TRUE(matches(rest, R"(["a",1,2,3])"));
  EXPECT_FALSE(matches(rest, "[]"));
  EXPECT_FALSE(prefix_ok(rest, R"(["a","b")"));
  // Without minItems, a tuple may stop early (JSON Schema does not require
  // every prefix item); items absent: any value after the prefix.
  const Grammar open = schema(R"({"prefixItems":[{"const":1},{"const":2}]})");
  EXPECT_TRUE(matches(open, "[]"));
  EXPECT_TRUE(matches(open, "[1]"));
  EXPECT_TRUE(matches(open, R"([1,2,"x",null])"));
  EXPECT_FALSE(prefix_ok(open, "[2"));
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const json v = json::parse(random_text(pair, seed, 20));
    ASSERT_EQ(v.size(), 2u) << v;
    EXPECT_TRUE(v[0].is_string() && v[1].is_number()) << v;
  }
}

TEST(SchemaFeatures, UniqueItemsOverLiterals) {
  const Grammar tags = schema(
      R"({"type":"array","uniqueItems":true,"items":{"enum":["red","green","blue"]},"minItems":2})");
  EXPECT_TRUE(matches(tags, R"(["red","blue"])"));
  EXPECT_TRUE(matches(tags, R"(["blue","green","red"])"));
  EXPECT_FALSE(prefix_ok(tags, R"(["red","red")"));
  EXPECT_FALSE(prefix_ok(tags, R"(["red","green","blue",)"));
  EXPECT_FALSE(matches(tags, R"(["red"])"));
  GrammarMatcher m(tags);
  EXPECT_EQ(m.min_bytes_to_complete(), 14); // ["red","blue"]
  ASSERT_TRUE(m.advance(R"(["blue")"));
  EXPECT_EQ(m.min_bytes_to_complete(), 7); // ,"red"]
  const Grammar flags = schema(R"({"type":"array","uniqueItems":true,"items":{"type":"boolean"}})");
  EXPECT_TRUE(matches(flags, "[true,false]"));
  EXPECT_FALSE(prefix_ok(flags, "[true,true"));
  EXPECT_NE(refusal(R"({"type":"array","uniqueItems":true,"items":{"type":"string"}})")
                .find("'uniqueItems' is supported only for items that are a const, an enum"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"array","uniqueItems":true,"items":{"enum":[1,2]},"minItems":3})")
                .find("only 2 distinct"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"type":"array","uniqueItems":true,"maxItems":1})"), "accepted");
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const json v = json::parse(random_text(tags, seed, 40));
    const std::set<std::string> distinct(v.begin(), v.end());
    EXPECT_EQ(distinct.size(), v.size()) << v;
    EXPECT_GE(v.size(), 2u) << v;
  }
}

TEST(SchemaFeatures, RecordsWithPropertyNames) {
  // zod's z.record(z.string().regex(/^[a-z]+$/), z.boolean()).
  const Grammar rec = schema(R"({"type":"object","propertyNames":{"type":"string",)"
                             R"("pattern":"^[a-z]+$"},"additionalProperties":{"type":"boolean"}})");
  EXPECT_TRUE(matches(rec, R"({"abc":true,"x":false})"));
  EXPECT_TRUE(matches(rec, "{}"));
  EXPECT_FALSE(prefix_ok(rec, R"({"aB)"));
  EXPECT_FALSE(prefix_ok(rec, R"({"":)"));
  // Declared names are not repeated as further keys; they must match too.
  const Grammar mixed = schema(R"({"type":"object","properties":{"id":{"type":"integer"}},)"
                               R"("required":["id"],"propertyNames":{"maxLength":3},)"
                               R"("additionalProperties":{"type":"string"}})");
  EXPECT_TRUE(matches(mixed, R"({"id":1,"ab":"x","abc":"y"})"));
  EXPECT_FALSE(prefix_ok(mixed, R"({"id":1,"id")"));
  EXPECT_FALSE(prefix_ok(mixed, R"({"id":1,"abcd)"));
  EXPECT_NE(refusal(R"({"type":"object","properties":{"long_name":{}},"required":["long_name"],)"
                    R"("propertyNames":{"maxLength":3}})")
                .find("the required property 'long_name' is not allowed"),
            std::string::npos);
  // Listed names (zod's record over an enum) become optional properties.
  const Grammar listed = schema(R"({"type":"object","propertyNames":{"enum":["a","b"]},)"
                                R"("additionalProperties":{"type":"number"}})");
  EXPECT_TRUE(matches(listed, R"({"a":1,"b":2})"));
  EXPECT_TRUE(matches(listed, R"({"b":2})"));
  EXPECT_FALSE(prefix_ok(listed, R"({"c")"));
  EXPECT_FALSE(prefix_ok(listed, R"({"a":1,"a")"));
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const json v = json::parse(random_text(rec, seed, 40));
    for (const auto &[key, value] : v.items()) {
      EXPECT_TRUE(!key.empty() &&
                  key.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == std::string::npos)
          << v;
      EXPECT_TRUE(value.is_boolean()) << v;
    }
  }
}

TEST(SchemaFeatures, PropertyCounts) {
  const Grammar g = schema(R"({"type":"object","properties":{"a":{"const":1},"b":{"const":2},)"
                           R"("c":{"const":3}},"minProperties":2,"maxProperties":2})");
  EXPECT_TRUE(matches(g, R"({"a":1,"c":3})"));
  EXPECT_FALSE(matches(g, R"({"a":1})"));
  EXPECT_FALSE(prefix_ok(g, R"({"a":1,"b":2,)"));
  EXPECT_FALSE(prefix_ok(g, R"({"c")")); // after c alone, no second property could come
  EXPECT_EQ(GrammarMatcher(g).min_bytes_to_complete(), 13); // {"a":1,"b":2}
  // A dict with at least one entry (Pydantic's Field(min_length=1)).
  const Grammar dict =
      schema(R"({"type":"object","additionalProperties":{"type":"integer"},"minProperties":1})");
  EXPECT_FALSE(matches(dict, "{}"));
  EXPECT_TRUE(matches(dict, R"({"k":1})"));
  EXPECT_EQ(GrammarMatcher(dict).min_bytes_to_complete(), 6); // {"":0}
  EXPECT_NE(refusal(R"({"type":"object","additionalProperties":true,"minProperties":2})")
                .find("'minProperties' 2 needs more properties than can be told apart"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],)"
                    R"("maxProperties":1})")
                .find("'maxProperties' is 1"),
            std::string::npos);
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const json v = json::parse(random_text(g, seed, 30));
    EXPECT_EQ(v.size(), 2u) << v;
  }
}

TEST(SchemaFeatures, DependentRequired) {
  // A card needs its expiry and code; the code comes before the card in
  // the order written.
  const Grammar g = schema(R"({"type":"object","properties":{"cvc":{"type":"string"},)"
                           R"("card":{"type":"string"},"expiry":{"type":"string"},)"
                           R"("name":{"type":"string"}},)"
                           R"("dependentRequired":{"card":["expiry","cvc"]}})");
  EXPECT_TRUE(matches(g, R"({"name":"x"})"));
  EXPECT_TRUE(matches(g, R"({"cvc":"1","card":"2","expiry":"3"})"));
  EXPECT_FALSE(prefix_ok(g, R"({"card")"));                      // cvc was not written
  EXPECT_FALSE(prefix_ok(g, R"({"cvc":"1","card":"2","name")")); // expiry is due
  GrammarMatcher m(g);
  ASSERT_TRUE(m.advance(R"({"cvc":"1","card":"2")"));
  EXPECT_EQ(m.min_bytes_to_complete(), 13); // ,"expiry":""}
  EXPECT_NE(refusal(R"({"properties":{"a":{}},"dependentRequired":{"a":["zz"]}})").find("'zz'"),
            std::string::npos);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const json v = json::parse(random_text(g, seed, 50));
    if (v.contains("card")) {
      EXPECT_TRUE(v.contains("expiry") && v.contains("cvc")) << v;
    }
  }
}

TEST(SchemaFeatures, AllOfMerged) {
  const Grammar g =
      schema(R"({"allOf":[)"
             R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},)"
             R"({"type":"object","properties":{"b":{"type":"integer","minimum":0}},)"
             R"("required":["b"]}]})");
  EXPECT_TRUE(matches(g, R"({"a":"x","b":3})"));
  EXPECT_FALSE(prefix_ok(g, R"({"b")"));
  EXPECT_FALSE(prefix_ok(g, R"({"a":"x","b":-)"));
  // One part's additionalProperties false forbids what the other declares.
  EXPECT_NE(refusal(R"({"allOf":[{"properties":{"a":{}},"additionalProperties":false},)"
                    R"({"properties":{"b":{}},"required":["b"]}]})")
                .find("the required property 'b' is not allowed"),
            std::string::npos);
  // The same property in two parts: both schemas hold.
  const Grammar both = schema(R"({"allOf":[{"properties":{"n":{"type":"integer","maximum":5}}},)"
                              R"({"properties":{"n":{"minimum":3}},"required":["n"]}]})");
  EXPECT_TRUE(matches(both, R"({"n":4})"));
  EXPECT_FALSE(matches(both, R"({"n":2})"));
  EXPECT_FALSE(matches(both, R"({"n":6})"));
  // zod's startsWith/endsWith: patterns in allOf beside the type.
  const Grammar ends = schema(
      R"({"type":"string","format":"ends_with","allOf":[{"pattern":"^ab.*"},{"pattern":".*z$"}]})");
  EXPECT_TRUE(matches(ends, R"("abz")"));
  EXPECT_TRUE(matches(ends, R"("ab-zz")"));
  EXPECT_FALSE(matches(ends, R"("abx")"));
  EXPECT_FALSE(prefix_ok(ends, R"("b)"));
  // A $ref beside other keywords is one more part.
  const Grammar ref =
      schema(R"({"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n","minimum":10})");
  EXPECT_TRUE(matches(ref, "10"));
  EXPECT_FALSE(matches(ref, "9"));
  EXPECT_FALSE(prefix_ok(ref, "1."));
  EXPECT_NE(refusal(R"({"allOf":[{"type":"string"},{"type":"integer"}]})").find("none in common"),
            std::string::npos);
}

int depth_of(const json &v) {
  int d = 0;
  for (const auto &c : v["subcategories"])
    d = std::max(d, depth_of(c));
  return d + 1;
}

TEST(SchemaFeatures, RecursiveReferences) {
  // zod's recursive Category: {$ref: "#"} inside the items.
  const Grammar tree =
      schema(R"({"type":"object","properties":{"name":{"type":"string"},)"
             R"("subcategories":{"type":"array","items":{"$ref":"#"}}},)"
             R"("required":["name","subcategories"],"additionalProperties":false})");
  const std::string nested =
      R"({"name":"a","subcategories":[{"name":"b","subcategories":[{"name":"c","subcategories":[]}]}]})";
  EXPECT_TRUE(matches(tree, nested));
  EXPECT_FALSE(prefix_ok(tree, R"({"name":"a","subcategories":[{"name":1)"));
  EXPECT_EQ(GrammarMatcher(tree).min_bytes_to_complete(), 30); // {"name":"","subcategories":[]}
  // Deep inside, the shortest completion closes every level.
  EXPECT_EQ(
      shortest_completion(tree, R"({"name":"a","subcategories":[{"name":"b","subcategories":[)"),
      R"({"name":"a","subcategories":[{"name":"b","subcategories":[]}]})");
  // Pydantic's linked list: $defs and an Optional (anyOf with null).
  const Grammar list =
      schema(R"({"$defs":{"Node":{"properties":{"value":{"type":"integer"},"next":{"anyOf":[)"
             R"({"$ref":"#/$defs/Node"},{"type":"null"}],"default":null}},"required":["value"],)"
             R"("title":"Node","type":"object"}},"$ref":"#/$defs/Node"})");
  EXPECT_TRUE(matches(list, R"({"value":1,"next":{"value":2,"next":null}})"));
  EXPECT_FALSE(prefix_ok(list, R"({"value":1,"next":{"next")"));
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const json v = json::parse(random_text(tree, seed, 120));
    EXPECT_GE(depth_of(v), 1) << v;
  }
  EXPECT_NE(refusal(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})").find("left recursion"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]})")
                .find("no finite JSON value"),
            std::string::npos);
}

TEST(SchemaFeatures, DiscriminatedUnions) {
  // zod's discriminatedUnion("kind", ...).
  const Grammar zod = schema(
      R"({"oneOf":[{"type":"object","properties":{"kind":{"type":"string","const":"a"},)"
      R"("x":{"type":"number"}},"required":["kind","x"],"additionalProperties":false},)"
      R"({"type":"object","properties":{"kind":{"type":"string","const":"b"},"y":{"type":"string"}},)"
      R"("required":["kind","y"],"additionalProperties":false}]})");
  EXPECT_TRUE(matches(zod, R"({"kind":"a","x":1})"));
  EXPECT_TRUE(matches(zod, R"({"kind":"b","y":"z"})"));
  EXPECT_FALSE(prefix_ok(zod, R"({"kind":"a","y")"));
  // Pydantic's: $refs, the tag an enum-like const, and `discriminator`.
  const Grammar pyd = schema(
      R"({"$defs":{"Cat":{"properties":{"pet_type":{"const":"cat","type":"string"},)"
      R"("meows":{"type":"integer"}},"required":["pet_type","meows"],"type":"object"},)"
      R"("Dog":{"properties":{"pet_type":{"enum":["dog","puppy"],"type":"string"},)"
      R"("barks":{"type":"number"}},"required":["pet_type","barks"],"type":"object"}},)"
      R"("discriminator":{"mapping":{"cat":"#/$defs/Cat","dog":"#/$defs/Dog"},)"
      R"("propertyName":"pet_type"},"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}]})");
  EXPECT_TRUE(matches(pyd, R"({"pet_type":"puppy","barks":2.5})"));
  EXPECT_FALSE(matches(pyd, R"({"pet_type":"cat","barks":2})"));
  EXPECT_NE(
      refusal(R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},)"
              R"({"type":"object","properties":{"k":{"enum":[1,2]}},"required":["k"]}]})")
          .find("no required property with a const or enum tells them apart"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}}},)"
                    R"({"type":"object","properties":{"k":{"const":2}}}]})")
                .find("'oneOf' whose alternatives 0 and 1 can both match"),
            std::string::npos); // not required: {} matches both
  EXPECT_EQ(refusal(R"({"oneOf":[{"enum":["a","b"]},{"const":"c"}]})"), "accepted");
}

TEST(SchemaFeatures, ToolArgumentsMayBeARecursiveModel) {
  // Pydantic puts a recursive model at the top as a $ref.
  const ToolSchema tools[] = {
      {"tree", R"({"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array",)"
               R"("items":{"$ref":"#/$defs/T"}}},"required":["kids"]}},"$ref":"#/$defs/T"})"}};
  const Grammar g = Grammar::tool_calls(tools, false);
  EXPECT_TRUE(matches(g, "<tool_call>\n{\"name\": \"tree\", \"arguments\": "
                         "{\"kids\":[{\"kids\":[]}]}}\n</tool_call>"));
  // Two tools with the same definition name and different definitions.
  const ToolSchema two[] = {
      {"f",
       R"({"$defs":{"A":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"]})"},
      {"g",
       R"({"$defs":{"A":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"]})"}};
  const Grammar both = Grammar::tool_calls(two, false);
  EXPECT_TRUE(
      matches(both, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":1}}\n</tool_call>"));
  EXPECT_TRUE(
      matches(both, "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\":\"s\"}}\n</tool_call>"));
  EXPECT_FALSE(
      matches(both, "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\":1}}\n</tool_call>"));
}

} // namespace
} // namespace bonsai
