// Small helpers shared by the suites: temporary folders, file bytes, and error-message assertions.
#pragma once

#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <string>

#include "error.h"

namespace speculum::test {

inline std::string bundles_dir() { return SPECULUM_TEST_BUNDLES; }
inline std::string shipped_bundle_dir() { return SPECULUM_SHIPPED_BUNDLE; }  // the studio's default model
inline std::string shipped_vq_run() { return SPECULUM_SHIPPED_VQ_RUN; }  // the default model's tokenizer run

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `body`, expecting a speculum::Error whose message contains `fragment`.
template <typename Body>
bool throws_error_containing(Body&& body, const std::string& fragment, std::string* message = nullptr) {
  try {
    body();
  } catch (const Error& e) {
    if (message) *message = e.what();
    if (std::string(e.what()).find(fragment) != std::string::npos) return true;
    qWarning("error message '%s' lacks '%s'", e.what(), fragment.c_str());
    return false;
  }
  qWarning("no speculum::Error thrown (expected one containing '%s')", fragment.c_str());
  return false;
}

}  // namespace speculum::test

#define EXPECT_ERROR(body, fragment) QVERIFY(speculum::test::throws_error_containing([&] { body; }, fragment))
