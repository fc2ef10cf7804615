#pragma once
// JSON Schema -> grammar nodes. One compiler per grammar; `$ref` targets are
// compiled once and shared, so a schema cannot blow up by repetition.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bonsai/core/grammar.hpp"
#include "grammar_nodes.hpp"

namespace bonsai::constrain {

// Whether `schema` constrains nothing: true, or an object of annotations
// (title, description, ...) and definitions only.
bool accepts_anything(const nlohmann::ordered_json &schema);

class SchemaCompiler {
public:
  SchemaCompiler(GrammarData &grammar, const GrammarLimits &limits);

  // The node for a value valid under `schema`; `root` is the document its
  // `$ref`s point into. Throws bonsai::Error naming the keyword and path.
  int32_t value(const nlohmann::ordered_json &schema, const nlohmann::ordered_json &root,
                const std::string &path, int32_t depth = 0);
  int32_t any_value();
  int32_t any_object();

  int32_t add(Node node);
  int32_t literal(std::string text);
  int32_t seq(std::vector<int32_t> kids);
  int32_t alt(std::vector<int32_t> kids);
  int32_t ws() const { return ws_; }

private:
  int32_t typed(const std::string &type, const nlohmann::ordered_json &schema,
                const nlohmann::ordered_json &root, const std::string &path, int32_t depth);
  int32_t object(const nlohmann::ordered_json &schema, const nlohmann::ordered_json &root,
                 const std::string &path, int32_t depth);
  int32_t array(const nlohmann::ordered_json &schema, const nlohmann::ordered_json &root,
                const std::string &path, int32_t depth);
  int32_t string(const nlohmann::ordered_json &schema, const std::string &path);
  int32_t reference(const std::string &ref, const nlohmann::ordered_json &root,
                    const std::string &path, int32_t depth);
  struct Property {
    std::string name;
    int32_t value = -1;
    bool required = false;
  };
  // An object node: `properties` in order, then (additional >= 0) further
  // keys, not among the names, with values read by `additional`.
  int32_t object_node(const std::vector<Property> &properties, int32_t additional,
                      const std::string &path);

  GrammarData &g_;
  GrammarLimits limits_;
  int32_t ws_ = -1;
  int32_t any_ = -1, any_object_ = -1;
  std::map<std::string, int32_t> refs_done_;
  std::vector<std::string> refs_open_;
};

} // namespace bonsai::constrain
