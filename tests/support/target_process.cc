#include "tests/support/target_process.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace kvx::test {

std::string pairTransferBinary() {
  const char* path = std::getenv("KVX_PAIR_TRANSFER");
  if (path == nullptr || *path == '\0') {
    FAIL("KVX_PAIR_TRANSFER is not set: run this test through ctest");
  }
  return path;
}

TargetProcess startTarget(const std::string& transport, std::uint64_t bytes, bool allocate) {
  std::vector<std::string> args{
      "--role",    "target", "--transport", transport, "--bytes", std::to_string(bytes),
      "--segment", "1",      "--timeout",   "300"};
  if (allocate) args.push_back("--allocate");
  auto child = kvx::process::ChildProcess::spawn(pairTransferBinary(), args);
  REQUIRE(child.isOk());
  auto line = child->readLine(std::chrono::seconds(30));
  INFO((line.isOk() ? *line : line.status().toString()));
  REQUIRE(line.isOk());
  REQUIRE(line->rfind("LISTEN ", 0) == 0);
  return TargetProcess{std::move(child).value(), line->substr(7)};
}

}  // namespace kvx::test
