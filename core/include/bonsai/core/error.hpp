#pragma once
// The one exception type core throws. Messages are complete sentences meant for
// the user: they name the file (when there is one) and what is wrong.
#include <stdexcept>
#include <string>

namespace bonsai {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace bonsai
