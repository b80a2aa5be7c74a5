// The one exception type the engine throws for bad input or failed operations. Messages name the
// file, tensor, field or value at fault and, where it helps, what would have been allowed.
#pragma once

#include <stdexcept>
#include <string>

namespace speculum {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace speculum
