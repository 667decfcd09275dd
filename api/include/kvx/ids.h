#pragma once

// Strong integer ids: a RegionId cannot be passed where a TransferId is expected.

#include <compare>
#include <cstdint>
#include <functional>

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

template <typename Tag>
struct StrongId {
  std::uint64_t value = 0;

  constexpr StrongId() = default;
  constexpr explicit StrongId(std::uint64_t v) : value(v) {}
  constexpr bool isValid() const { return value != 0; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

// Ids are unique among all the agents of a process and never reused: an id of one agent
// given to another is NOT_FOUND there.
// A memory region registered with an agent.
using RegionId = StrongId<struct RegionIdTag>;
// A transfer created by an agent; may be posted again once it has finished.
using TransferId = StrongId<struct TransferIdTag>;
// A prepared descriptor list (local or remote side) made once and used by index.
using ListId = StrongId<struct ListIdTag>;

}  // namespace kvx
#pragma GCC visibility pop

template <typename Tag>
struct std::hash<kvx::StrongId<Tag>> {
  std::size_t operator()(kvx::StrongId<Tag> id) const noexcept {
    return std::hash<std::uint64_t>{}(id.value);
  }
};
