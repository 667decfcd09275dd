// Engine: cancelling transfers, one or a set at once.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine.h"

namespace kvx::engine {
namespace {

constexpr auto kDrainAfterReset = std::chrono::seconds(5);

std::string idList(const std::vector<std::shared_ptr<Transfer>>& transfers,
                   const RemotePeer* peer) {
  std::string ids;
  for (const auto& transfer : transfers) {
    if (peer != nullptr && transfer->peer().get() != peer) continue;
    ids += (ids.empty() ? "" : ", ") + std::to_string(transfer->id().value);
  }
  return ids;
}

}  // namespace

void Engine::waitFinished(const Transfer& transfer, Deadline deadline) {
  if (!callerDriven()) {
    transfers_.waitFinished(transfer, deadline);
    return;
  }
  while (transfer.pending() && Clock::now() < deadline) progress();
}

std::vector<std::shared_ptr<Transfer>> Engine::waitAllFinished(
    std::vector<std::shared_ptr<Transfer>> transfers, Deadline deadline) {
  // In order, against the one deadline: the set drains in parallel, so this costs the
  // slowest transfer's time, not the sum.
  for (const auto& transfer : transfers) waitFinished(*transfer, deadline);
  std::erase_if(transfers, [](const auto& transfer) { return !transfer->pending(); });
  return transfers;
}

Status Engine::cancel(TransferId id) { return cancel(std::span<const TransferId>(&id, 1)); }

Status Engine::cancel(std::span<const TransferId> ids) {
  Status first;
  std::vector<std::shared_ptr<Transfer>> cancelling;
  for (const TransferId id : ids) {
    auto found = transfers_.find(id);
    if (!found.isOk()) {
      if (first.isOk()) first = found.status();
      continue;
    }
    std::shared_ptr<Transfer> transfer = std::move(found).value();
    if (!transfer->pending()) continue;
    transfer->requestCancel(cancelled("transfer " + std::to_string(id.value) + " was cancelled"));
    cancelling.push_back(std::move(transfer));
  }
  if (cancelling.empty()) return first;
  kick();
  // Every transfer stopped posting above; their operations in flight complete meanwhile.
  std::vector<std::shared_ptr<Transfer>> stuck =
      waitAllFinished(std::move(cancelling), Clock::now() + options_.cancelGrace);
  if (stuck.empty()) return first;
  // Operations already handed to the transport cannot be recalled one by one: close the
  // endpoint (which aborts them) and open a fresh one for the peer's other transfers. One
  // reset aborts every stuck transfer of that peer, so each peer is reset once.
  std::vector<const RemotePeer*> reset;
  for (const auto& transfer : stuck) {
    const RemotePeer* peer = transfer->peer().get();
    if (std::find(reset.begin(), reset.end(), peer) != reset.end()) continue;
    reset.push_back(peer);
    const std::string which = idList(stuck, peer);
    spdlog::warn(
        "{}: cancelled transfer(s) {} did not drain within {} ms; resetting the link to "
        "'{}'",
        name(), which, options_.cancelGrace.count(), transfer->peerName());
    // The close is bounded by one more grace: a close that would wait longer for the
    // transport fails what it has not reported with CANCELLED instead. The next link opens
    // off this path (LinkReopener); the peer's other transfers that the close interrupted
    // post again on it (Transfer).
    peers_->resetLink(transfer->peer(), "cancel of transfer(s) " + which,
                      Clock::now() + options_.cancelGrace);
  }
  kick();
  stuck = waitAllFinished(std::move(stuck), Clock::now() + kDrainAfterReset);
  if (!stuck.empty()) {
    // Worse than an unknown id: bytes of these may still land.
    first = internalError("transfer(s) " + idList(stuck, nullptr) +
                          " still have operations in flight after their endpoint was closed");
  }
  return first;
}

}  // namespace kvx::engine
