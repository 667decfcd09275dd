#include "engine/transport/ucx/ucx_frame.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace kvx::engine::ucx {
namespace {

constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kHeaderSize = 4 + 2 + 4;
constexpr std::size_t kTrailerSize = 8;

std::uint64_t fnv1a(std::span<const std::uint8_t> bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (std::uint8_t b : bytes) {
    hash ^= b;
    hash *= 1099511628211ull;
  }
  return hash;
}

template <typename T>
T load(std::span<const std::uint8_t> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void store(std::vector<std::uint8_t>& out, std::size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

}  // namespace

std::vector<std::uint8_t> frame(std::uint32_t magic, std::span<const std::uint8_t> body) {
  const std::size_t end = kHeaderSize + body.size();
  std::vector<std::uint8_t> out(end + kTrailerSize);
  store(out, 0, magic);
  store(out, 4, kVersion);
  store(out, 6, static_cast<std::uint32_t>(body.size()));
  if (!body.empty()) std::memcpy(out.data() + kHeaderSize, body.data(), body.size());
  store(out, end, fnv1a(std::span<const std::uint8_t>(out).first(end)));
  return out;
}

Result<std::span<const std::uint8_t>> unframe(std::uint32_t magic,
                                              std::span<const std::uint8_t> framed,
                                              std::string_view what) {
  const std::string name = std::string(what) + " of " + std::to_string(framed.size()) + " bytes";
  if (framed.size() < kHeaderSize + kTrailerSize) {
    return invalidArgument(name + " is shorter than the " +
                           std::to_string(kHeaderSize + kTrailerSize) +
                           "-byte minimum: not from a kvx UCX transport");
  }
  if (load<std::uint32_t>(framed, 0) != magic) {
    return invalidArgument(name + " has the wrong magic: not from a kvx UCX transport, or not a " +
                           std::string(what));
  }
  if (load<std::uint16_t>(framed, 4) != kVersion) {
    return invalidArgument(name + " has format version " +
                           std::to_string(load<std::uint16_t>(framed, 4)) + "; this build reads " +
                           std::to_string(kVersion));
  }
  const std::size_t bodySize = load<std::uint32_t>(framed, 6);
  if (framed.size() - kHeaderSize - kTrailerSize != bodySize) {
    return invalidArgument(name + " should be " +
                           std::to_string(kHeaderSize + bodySize + kTrailerSize) +
                           " bytes for its " + std::to_string(bodySize) + "-byte body");
  }
  const std::size_t end = kHeaderSize + bodySize;
  if (load<std::uint64_t>(framed, end) != fnv1a(framed.first(end))) {
    return invalidArgument(name + " fails its checksum (corrupted or truncated)");
  }
  return framed.subspan(kHeaderSize, bodySize);
}

std::vector<std::uint8_t> paddedForUcx(std::span<const std::uint8_t> body) {
  std::vector<std::uint8_t> padded(body.size() + kUcxReadPad, 0);
  std::copy(body.begin(), body.end(), padded.begin());
  return padded;
}

}  // namespace kvx::engine::ucx
