#pragma once

// The verification pattern both sides agree on: a function of (seed, byte offset), so any
// misplaced or missing byte is caught. Commands between initiator and target travel as
// notification text: "fill OFFSET LENGTH SEED", "check OFFSET LENGTH SEED", "exit".

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace pair_transfer {

void fillPattern(std::span<std::uint8_t> bytes, std::uint64_t firstOffset, std::uint64_t seed);
// Empty when the bytes hold the pattern; else where and what differs.
std::string checkPattern(std::span<const std::uint8_t> bytes, std::uint64_t firstOffset,
                         std::uint64_t seed);

struct Command {
  std::string verb;  // fill | check | exit
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t seed = 0;
};
std::optional<Command> parseCommand(const std::string& text);
std::string formatCommand(const Command& command);

// A target's reply is "RESULT | COMMAND"; RESULT is "ok" or says what went wrong.
struct Reply {
  std::string result;
  std::string command;
};
Reply parseReply(const std::string& text);

}  // namespace pair_transfer
