// The one exception type the engine throws for bad input or failed operations. Messages name the
// file, tensor, field or value at fault and, where it helps, what would have been allowed.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace speculum {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An Error whose cause is the caller's request (prompt, class, method, option, sampling value, token grid), not the
// bundle, a file or the machine: front ends answer it as bad input (the Python module raises ValueError).
class RequestError : public Error {
 public:
  using Error::Error;
};

// What a person reads of any exception, in one line: an Error's own message; a std::filesystem error as "'PATH':
// reason" rather than the library's "filesystem error: status: Reason [PATH]"; anything else's first line (LibTorch
// appends a stack of C++ frames).
std::string user_message(const std::exception& e);

}  // namespace speculum
