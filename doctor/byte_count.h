#pragma once

// Byte counts for people: 2147483648 -> "2 GiB", 8388608 -> "8 MiB", 1610612736 -> "1.5 GiB".

#include <cstdint>
#include <string>

namespace kvx::doctor {

std::string formatBytes(std::uint64_t bytes);

}  // namespace kvx::doctor
