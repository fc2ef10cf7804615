#include "request/field_notes.hpp"

#include <algorithm>

namespace bonsai::server {
namespace {

thread_local FieldNotes *bound_notes = nullptr;

constexpr size_t kMaxNameBytes = 96;     // of one path as the header gives it
constexpr size_t kMaxHeaderBytes = 2048; // of one header value

// A name a client chose, safe for a header value: printable ASCII, other
// bytes as '?', cut at kMaxNameBytes.
std::string header_safe(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxNameBytes));
  for (const char c : text) {
    if (out.size() == kMaxNameBytes) {
      out += "...";
      break;
    }
    out += c >= 0x20 && c < 0x7f ? c : '?';
  }
  return out;
}

} // namespace

void FieldNotes::ignore(std::string_view path) {
  const std::string safe = header_safe(path);
  if (std::find(ignored_.begin(), ignored_.end(), safe) != ignored_.end())
    return;
  if (ignored_.size() == kMaxEntries) {
    ++ignored_dropped_;
    return;
  }
  ignored_.push_back(safe);
}

void FieldNotes::warn(std::string_view text) {
  const std::string safe = header_safe(text.substr(0, 256));
  if (warnings_.size() < kMaxEntries &&
      std::find(warnings_.begin(), warnings_.end(), safe) == warnings_.end())
    warnings_.push_back(safe);
}

std::vector<std::pair<std::string, std::string>> FieldNotes::headers() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!ignored_.empty()) {
    std::string value;
    for (const std::string &path : ignored_) {
      if (value.size() + path.size() + 2 > kMaxHeaderBytes)
        break;
      if (!value.empty())
        value.append(", ");
      value.append(path);
    }
    if (ignored_dropped_ > 0)
      value.append(", (").append(std::to_string(ignored_dropped_)).append(" more)");
    out.emplace_back("Bonsai-Ignored-Fields", std::move(value));
  }
  for (const std::string &warning : warnings_)
    out.emplace_back("Bonsai-Warning", warning);
  return out;
}

FieldNotesScope::FieldNotesScope(FieldNotes &notes) : outer_(bound_notes) {
  bound_notes = &notes;
}

FieldNotesScope::~FieldNotesScope() {
  bound_notes = outer_;
}

FieldNotes *current_field_notes() {
  return bound_notes;
}

void note_ignored_field(std::string_view path) {
  if (bound_notes != nullptr)
    bound_notes->ignore(path);
}

void note_warning(std::string_view text) {
  if (bound_notes != nullptr)
    bound_notes->warn(text);
}

std::string_view media_kind(std::string_view type) {
  if (type == "image_url" || type == "input_image" || type == "image")
    return "an image";
  if (type == "input_audio" || type == "audio")
    return "audio";
  if (type == "file" || type == "input_file")
    return "a file";
  if (type == "document")
    return "a document";
  if (type == "video_url" || type == "video")
    return "a video";
  return {};
}

std::string left_out_note(std::string_view what, const std::string &where) {
  std::string warning = where;
  warning.append(": ").append(what).append(" was left out (the model reads text only)");
  note_warning(warning);
  std::string note = "[";
  note.append(what).append(" was here; it was left out because this model reads text only]");
  return note;
}

std::string field_path(const std::string &where, std::string_view name) {
  std::string path = where;
  if (!path.empty())
    path.append(".");
  return path.append(name);
}

void ignore_unknown_fields(const nlohmann::json &object,
                           std::initializer_list<std::string_view> known,
                           const std::string &where) {
  if (bound_notes == nullptr || !object.is_object())
    return;
  for (const auto &[key, value] : object.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      bound_notes->ignore(field_path(where, key));
}

} // namespace bonsai::server
