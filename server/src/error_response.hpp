#pragma once
// Errors as HTTP answers with OpenAI's error body.
#include <string>

#include "api_error.hpp"
#include "http_message.hpp"

namespace bonsai::server {

HttpResponse error_response(const ApiError &error);
HttpResponse error_response(int status, std::string type, const std::string &message);

} // namespace bonsai::server
