#include "http/error_response.hpp"

#include "base/api_errors.hpp"

namespace bonsai::server {

HttpResponse error_response(const ApiError &error, std::string_view path) {
  return HttpResponse(error.status, error_body(error, error_shape_of(path)));
}

HttpResponse error_response(int status, std::string type, const std::string &message,
                            std::string_view path) {
  return error_response(ApiError(status, std::move(type), message), path);
}

} // namespace bonsai::server
