// kvx-test-labels: unit
#include "files/bounded_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "tests/support/temp_file.h"

using namespace kvx;
using kvx::files::readBoundedFile;
using kvx::test::TempFile;

TEST_CASE("a regular file within its bound is read whole", "[files]") {
  TempFile file("hello\nworld\n");
  auto text = readBoundedFile(file.path(), 64, "test file");
  REQUIRE(text.isOk());
  CHECK(*text == "hello\nworld\n");
  // Exactly at the bound is within it.
  CHECK(readBoundedFile(file.path(), 12, "test file").isOk());
}

TEST_CASE("a missing file is NOT_FOUND, naming it", "[files]") {
  auto text = readBoundedFile("/nonexistent/kvx-file", 64, "test file");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kNotFound);
  CHECK_THAT(text.status().message(), Catch::Contains("test file '/nonexistent/kvx-file'"));
}

TEST_CASE("a directory is refused", "[files]") {
  auto text = readBoundedFile("/tmp", 64, "test file");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(text.status().message(), Catch::Contains("'/tmp' is a directory"));
}

TEST_CASE("a FIFO is refused at once, without waiting for a writer", "[files]") {
  char dir[] = "/tmp/kvx-bounded-fifo-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // On a thread, so that a read that blocks fails the test at a deadline instead of hanging
  // it (the thread is then left blocked until the process exits).
  struct Shared {
    std::atomic<bool> done{false};
    Status status;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, fifo] {
    shared->status = readBoundedFile(fifo, 64, "test file").status();
    shared->done.store(true);
  }).detach();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!shared->done.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  REQUIRE(shared->done.load());
  CHECK(shared->status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(shared->status.message(), Catch::Contains("is a FIFO, not a regular file"));
}

TEST_CASE("a file larger than its bound is refused before it is read", "[files]") {
  TempFile file("");
  // 1 GiB that takes no disk: its size alone refuses it.
  REQUIRE(::truncate(file.path().c_str(), 1ll << 30) == 0);
  auto text = readBoundedFile(file.path(), 1u << 20, "test file");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(
      text.status().message(),
      Catch::Contains("holds 1073741824 bytes, more than the 1048576 bytes a test file may have"));
}

TEST_CASE("the bound holds while reading files that report no size (procfs)", "[files]") {
  // /proc/self/maps reports st_size 0 and holds far more than 16 bytes.
  auto text = readBoundedFile("/proc/self/maps", 16, "test file");
  REQUIRE_FALSE(text.isOk());
  CHECK(text.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(text.status().message(),
             Catch::Contains("holds more than the 16 bytes a test file may have"));
  CHECK(readBoundedFile("/proc/self/maps", 1u << 20, "test file").isOk());
}
