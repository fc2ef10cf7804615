#pragma once
// The compatibility policy every API follows (docs/server.md,
// "Compatibility"): agent programs add request fields with every release, so
// a field bonsai does not know, at any depth, is ignored rather than refused.
// The readers record it here; the answer names the ignored fields in its
// Bonsai-Ignored-Fields header and the debug log names them once. Parts of a
// request that are left out on purpose (a hosted tool, an image) are told in
// a Bonsai-Warning header.
//
// The readers are many small functions, most of which see only the object
// they read; rather than thread a notes pointer through each of them, the
// worker that reads a body binds its FieldNotes to the thread for that time
// (FieldNotesScope). Reading without a scope (the fuzzers, unit tests of one
// reader) ignores the same fields and records nothing.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bonsai::server {

class FieldNotes {
public:
  // Most ignored paths and warnings kept: a body of thousands of unknown
  // fields must not make a header of thousands of names.
  static constexpr size_t kMaxEntries = 32;

  // `path` is the field as the request spells it ("output_config",
  // "tools[3].defer_loading"); repeated paths are kept once.
  void ignore(std::string_view path);
  void warn(std::string_view text);

  const std::vector<std::string> &ignored() const { return ignored_; }
  const std::vector<std::string> &warnings() const { return warnings_; }
  // How many ignored paths did not fit in kMaxEntries.
  size_t ignored_dropped() const { return ignored_dropped_; }
  bool empty() const { return ignored_.empty() && warnings_.empty(); }

  // The answer's headers: ("Bonsai-Ignored-Fields", "a, b[0].c") and one
  // ("Bonsai-Warning", text) per warning; values are printable ASCII.
  std::vector<std::pair<std::string, std::string>> headers() const;

private:
  std::vector<std::string> ignored_;
  std::vector<std::string> warnings_;
  size_t ignored_dropped_ = 0;
};

// Binds `notes` to this thread until destroyed (scopes nest: the inner one
// wins while it lives).
class FieldNotesScope {
public:
  explicit FieldNotesScope(FieldNotes &notes);
  ~FieldNotesScope();
  FieldNotesScope(const FieldNotesScope &) = delete;
  FieldNotesScope &operator=(const FieldNotesScope &) = delete;

private:
  FieldNotes *outer_;
};

// The notes bound to this thread, or nullptr.
FieldNotes *current_field_notes();
// Records an ignored field / a warning in the bound notes, if any.
void note_ignored_field(std::string_view path);
void note_warning(std::string_view text);

// Records each field of `object` that is not in `known` as ignored; `where`
// names the object ("" for the body itself, "tools[2]", ...).
void ignore_unknown_fields(const nlohmann::json &object,
                           std::initializer_list<std::string_view> known, const std::string &where);

// What a content part or block of type `type` carries when it is not text
// ("an image" for image_url, input_image or image; audio; "a file" for
// file, input_file; "a document"; "a video"), or "" for another type.
std::string_view media_kind(std::string_view type);
// The text that stands in the prompt for such a part at `where` (this model
// reads text), with a warning naming it: a session that once read an image
// keeps working, and the model knows something was there.
std::string left_out_note(std::string_view what, const std::string &where);

// `where.name`, or `name` at the top level.
std::string field_path(const std::string &where, std::string_view name);

} // namespace bonsai::server
