#pragma once

// A Transport for tests that script their own endpoints: it registers no memory, has no
// events and makes no progress of its own, and leaves connect() to the test.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/transport/transport.h"

namespace kvx::test {

class MemorylessTransport : public engine::Transport {
 public:
  std::vector<std::uint8_t> localAddress() const override { return {1}; }
  bool supportsMemoryKind(MemoryKind kind) const override { return kind == MemoryKind::kHost; }
  Result<std::unique_ptr<engine::TransportMemory>> registerMemory(void*, std::uint64_t, MemoryKind,
                                                                  int) override {
    return unimplemented("no memory here");
  }
  Result<std::unique_ptr<engine::TransportMemory>> allocateMemory(std::uint64_t, MemoryKind,
                                                                  int) override {
    return unimplemented("no memory here");
  }
  void setMessageHandler(engine::MessageHandler) override {}
  bool progress() override { return false; }
  int eventFd() const override { return -1; }
  bool arm() override { return false; }
  void wake() override {}
};

}  // namespace kvx::test
