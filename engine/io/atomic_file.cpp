#include "io/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "error.h"

namespace speculum {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::remove(partial.c_str());
      throw Error("cannot write '" + partial + "': " + std::strerror(errno));
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw Error("cannot move '" + partial + "' to '" + path + "': " + std::strerror(errno));
  }
}

}  // namespace speculum
