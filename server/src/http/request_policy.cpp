#include "http/request_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "http/header_text.hpp"

namespace bonsai::server {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_ip_literal(const std::string &name) {
  unsigned char address[16];
  if (inet_pton(AF_INET, name.c_str(), address) == 1)
    return true;
  return name.size() > 2 && name.front() == '[' && name.back() == ']' &&
         inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(), address) == 1;
}

bool valid_port(std::string_view port) {
  return !port.empty() && port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool valid_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

} // namespace

std::optional<std::string> host_name_of(std::string_view host) {
  host = trim_blanks(host);
  if (host.empty())
    return std::nullopt;
  std::string_view name = host;
  if (host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    name = host.substr(0, close + 1);
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !valid_port(rest.substr(1))))
      return std::nullopt;
    return lower(name);
  }
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    if (!valid_port(host.substr(colon + 1)))
      return std::nullopt;
    name = host.substr(0, colon);
  }
  if (!name.empty() && name.back() == '.')
    name.remove_suffix(1);
  if (name.empty() || !std::all_of(name.begin(), name.end(), valid_name_char))
    return std::nullopt;
  return lower(name);
}

OriginPolicy::OriginPolicy(OriginPolicyOptions options, const std::string &bound_host)
    : options_(std::move(options)) {
  for (std::string &host : options_.allowed_hosts)
    host = lower(host);
  for (std::string &origin : options_.cors_origins) {
    origin = lower(origin);
    while (!origin.empty() && origin.back() == '/')
      origin.pop_back();
  }
  if (const auto name = host_name_of(bound_host); name && !is_ip_literal(*name))
    options_.allowed_hosts.push_back(*name);
}

bool OriginPolicy::host_allowed(std::string_view host) const {
  const std::optional<std::string> name = host_name_of(host);
  if (!name)
    return false;
  if (is_ip_literal(*name) || *name == "localhost" || name->ends_with(".localhost"))
    return true;
  return std::any_of(options_.allowed_hosts.begin(), options_.allowed_hosts.end(),
                     [&](const std::string &allowed) {
                       if (allowed == "*" || allowed == *name)
                         return true;
                       return allowed.size() > 1 && allowed.front() == '.' &&
                              (name->ends_with(allowed) || *name == allowed.substr(1));
                     });
}

bool OriginPolicy::cors_allows(std::string_view origin) const {
  const std::string wanted = lower(origin);
  return std::any_of(
      options_.cors_origins.begin(), options_.cors_origins.end(),
      [&](const std::string &allowed) { return allowed == "*" || allowed == wanted; });
}

OriginPolicy::OriginVerdict OriginPolicy::judge_origin(std::string_view origin,
                                                       std::string_view host) const {
  origin = trim_blanks(origin);
  if (origin.empty())
    return OriginVerdict::none;
  // "null" (sandboxed frames, file: pages) is never the server's own origin.
  if (origin != "null") {
    const size_t scheme_end = origin.find("://");
    if (scheme_end != std::string_view::npos) {
      const std::string_view scheme = origin.substr(0, scheme_end);
      const std::string_view authority = origin.substr(scheme_end + 3);
      // A browser omits the default port from both headers, so the
      // authority of a same-origin request is the Host header verbatim.
      if ((ascii_iequals(scheme, "http") || ascii_iequals(scheme, "https")) &&
          ascii_iequals(authority, trim_blanks(host)))
        return OriginVerdict::same_origin;
    }
  }
  return cors_allows(origin) ? OriginVerdict::allowed : OriginVerdict::refused;
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  authorization = trim_blanks(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() ||
      !ascii_iequals(authorization.substr(0, kScheme.size()), kScheme) ||
      (authorization[kScheme.size()] != ' ' && authorization[kScheme.size()] != '\t'))
    return std::nullopt;
  const std::string_view token = trim_blanks(authorization.substr(kScheme.size()));
  if (token.empty())
    return std::nullopt;
  return token;
}

int match_api_key(const std::vector<std::string> &keys, std::string_view token) {
  int found = -1;
  for (size_t k = 0; k < keys.size(); ++k) {
    const std::string &key = keys[k];
    // Walk the whole key whatever the token's length; a length mismatch
    // only sets a bit.
    unsigned char diff = token.size() == key.size() ? 0 : 1;
    for (size_t i = 0; i < key.size(); ++i)
      diff |= static_cast<unsigned char>(key[i] ^ (i < token.size() ? token[i] : 0));
    if (diff == 0 && found < 0)
      found = static_cast<int>(k);
  }
  return found;
}

bool is_json_media_type(std::string_view content_type) {
  const std::string_view type = trim_blanks(content_type.substr(0, content_type.find(';')));
  return ascii_iequals(type, "application/json");
}

} // namespace bonsai::server
