#include "engine/transport/owned_message.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {
namespace {

// Keeps the message's bytes until its completion, then deletes itself.
struct OwnedMessage final : Completion {
  std::vector<std::uint8_t> header;
  std::vector<std::uint8_t> payload;
  std::string what;
  void onComplete(Status status) override {
    if (!status.isOk()) spdlog::warn("{} was not sent: {}", what, status.toString());
    delete this;
  }
};

}  // namespace

void sendOwnedMessage(Endpoint& endpoint, std::vector<std::uint8_t> header,
                      std::vector<std::uint8_t> payload, std::string what) {
  auto* message = new OwnedMessage();
  message->header = std::move(header);
  message->payload = std::move(payload);
  message->what = std::move(what);
  endpoint.sendMessage(message->header, message->payload, message);
}

}  // namespace kvx::engine
