#include "bench/bare/memcpy_reference.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "bench/bare/request_loop.h"

namespace kvx::bench {
namespace {

constexpr std::uint64_t kMinBuffer = 256ull << 20;

struct Mapping {
  explicit Mapping(std::uint64_t length) : bytes(length) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
  }
  ~Mapping() {
    if (data != nullptr) ::munmap(data, bytes);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::uint8_t* data;
  std::uint64_t bytes;
};

}  // namespace

std::uint64_t lastLevelCacheBytes() {
  std::uint64_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) +
                       "/size");
    std::string text;
    if (!(file >> text) || text.empty()) continue;
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
    if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) value <<= 20;
    largest = std::max(largest, value);
  }
  return largest;
}

Result<MemcpyFigures> measureMemcpy(std::uint64_t segmentBytes, std::uint64_t minBufferBytes,
                                    double seconds) {
  if (segmentBytes == 0 || !(seconds > 0)) {
    return invalidArgument("memcpy reference: segment " + std::to_string(segmentBytes) +
                           " bytes for " + std::to_string(seconds) + " s: both must be positive");
  }
  std::uint64_t bytes = std::max({kMinBuffer, minBufferBytes, 8 * lastLevelCacheBytes()});
  const std::uint64_t pieces = std::max<std::uint64_t>(1, bytes / segmentBytes);
  bytes = pieces * segmentBytes;
  Mapping source(bytes), destination(bytes);
  if (source.data == nullptr || destination.data == nullptr) {
    return resourceExhausted("memcpy reference: cannot map two buffers of " +
                             std::to_string(bytes) + " bytes");
  }
  std::memset(source.data, 0x5a, bytes);
  std::memset(destination.data, 0xa5, bytes);

  MemcpyFigures figures;
  figures.segmentBytes = segmentBytes;
  figures.bufferBytes = bytes;
  const std::int64_t start = monotonicNs();
  const auto budget = static_cast<std::int64_t>(seconds * 1e9);
  std::int64_t now = start;
  std::uint64_t copies = 0;
  for (std::uint64_t piece = 0; copies < pieces || now - start < budget; ++copies) {
    std::memcpy(destination.data + piece * segmentBytes, source.data + piece * segmentBytes,
                segmentBytes);
    piece = piece + 1 == pieces ? 0 : piece + 1;
    // One clock read per 64 KiB or more copied keeps the timing overhead below 1%.
    if (segmentBytes >= 65536 || copies % (65536 / segmentBytes + 1) == 0) now = monotonicNs();
  }
  now = monotonicNs();
  figures.bytes = copies * segmentBytes;
  figures.seconds = static_cast<double>(now - start) / 1e9;
  figures.gbps = static_cast<double>(figures.bytes) / static_cast<double>(now - start);
  return figures;
}

}  // namespace kvx::bench
