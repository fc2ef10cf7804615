#pragma once
// Errors as HTTP answers, with the error body of the API the request's path
// belongs to (api_errors.hpp; OpenAI's when the path is not known yet).
#include <string>
#include <string_view>

#include "base/api_error.hpp"
#include "http/http_message.hpp"

namespace bonsai::server {

HttpResponse error_response(const ApiError &error, std::string_view path = {});
HttpResponse error_response(int status, std::string type, const std::string &message,
                            std::string_view path = {});

} // namespace bonsai::server
