#pragma once

// sendOwnedMessage: sends one data-path message whose bytes the call owns until the
// transport is done with them, for fire-and-forget messages (staging requests and replies,
// notifications sent again on a new link after a reset). A failed send is logged with `what`; the
// caller learns of a lost peer otherwise (deadlines, link failures).
//
// Threads: any thread, never in transport completion or message-handler context.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/transport/endpoint.h"

namespace kvx::engine {

void sendOwnedMessage(Endpoint& endpoint, std::vector<std::uint8_t> header,
                      std::vector<std::uint8_t> payload, std::string what);

}  // namespace kvx::engine
