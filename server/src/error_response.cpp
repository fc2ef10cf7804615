#include "error_response.hpp"

#include "openai_response.hpp"

namespace bonsai::server {

HttpResponse error_response(const ApiError &error) {
  return HttpResponse(error.status, error_body(error));
}

HttpResponse error_response(int status, std::string type, const std::string &message) {
  return error_response(ApiError(status, std::move(type), message));
}

} // namespace bonsai::server
