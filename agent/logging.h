#pragma once

// Process-wide logging set-up: spdlog with the level from KVX_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default info).

namespace kvx::agent {

// Idempotent and thread-safe; called by Agent::create.
void configureLogging();

}  // namespace kvx::agent
