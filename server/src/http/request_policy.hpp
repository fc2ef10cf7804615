#pragma once
// Who may talk to the server, decided from the request head alone (before a
// body byte is read): the Host a request names (DNS rebinding), the Origin a
// browser sends (cross-site requests, CORS), and the Bearer key.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::server {

struct OriginPolicyOptions {
  // Host names accepted besides IP literals, "localhost" and *.localhost:
  // exact names, ".example.com" for a domain and its subdomains, or "*" for
  // any name (which turns the DNS-rebinding check off).
  std::vector<std::string> allowed_hosts;
  // Origins (scheme://host[:port]) whose pages may call the API from a
  // browser; "*" for any. Same-origin requests (the server's own pages) need
  // no entry.
  std::vector<std::string> cors_origins;
};

class OriginPolicy {
public:
  // `bound_host`: the --host the server listens on; when it is a name it is
  // accepted too.
  OriginPolicy(OriginPolicyOptions options, const std::string &bound_host);

  // Whether a request whose Host header is `host` ("name[:port]") may be
  // served. An IP literal always may: DNS rebinding needs a name.
  bool host_allowed(std::string_view host) const;

  enum class OriginVerdict {
    none,        // no Origin header: not a browser's cross-site request
    same_origin, // the page came from this server
    allowed,     // another origin that --cors-origin lets in
    refused,
  };
  OriginVerdict judge_origin(std::string_view origin, std::string_view host) const;

private:
  bool cors_allows(std::string_view origin) const;

  OriginPolicyOptions options_;
};

// "name[:port]" or "[v6]:port" -> the lower-case name or address, without
// the port and without a trailing dot; nullopt when malformed.
std::optional<std::string> host_name_of(std::string_view host);

// The key of an "Authorization: Bearer KEY" header (scheme matched in any
// case, as RFC 9110 says), or nullopt.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// Index of the key in `keys` that `token` equals, or -1. Every key is
// compared in full, in time that depends on the keys' lengths only, so the
// answer's timing reveals neither a key's prefix nor which key matched.
int match_api_key(const std::vector<std::string> &keys, std::string_view token);

// True when a Content-Type header names application/json (parameters such as
// charset=utf-8 allowed).
bool is_json_media_type(std::string_view content_type);

} // namespace bonsai::server
