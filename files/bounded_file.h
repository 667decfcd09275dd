#pragma once

// Reading a whole file that a user or the system names (a --config, a --model shape, a trace,
// a token file, a /proc or /sys file the doctor reads), without trusting what the path leads
// to: only a regular file is read (a directory, FIFO, socket or device is refused before any
// byte is read, so a FIFO cannot block the caller), and never more than a bound the caller
// gives for that kind of file (a larger one is refused, naming its size and the bound, before
// it fills memory). Files of /proc report a size of 0: the bound holds while reading too.
//
// Pure functions; safe from any thread.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "kvx/result.h"

namespace kvx::files {

// The file's bytes. `what` names it in errors ("config file"): NOT_FOUND when it is missing
// or cannot be opened, INVALID_ARGUMENT when it is not a regular file or holds more than
// `maxBytes`, each message naming the path.
Result<std::string> readBoundedFile(const std::filesystem::path& path, std::uint64_t maxBytes,
                                    std::string_view what);

// "a directory", "a FIFO", "a socket", "a character device", "a block device", "a symbolic
// link", "a regular file" or "an unknown kind of file", for a st_mode.
std::string_view fileKindName(unsigned mode);

}  // namespace kvx::files
