#pragma once
// The chat page's files (server/web/), built into the library.
#include <string_view>
#include <vector>

namespace bonsai::server {

struct WebAsset {
  std::string_view path;  // "/index.html", "/chat.js", "/chat.css"
  std::string_view bytes; // the file as it is in server/web/
};

const std::vector<WebAsset> &web_assets();

} // namespace bonsai::server
