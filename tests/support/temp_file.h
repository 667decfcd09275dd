#pragma once

// TempFile: a file under /tmp holding the given text (created with mkstemp, so mode 0600),
// removed when the object goes. For tests that hand a path to the code under test.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace kvx::test {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/kvx-test-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kvx::test
