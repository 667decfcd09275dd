// kvx-test-labels: unit
// KvAgent::writeSegment / readSegment (and their batched forms) on host pools and on CUDA
// pools, the latter with the process on the strict fake GPU runtime (KVX_GPU_RUNTIME=
// fake-strict, set before the first agent: device memory the CPU cannot touch), and a request
// handed from a CUDA pool to a CUDA pool, staged through host on both sides.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

#include "engine/gpu/gpu_runtime.h"
#include "kvx/kv_agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

const char* kTinyShape =
    R"({"name":"tiny","layers":2,"kvHeads":2,"headDim":16,"dtypeBytes":2,"tokensPerBlock":4})";

// Before any agent: the runtime is chosen at the first gpuRuntime() call.
void useFakeGpu() {
  setenv(engine::gpu::kGpuRuntimeVariable, "fake-strict", 1);
  REQUIRE_THAT(engine::gpu::gpuRuntime().describe(), Catch::Contains("KVX_GPU_RUNTIME=fake"));
}

std::unique_ptr<KvAgent> makeAgent(const std::string& name, KvRole role, MemoryKind kind) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions(name, "inproc");
  options.role = role;
  options.pool.model = kTinyShape;
  options.pool.blocks = 8;
  options.pool.kind = kind;
  options.pool.device = kind == MemoryKind::kCuda ? 0 : -1;
  options.prefixChunkTokens = 4;
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

std::vector<std::byte> pattern(std::size_t length, std::uint64_t seed) {
  std::vector<std::byte> bytes(length);
  for (std::size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + seed * 7) & 0xff);
  }
  return bytes;
}

bool equal(const std::vector<std::byte>& a, const std::vector<std::byte>& b) { return a == b; }

}  // namespace

TEST_CASE("segments are written and read on host and CUDA pools", "[kv][gpu_path]") {
  useFakeGpu();
  const MemoryKind kind = GENERATE(MemoryKind::kHost, MemoryKind::kCuda);
  CAPTURE(toString(kind));
  auto agent = makeAgent("a", KvRole::kPrefill, kind);
  CHECK(agent->pool().memory == kind);
  CHECK(agent->pool().device == (kind == MemoryKind::kCuda ? 0 : -1));
  const std::size_t length = agent->pool().segmentBytes;

  for (std::uint64_t block : {0u, 7u}) {
    for (std::uint32_t layer = 0; layer < agent->pool().layers; ++layer) {
      for (std::uint32_t kv = 0; kv < agent->pool().kvCount; ++kv) {
        const std::uint64_t seed = block * 100 + layer * 10 + kv;
        REQUIRE(
            agent->writeSegment(block, layer, kv, pattern(length, seed), deadlineIn(5s)).isOk());
      }
    }
  }
  for (std::uint64_t block : {0u, 7u}) {
    for (std::uint32_t layer = 0; layer < agent->pool().layers; ++layer) {
      for (std::uint32_t kv = 0; kv < agent->pool().kvCount; ++kv) {
        const std::uint64_t seed = block * 100 + layer * 10 + kv;
        std::vector<std::byte> out(length);
        REQUIRE(agent->readSegment(block, layer, kv, out, deadlineIn(5s)).isOk());
        CHECK(equal(out, pattern(length, seed)));
        if (kind == MemoryKind::kHost) {
          auto view = agent->segment(block, layer, kv).value();
          CHECK(equal(std::vector<std::byte>(view.begin(), view.end()), out));
        }
      }
    }
  }
  if (kind == MemoryKind::kCuda) {
    CHECK(agent->segment(0, 0, 0).status().code() == StatusCode::kFailedPrecondition);
  }

  std::vector<std::byte> out(length);
  const Status block = agent->readSegment(8, 0, 0, out, deadlineIn(5s));
  CHECK(block.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(block.message(), Catch::Contains("outside the pool"));
  CHECK(agent->readSegment(0, 2, 0, out, deadlineIn(5s)).code() == StatusCode::kInvalidArgument);
  std::vector<std::byte> shorter(length - 1);
  const Status wrongLength = agent->writeSegment(0, 0, 0, shorter, deadlineIn(5s));
  CHECK(wrongLength.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(wrongLength.message(), Catch::Contains("got a span of " + std::to_string(length - 1)));
}

TEST_CASE("many segments are written and read in one batch on host and CUDA pools",
          "[kv][gpu_path]") {
  useFakeGpu();
  const MemoryKind kind = GENERATE(MemoryKind::kHost, MemoryKind::kCuda);
  CAPTURE(toString(kind));
  auto agent = makeAgent("batch", KvRole::kPrefill, kind);
  const std::size_t length = agent->pool().segmentBytes;
  // Out of pool order, across blocks, layers, K and V.
  const std::vector<KvSegmentRef> refs{{5, 1, 0}, {0, 0, 1}, {7, 1, 1}, {2, 0, 0}, {5, 0, 1}};
  const std::vector<std::byte> in = pattern(refs.size() * length, 3);
  REQUIRE(agent->writeSegments(refs, in, deadlineIn(5s)).isOk());
  // Each segment holds its piece of the batch, as the one-segment read sees it.
  for (std::size_t i = 0; i < refs.size(); ++i) {
    std::vector<std::byte> one(length);
    REQUIRE(
        agent->readSegment(refs[i].block, refs[i].layer, refs[i].kv, one, deadlineIn(5s)).isOk());
    CHECK(
        equal(one, std::vector<std::byte>(in.begin() + i * length, in.begin() + (i + 1) * length)));
  }
  std::vector<std::byte> out(refs.size() * length);
  REQUIRE(agent->readSegments(refs, out, deadlineIn(5s)).isOk());
  CHECK(equal(out, in));

  // One ref outside the pool: nothing of the batch is written.
  const std::vector<KvSegmentRef> bad{{1, 0, 0}, {8, 0, 0}};
  const std::vector<std::byte> other = pattern(bad.size() * length, 9);
  const Status refused = agent->writeSegments(bad, other, deadlineIn(5s));
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("segment 1"));
  std::vector<std::byte> untouched(length);
  REQUIRE(agent->readSegment(1, 0, 0, untouched, deadlineIn(5s)).isOk());
  CHECK_FALSE(equal(untouched, std::vector<std::byte>(other.begin(), other.begin() + length)));
  // A span that is not the batch's length.
  std::vector<std::byte> shorter(refs.size() * length - 8);
  const Status wrongLength = agent->readSegments(refs, shorter, deadlineIn(5s));
  CHECK(wrongLength.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(wrongLength.message(), Catch::Contains("need a span of"));
}

TEST_CASE("a request moves from a CUDA pool to a CUDA pool, staged through host",
          "[kv][gpu_path]") {
  useFakeGpu();
  auto decode = makeAgent("decode", KvRole::kDecode, MemoryKind::kCuda);
  auto prefill = makeAgent("prefill", KvRole::kPrefill, MemoryKind::kCuda);
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());
  const std::size_t length = prefill->pool().segmentBytes;

  auto source = prefill->allocateBlocks(2);
  REQUIRE(source.isOk());
  for (std::size_t i = 0; i < source->size(); ++i) {
    for (std::uint32_t layer = 0; layer < prefill->pool().layers; ++layer) {
      for (std::uint32_t kv = 0; kv < prefill->pool().kvCount; ++kv) {
        REQUIRE(prefill
                    ->writeSegment((*source)[i], layer, kv,
                                   pattern(length, i * 10 + layer * 2 + kv), deadlineIn(5s))
                    .isOk());
      }
    }
  }
  KvRequestSpec spec;
  spec.id = "r";
  spec.tokens = 8;
  spec.sourceBlocks = *source;
  spec.mode = GENERATE(KvMode::kPush, KvMode::kPull);
  REQUIRE(prefill->submit(spec).isOk());
  auto arrival = decode->nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  REQUIRE(arrival->blocks.size() == 2);
  for (std::size_t i = 0; i < arrival->blocks.size(); ++i) {
    for (std::uint32_t layer = 0; layer < decode->pool().layers; ++layer) {
      for (std::uint32_t kv = 0; kv < decode->pool().kvCount; ++kv) {
        std::vector<std::byte> out(length);
        REQUIRE(decode->readSegment(arrival->blocks[i], layer, kv, out, deadlineIn(5s)).isOk());
        CHECK(equal(out, pattern(length, i * 10 + layer * 2 + kv)));
      }
    }
  }
  REQUIRE(prefill->wait("r", deadlineIn(5s)).isOk());
  REQUIRE(decode->consume("r").isOk());
  REQUIRE(decode->release("r").isOk());

  // Both status views say how the GPU memory moved.
  const std::vector<KvPeerStatus> peers = prefill->peers();
  REQUIRE(peers.size() == 1);
  for (const KvPeerStatus& peer : peers) {
    CHECK_THAT(peer.dataPath, Catch::Contains("GPU memory: staged through host ("));
    CHECK_THAT(peer.dataPath, Catch::Contains("peer's GPU memory: through its staging window"));
  }
}
