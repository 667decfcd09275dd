#include "engine/memory/address_range.h"

#include <cstdio>

namespace kvx::engine {

std::string describeRange(std::uint64_t address, std::uint64_t length) {
  char text[64];
  std::snprintf(text, sizeof(text), "[0x%llx+%llu)", static_cast<unsigned long long>(address),
                static_cast<unsigned long long>(length));
  return text;
}

}  // namespace kvx::engine
