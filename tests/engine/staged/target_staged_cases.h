#pragma once

// Target-side staging end to end, over the transport of stagedConfig(): agent "b" exposes
// GPU memory (fake: host memory declared CUDA) that no transport can reach, and publishes a
// staging window of kWindowSlots slots of kWindowSlotBytes; agent "a" moves bytes to and
// from it from host memory (staged on b's side) and from its own GPU memory (staged on both
// sides), byte for byte, in transfers many times larger than the window. A notification
// arrives only once the bytes are in b's device memory; a copy failing on b fails the
// transfer with b's message; requests of a hostile peer (out of bounds, slots it does not
// hold, host regions) are refused and b keeps serving; cancel leaves no late byte. Include
// once per test file. Tags: [staged][target].

#include <thread>

#include "engine/notify/notification_header.h"
#include "engine/staged/staging_message.h"
#include "tests/engine/staged/staged_pair.h"

namespace kvx::test::staged {

// b's device bytes after a WRITE of `segments` from a (host or device); segments to other
// regions of b are left out. Call it before posting the WRITE: it reads b's device memory,
// which the WRITE then overwrites (StagedPair::doneWithDeviceB).
inline std::vector<std::uint8_t> afterWriteToDeviceB(StagedPair& p,
                                                     const std::vector<TransferSegment>& segments) {
  std::vector<std::uint8_t> expected(p.deviceB.begin(), p.deviceB.end());
  for (const TransferSegment& s : segments) {
    if (s.remote.region != p.regionDeviceB) continue;
    const std::uint8_t* from =
        s.local.region == p.regionDeviceA ? p.deviceA.data() : p.hostA.data();
    std::memcpy(expected.data() + s.remote.offset, from + s.local.offset, s.local.length);
  }
  p.doneWithDeviceB();
  return expected;
}

// A READ gives its slots back with a message after it completed: wait for b to see them.
inline void waitSlotsFree(StagedPair& p) {
  const auto deadline = Clock::now() + 5s;
  while (p.b->windowServer()->slotsLent() != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(p.b->windowServer()->slotsLent() == 0);
}

TEST_CASE("target staging: WRITE from host memory lands byte for byte in the peer's GPU memory",
          "[staged][target]") {
  StagedPair p;
  REQUIRE(p.b->windowServer() != nullptr);
  // Far larger than the window (3 x 24 KiB), unaligned, one piece smaller than a slot.
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionHostA, 0, p.regionDeviceB, 1000, 300000),
      StagedPair::segment(p.regionHostA, 500000, p.regionDeviceB, 400000, 7),
      StagedPair::segment(p.regionHostA, 600000, p.regionDeviceB, 500000, 100003)};
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  auto id = p.moveToEnd(p.request(TransferOp::kWrite, segments));
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");

  auto stats = p.a->stats(*id);
  REQUIRE(stats.isOk());
  CHECK(stats->remoteStagedBytes == 300000 + 7 + 100003);
  CHECK(stats->remoteStagedOperations == stats->operations);
  CHECK(stats->stagedBytes == 0);
  CHECK(p.copiesB().bytesCopied() >= stats->remoteStagedBytes);
  waitSlotsFree(p);
}

TEST_CASE("target staging: READ from the peer's GPU memory lands byte for byte in host memory",
          "[staged][target]") {
  StagedPair p;
  std::vector<std::uint8_t> expected = p.hostA;
  std::memcpy(expected.data() + 4096, p.deviceB.data() + 600000, 200005);
  std::memcpy(expected.data() + 800000, p.deviceB.data() + 3, 100);
  auto id = p.a->createTransfer(p.request(
      TransferOp::kRead, {StagedPair::segment(p.regionHostA, 4096, p.regionDeviceB, 600000, 200005),
                          StagedPair::segment(p.regionHostA, 800000, p.regionDeviceB, 3, 100)}));
  REQUIRE(id.isOk());
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  CHECK(firstDifference(p.hostA, expected) == "");
  CHECK(p.a->stats(*id)->remoteStagedBytes == 200005 + 100);
  waitSlotsFree(p);
}

TEST_CASE("target staging: GPU to GPU is staged on both sides, both ways", "[staged][target]") {
  StagedPair p;
  // WRITE: a's device -> a's buffers -> b's window -> b's device.
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionDeviceA, 0, p.regionDeviceB, 1000, 300000),
      StagedPair::segment(p.regionDeviceA, 400000, p.regionDeviceB, 700000, 65536 * 2 + 9)};
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  auto write = p.moveToEnd(p.request(TransferOp::kWrite, segments));
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");
  auto stats = p.a->stats(*write);
  CHECK(stats->stagedBytes == 300000 + 65536 * 2 + 9);
  CHECK(stats->remoteStagedBytes == stats->stagedBytes);

  // READ: b's device -> b's window -> a's buffers -> a's device.
  fill(p.deviceB, 9);
  p.doneWithDeviceB();
  std::vector<std::uint8_t> back(p.deviceA.begin(), p.deviceA.end());
  std::memcpy(back.data() + 10, p.deviceB.data() + 123456, 250000);
  auto read = p.a->createTransfer(
      p.request(TransferOp::kRead,
                {StagedPair::segment(p.regionDeviceA, 10, p.regionDeviceB, 123456, 250000)}));
  REQUIRE(read.isOk());
  REQUIRE(p.a->post(*read).isOk());
  REQUIRE(p.a->wait(*read, deadlineIn(10s)).isOk());
  CHECK(firstDifference(p.deviceA, back) == "");
}

TEST_CASE("target staging: a mixed transfer notifies only once the bytes are in the peer's GPU",
          "[staged][target]") {
  StagedPair p;
  for (std::uint64_t round = 0; round < 10; ++round) {
    const std::uint64_t base = round * 90000;
    fill(std::span<std::uint8_t>(p.hostA).subspan(base, 90000), 50 + round);
    fill(p.deviceA.subspan(base, 90000), 150 + round);
    const std::vector<TransferSegment> segments = {
        StagedPair::segment(p.regionHostA, base, p.regionHostB, base, 10000),
        StagedPair::segment(p.regionHostA, base + 10000, p.regionDeviceB, base + 10000, 50000),
        StagedPair::segment(p.regionDeviceA, base + 60000, p.regionDeviceB, base + 60000, 30000)};
    std::vector<std::uint8_t> expectedHost = p.hostB;
    std::memcpy(expectedHost.data() + base, p.hostA.data() + base, 10000);
    const std::vector<std::uint8_t> expectedDevice = afterWriteToDeviceB(p, segments);
    TransferRequest r = p.request(TransferOp::kWrite, segments);
    r.notification = "round " + std::to_string(round);
    auto id = p.a->createTransfer(r);
    REQUIRE(id.isOk());
    REQUIRE(p.a->post(*id).isOk());
    // b checks its memory the moment the notification arrives: everything must be there.
    auto note = p.b->waitNotification(deadlineIn(10s));
    REQUIRE(note.isOk());
    CHECK(note->payload == *r.notification);
    CHECK(firstDifference(p.deviceB, expectedDevice) == "");
    CHECK(firstDifference(p.hostB, expectedHost) == "");
    REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
    REQUIRE(p.a->release(*id).isOk());
  }
}

TEST_CASE("target staging: small operations share a window slot, both ways", "[staged][target]") {
  StagedPair p;
  // 60 operations of 1000 bytes, every other KiB of host memory to every third KiB of the
  // device: 60,000 bytes, which fit 3 slots of 24 KiB, not 60.
  std::vector<TransferSegment> segments;
  for (std::uint64_t i = 0; i < 60; ++i) {
    segments.push_back(
        StagedPair::segment(p.regionHostA, i * 2048, p.regionDeviceB, i * 3072, 1000));
  }
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  const std::uint64_t lendsBefore = p.b->windowServer()->lends();
  auto write = p.moveToEnd(p.request(TransferOp::kWrite, segments));
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");
  CHECK(p.b->windowServer()->lends() - lendsBefore == 3);

  // Back: the same device ranges read into other host memory.
  std::vector<TransferSegment> back;
  std::vector<std::uint8_t> expectedHost = p.hostA;
  for (std::uint64_t i = 0; i < 60; ++i) {
    back.push_back(
        StagedPair::segment(p.regionHostA, 300000 + i * 1500, p.regionDeviceB, i * 3072, 1000));
    std::memcpy(expectedHost.data() + 300000 + i * 1500, p.deviceB.data() + i * 3072, 1000);
  }
  const std::uint64_t lendsBeforeRead = p.b->windowServer()->lends();
  auto read = p.moveToEnd(p.request(TransferOp::kRead, back));
  CHECK(firstDifference(p.hostA, expectedHost) == "");
  CHECK(p.b->windowServer()->lends() - lendsBeforeRead == 3);
  waitSlotsFree(p);
}

TEST_CASE("target staging: prepared lists reach the peer's GPU memory", "[staged][target]") {
  StagedPair p;
  const std::vector<MemoryRange> local = {{p.regionHostA, 0, 50000}, {p.regionDeviceA, 0, 8192}};
  const std::vector<MemoryRange> remote = {{p.regionDeviceB, 100000, 50000},
                                           {p.regionDeviceB, 300000, 8192}};
  auto localList = p.a->prepareLocalList(local);
  auto remoteList = p.a->prepareRemoteList("b", remote);
  REQUIRE(localList.isOk());
  REQUIRE(remoteList.isOk());
  const std::uint32_t li[] = {0, 1};
  const std::uint32_t ri[] = {0, 1};
  auto id = p.a->makeTransfer(TransferOp::kWrite, *localList, li, *remoteList, ri, std::nullopt);
  REQUIRE(id.isOk());
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  p.syncB();
  CHECK(std::memcmp(p.deviceB.data() + 100000, p.hostA.data(), 50000) == 0);
  CHECK(std::memcmp(p.deviceB.data() + 300000, p.deviceA.data(), 8192) == 0);
}

TEST_CASE("target staging: a copy failing on the peer fails the transfer with its status",
          "[staged][target]") {
  StagedPair p;
  auto op = GENERATE(TransferOp::kWrite, TransferOp::kRead);
  auto id = p.a->createTransfer(
      p.request(op, {StagedPair::segment(p.regionHostA, 0, p.regionDeviceB, 0, 200000)}));
  REQUIRE(id.isOk());
  p.copiesB().failCopy(p.copiesB().copiesSubmitted() + 2,
                       Status(StatusCode::kInternal, "injected: cudaErrorIllegalAddress"));
  REQUIRE(p.a->post(*id).isOk());
  const Status outcome = p.a->wait(*id, deadlineIn(10s));
  CHECK(outcome.code() == StatusCode::kInternal);
  CHECK_THAT(outcome.message(), Catch::Contains("injected: cudaErrorIllegalAddress"));
  CHECK_THAT(outcome.message(), Catch::Contains("'b.gpu'"));
  CHECK_THAT(outcome.message(), Catch::Contains("staging window"));

  // Nothing is left lent or in flight: the same transfer succeeds when posted again.
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  waitSlotsFree(p);
}

// Sends a raw staging request from a to b, as a hostile or buggy peer might.
inline void sendRawRequest(StagedPair& p, const engine::StagingRequest& request) {
  struct Sent final : engine::Completion {
    std::vector<std::uint8_t> header, payload;
    void onComplete(Status) override { delete this; }
  };
  auto* sent = new Sent();
  sent->header = engine::encodeMessageHeader(engine::MessageKind::kStagingRequest, "a");
  sent->payload = engine::encodeStagingRequest(request);
  auto link = p.a->peer("b").value()->link();
  REQUIRE(link.isOk());
  (*link)->endpoint().sendMessage(sent->header, sent->payload, sent);
}

inline void waitRefused(StagedPair& p, std::uint64_t count) {
  const auto deadline = Clock::now() + 5s;
  while (p.b->windowServer()->refused() < count && Clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(p.b->windowServer()->refused() >= count);
}

TEST_CASE("target staging: a hostile peer's requests are refused and the target keeps serving",
          "[staged][target]") {
  StagedPair p;
  const std::vector<std::uint8_t> before(p.deviceB.begin(), p.deviceB.end());
  const std::uint64_t device = p.regionDeviceB.value;
  using engine::StagingOp;
  using engine::StagingRequest;
  // Past the end of the region, wrapping around, larger than a slot, a host region, an
  // unknown region, a copy into a slot never granted, a release of a slot not held (not
  // answered, but counted).
  sendRawRequest(p, StagingRequest{StagingOp::kWrite, 0, 1, {{device, kRegionBytes - 10, 100}}});
  sendRawRequest(p, StagingRequest{StagingOp::kRead, 0, 2, {{device, ~std::uint64_t{0} - 5, 10}}});
  sendRawRequest(p, StagingRequest{StagingOp::kRead, 0, 3, {{device, 0, kWindowSlotBytes + 1}}});
  sendRawRequest(p, StagingRequest{StagingOp::kWrite, 0, 4, {{p.regionHostB.value, 0, 100}}});
  sendRawRequest(p, StagingRequest{StagingOp::kRead, 0, 5, {{999999, 0, 100}}});
  sendRawRequest(p, StagingRequest{StagingOp::kCopyIn, 1, 6, {}});
  sendRawRequest(p, StagingRequest{StagingOp::kCopyIn, 99999, 7, {}});
  sendRawRequest(p, StagingRequest{StagingOp::kRelease, 2, 8, {}});
  // Two ranges, each inside a slot and the region, that add up to more than a slot; and a
  // good range beside one past the region's end: the whole request is refused.
  sendRawRequest(p, StagingRequest{StagingOp::kWrite,
                                   0,
                                   12,
                                   {{device, 0, kWindowSlotBytes / 2 + 1},
                                    {device, kWindowSlotBytes, kWindowSlotBytes / 2}}});
  sendRawRequest(
      p, StagingRequest{StagingOp::kRead, 0, 13, {{device, 0, 10}, {device, kRegionBytes, 1}}});
  waitRefused(p, 10);
  CHECK(firstDifference(p.deviceB, before) == "");
  CHECK(p.b->windowServer()->slotsLent() == 0);

  // A slot granted to one request cannot be used by another one of the same peer.
  sendRawRequest(p, StagingRequest{StagingOp::kWrite, 0, 10, {{device, 0, 100}}});
  const auto deadline = Clock::now() + 5s;
  while (p.b->windowServer()->slotsLent() == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(p.b->windowServer()->slotsLent() == 1);
  for (std::uint32_t slot = 0; slot < kWindowSlots; ++slot) {
    sendRawRequest(p, StagingRequest{StagingOp::kCopyIn, slot, 11, {}});
  }
  waitRefused(p, 10 + kWindowSlots);
  CHECK(firstDifference(p.deviceB, before) == "");
  // ... and its holder gives it back.
  for (std::uint32_t slot = 0; slot < kWindowSlots; ++slot) {
    sendRawRequest(p, StagingRequest{StagingOp::kRelease, slot, 10, {}});
  }
  waitRefused(p, 10 + kWindowSlots + kWindowSlots - 1);
  waitSlotsFree(p);

  // b still serves a well-behaved transfer.
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionHostA, 0, p.regionDeviceB, 0, 100000)};
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  auto id = p.moveToEnd(p.request(TransferOp::kWrite, segments));
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");
}

TEST_CASE("target staging: cancel while the peer's copies are held leaves no late byte",
          "[staged][target]") {
  StagedPair p;
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionHostA, 0, p.regionDeviceB, 0, 400000)};
  auto id = p.a->createTransfer(p.request(TransferOp::kWrite, segments));
  REQUIRE(id.isOk());

  p.copiesB().pause();
  REQUIRE(p.a->post(*id).isOk());
  // The held copies run again while cancel waits for the confirmations.
  std::thread resume([&] {
    std::this_thread::sleep_for(50ms);
    p.copiesB().resume();
  });
  CHECK(p.a->cancel(*id).isOk());
  resume.join();
  const TransferStatus status = p.a->poll(*id);
  CHECK(status.state == TransferState::kFailed);
  CHECK(status.status.code() == StatusCode::kCancelled);
  // b has handled everything a sent before (its copies that ran before the cancel reported
  // are ordered before this read); a copy after this point would be a late byte.
  p.syncB();
  const std::vector<std::uint8_t> settled(p.deviceB.begin(), p.deviceB.end());
  std::this_thread::sleep_for(50ms);
  CHECK(firstDifference(p.deviceB, settled) == "");

  // The window's slots all came back: the same transfer runs to the end when posted again.
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");
  waitSlotsFree(p);
}

TEST_CASE("target staging: a peer that stops answering fails the transfer at the reply deadline",
          "[staged][target]") {
  StagedPair p(kWindowSlots, 150ms);
  const std::vector<TransferSegment> segments = {
      StagedPair::segment(p.regionHostA, 0, p.regionDeviceB, 0, 200000)};
  auto id = p.a->createTransfer(p.request(TransferOp::kWrite, segments));
  REQUIRE(id.isOk());
  p.copiesB().pause();  // b grants slots, then never confirms a copy
  REQUIRE(p.a->post(*id).isOk());
  const Status outcome = p.a->wait(*id, deadlineIn(5s));
  CHECK(outcome.code() == StatusCode::kTimedOut);
  CHECK_THAT(outcome.message(), Catch::Contains("no staging reply from peer 'b' within 150 ms"));

  // Once b answers again, slots granted to the ended move come back, and transfers work.
  p.copiesB().resume();
  waitSlotsFree(p);
  const std::vector<std::uint8_t> expected = afterWriteToDeviceB(p, segments);
  REQUIRE(p.a->post(*id).isOk());
  REQUIRE(p.a->wait(*id, deadlineIn(10s)).isOk());
  p.syncB();
  CHECK(firstDifference(p.deviceB, expected) == "");
}

TEST_CASE("target staging: the peer's window is in its metadata and the paths are named",
          "[staged][target]") {
  StagedPair p;
  const engine::PeerMetadata metadata = p.b->localMetadata();
  CHECK(metadata.stagingWindow.present());
  CHECK(metadata.stagingWindow.slots == kWindowSlots);
  CHECK(metadata.stagingWindow.slotBytes == kWindowSlotBytes);
  CHECK(engine::chooseDataPath(MemoryKind::kCuda, MemoryKind::kCuda, false, false, true) ==
        engine::DataPath::kStagedBoth);
  CHECK(engine::toString(engine::DataPath::kStagedBoth) == "staged through host on both sides");
}

}  // namespace kvx::test::staged
