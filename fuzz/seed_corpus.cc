// Writes the seed corpus of every fuzz target under the directory given (fuzz/corpus):
// small valid inputs made with the project's own encoders, and a few malformed ones. Files
// are named gen-*; other files in the corpus (inputs that once found a bug) are left alone.
//   build/fuzz/kvx_fuzz_seed_corpus fuzz/corpus

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/message.h"
#include "agent/metadata/metadata_codec.h"
#include "engine/notify/notification_header.h"
#include "engine/staged/staging_message.h"
#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/socket/socket_wire.h"
#include "engine/transport/transport_registry.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "engine/transport/ucx/ucx_remote_key.h"
#include "kv/handoff/kv_agent_info.h"
#include "kv/handoff/kv_message.h"
#include "kv/pool/kv_pool.h"
#include "kv/pool/model_shape.h"
#include "workload/latency_stats.h"
#include "workload/trace_writer.h"

namespace {

namespace fs = std::filesystem;
using namespace kvx;
using Bytes = std::vector<std::uint8_t>;

fs::path corpusRoot;

Bytes bytesOf(std::string_view text) { return Bytes(text.begin(), text.end()); }

void write(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path dir = corpusRoot / target;
  fs::create_directories(dir);
  std::ofstream out(dir / ("gen-" + name), std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (bytes.size() > 4096)
    std::fprintf(stderr, "warning: %s/%s is large\n", target.c_str(), name.c_str());
}

void write(const std::string& target, const std::string& name, std::string_view text) {
  write(target, name, bytesOf(text));
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A packed remote key as a UCX endpoint frames it: region address, length, then UCX's bytes.
Bytes framedKey(std::uint8_t seed) {
  Bytes body(16, 0);
  body[0] = seed;
  body[9] = 0x10;
  const Bytes ucx = {0x0b, 0x00, 0x01, seed, 0xff, 0x7f};
  return engine::ucx::frame(engine::ucx::kRemoteKeyMagic, concat(body, ucx));
}

engine::PeerMetadata metadata(int regions) {
  engine::PeerMetadata m;
  m.name = "prefill-0";
  m.incarnation = 0x1234abcd5678ef00ULL;
  m.transport = "ucx";
  m.dataAddress = engine::ucx::frame(engine::ucx::kAddressMagic, Bytes{0x01, 0x02, 0x00, 0xff});
  for (int i = 0; i < regions; ++i) {
    engine::RegionMetadata region;
    region.info.id = RegionId(static_cast<std::uint64_t>(i + 1));
    region.info.name = "kv.layer" + std::to_string(i);
    region.info.address = 0x7f0000000000ULL + static_cast<std::uint64_t>(i) * 0x10000;
    region.info.length = 0x10000;
    region.info.kind = i == 1 ? MemoryKind::kCuda : MemoryKind::kHost;
    region.info.device = i == 1 ? 0 : -1;
    region.info.exposed = true;
    region.packedKey = framedKey(static_cast<std::uint8_t>(i));
    m.regions.push_back(region);
  }
  return m;
}

void frames() {
  using agent::channel::encodeFrame;
  using agent::channel::MessageType;
  const Bytes hello = encodeFrame(MessageType::kHello, R"({"metadata":{}})");
  const Bytes bye = encodeFrame(MessageType::kGoodbye, R"({"reason":"done"})");
  write("frame", "one", concat({0}, hello));
  write("frame", "two-chunked", concat(concat({7}, hello), bye));
  write("frame", "empty-payload", concat({3}, encodeFrame(std::uint16_t{42}, "")));
  write("frame", "truncated", concat({1}, Bytes(hello.begin(), hello.begin() + 15)));
  Bytes badMagic = hello;
  badMagic[0] = 'X';
  write("frame", "bad-magic", concat({0}, badMagic));
  Bytes badVersion = bye;
  badVersion[5] = 9;
  write("frame", "bad-version", concat(concat({5}, hello), badVersion));
  Bytes oversized = encodeFrame(std::uint16_t{1}, "{}");
  oversized[8] = 0x7f;
  write("frame", "oversized", concat({2}, oversized));
}

// The message target's input: a type selector byte (index into its table), then the payload.
void message(const std::string& name, std::uint8_t selector, std::string_view payload) {
  write("message", name, concat({selector}, bytesOf(payload)));
}

void messages() {
  using namespace agent::channel;
  auto payloadOf = [](const Message& m) {
    const Bytes frame = encodeMessage(m);
    return std::string(frame.begin() + kFrameHeaderBytes, frame.end());
  };
  message("hello", 0, payloadOf(Hello{metadata(2), "decode"}));
  message("hello-ack", 1, payloadOf(HelloAck{metadata(1)}));
  message("metadata-update", 2, payloadOf(MetadataUpdate{metadata(0)}));
  message("error", 3, payloadOf(ErrorMessage::fromStatus(alreadyExists("name 'a' is taken"))));
  message("goodbye", 4, payloadOf(Goodbye{"shutting down"}));
  message("blob-type", 5, payloadOf(HelloAck{metadata(0)}));
  message("heartbeat", 7, payloadOf(Heartbeat{}));
  message("hello-peer-timeout", 0, payloadOf(Hello{metadata(1), "prefill", 2000}));
  message("hello-ack-peer-timeout", 1, payloadOf(HelloAck{metadata(0), 20}));
  message("unknown-type", 8, R"({"reason":"x"})");
  message("hello-ack-knew-you", 1, payloadOf(HelloAck{metadata(1), 2000, true}));
  message("rejoin", 12, payloadOf(Rejoin{}));
  message("rejoin-ack", 13, payloadOf(RejoinAck{}));
  message("not-json", 4, R"({"reason":)");
  message("deep", 4, std::string(40, '[') + std::string(40, ']'));
  std::string zeroLength = payloadOf(Hello{metadata(1), std::nullopt});
  zeroLength.replace(zeroLength.find("\"length\":65536"), 14, "\"length\":0");
  message("zero-length", 0, zeroLength);
}

void metadataBlobs() {
  using agent::metadata::encodeMetadataBlob;
  const Bytes blob = encodeMetadataBlob(metadata(2));
  write("metadata_blob", "two-regions", blob);
  write("metadata_blob", "no-regions", encodeMetadataBlob(metadata(0)));
  write("metadata_blob", "truncated", Bytes(blob.begin(), blob.end() - 5));
  write("metadata_blob", "trailing", concat(blob, {0x4b}));
  write("metadata_blob", "wrong-type",
        agent::channel::encodeFrame(agent::channel::MessageType::kHello, "{}"));
  engine::PeerMetadata duplicate = metadata(2);
  duplicate.regions[1].info.id = duplicate.regions[0].info.id;
  write("metadata_blob", "duplicate-id", encodeMetadataBlob(duplicate));
}

void kvMessages() {
  using namespace kv::handoff;
  const std::pair<const char*, KvMessage> samples[] = {
      {"place", PlaceMsg{"req-1",
                         1000,
                         63,
                         {11, 0, 18446744073709551615ull},
                         KvMode::kPull,
                         true,
                         2500,
                         {{4, 10}, {100, 53}}}},
      {"placed", PlacedMsg{"req-2", {{0, 1}, {7, 62}}, 5, 900}},
      {"refused", RefusedMsg{"req-3", resourceExhausted("no room"), true, 10}},
      {"data", DataMsg{"req-5", 17}},
      {"ready", ReadyMsg{"req-6", kAllLayers}},
      {"confirm", ConfirmMsg{"req-7", 12, 340, 9}},
      {"abort", AbortMsg{"req-4", timedOut("gave up after 30000 ms")}},
      {"abort-ack", AbortAckMsg{"req-8", 44}},
      {"capacity", CapacityMsg{123456}},
  };
  for (const auto& [name, message] : samples) write("kv_message", name, encode(message));
  write("kv_message", "unknown-type", R"({"t":"teleport","req":"r"})");
  write("kv_message", "zero-extent",
        R"({"t":"placed","req":"r","blocks":[[3,0]],"prefixBlocks":0,"free":1})");
}

void kvAgentInfos() {
  using namespace kv::handoff;
  KvAgentInfo info{KvRole::kDecode,    KvMode::kPush, kv::builtinShape("llama3-8b").value(),
                   kv::KvLayout::kNHD, 1024,          {}};
  for (std::uint32_t t = 0; t < info.shape.layers; ++t) {
    info.regionNames.push_back(kv::KvPool::regionName(t));
  }
  write("kv_agent_info", "decode", encodeKvAgentInfo(info));
  info.role = KvRole::kPrefill;
  info.mode = KvMode::kPull;
  info.shape = kv::builtinShape("deepseek-v3").value();
  info.layout = kv::KvLayout::kCrossLayer;
  info.regionNames = {"kv.t0"};
  write("kv_agent_info", "prefill-pull-cross-layer", encodeKvAgentInfo(info));
  info.regionNames.push_back("kv.t1");
  write("kv_agent_info", "extra-region", encodeKvAgentInfo(info));
  write("kv_agent_info", "not-kv", R"({"router": {"shards": 4}})");
}

void notificationHeaders() {
  write("notification_header", "named", engine::encodeNotificationHeader("decode-1"));
  write("notification_header", "empty-name", engine::encodeNotificationHeader(""));
  write("notification_header", "bad-kind", Bytes{'K', 2, 1, 0, 'a'});
  write("notification_header", "long-length", Bytes{'K', 1, 0xff, 0xff, 'a'});
}

void stagingMessages() {
  using engine::StagingOp;
  using engine::StagingReplyKind;
  write("staging_message", "write",
        engine::encodeStagingRequest(
            {StagingOp::kWrite, 0, (std::uint64_t{1} << 32) | 5, {{3, 4096, 65536}}}));
  write("staging_message", "read-3-ranges",
        engine::encodeStagingRequest(
            {StagingOp::kRead, 0, 11, {{3, 0, 1000}, {4, 8192, 24}, {3, 1 << 20, 4096}}}));
  write("staging_message", "copy-in", engine::encodeStagingRequest({StagingOp::kCopyIn, 2, 7, {}}));
  write("staging_message", "version-1",
        Bytes{1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0});
  write("staging_message", "granted",
        engine::encodeStagingReply({StagingReplyKind::kGranted, 1, 9, {}}));
  write("staging_message", "failed",
        engine::encodeStagingReply(
            {StagingReplyKind::kFailed, 0, 9, invalidArgument("range exceeds region 'kv'")}));
  write("staging_message", "bad-version", Bytes{3, 1, 0, 0});
  write("staging_message", "long-message",
        Bytes{2, 4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 13, 0, 0, 0, 0xff, 0xff, 0, 0, 'x'});
}

void modelShapes() {
  for (const std::string& name : kv::builtinShapeNames()) {
    write("model_shape", name, kv::shapeToJson(kv::builtinShape(name).value()));
  }
  write("model_shape", "defaults", R"({"name":"tiny","layers":2,"kvHeads":4,"headDim":64})");
  write("model_shape", "zero-layers", R"({"name":"z","layers":0,"kvHeads":4,"headDim":64})");
  write("model_shape", "huge",
        R"({"name":"h","layers":1000000,"kvHeads":1000000,"headDim":1000000,)"
        R"("dtypeBytes":1000000,"tokensPerBlock":1000000})");
  write("model_shape", "not-object", "[1,2]");
}

void traces() {
  using workload::TraceRecord;
  std::string text;
  for (const TraceRecord& r : {TraceRecord{0, 1200, 50, {1, 2, 3}}, TraceRecord{5, 600, 0, {1}},
                               TraceRecord{5, 1, 7, {}}}) {
    text += workload::toJsonLine(r) + "\n";
  }
  write("trace_reader", "three", text);
  write("trace_reader", "crlf-blank-float",
        "{\"timestamp\": 1.0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": []}\r\n"
        "\n   \n{\"timestamp\": 2, \"input_length\": 513, \"output_length\": 0, \"hash_ids\": [4, "
        "5], \"extra\": true}");
  write("trace_reader", "decreasing",
        "{\"timestamp\": 9, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n"
        "{\"timestamp\": 3, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n");
  write("trace_reader", "too-many-ids",
        R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1, 2]})");
}

void ucxFrames() {
  using namespace engine::ucx;
  write("ucx_frame", "address", frame(kAddressMagic, Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  write("ucx_frame", "remote-key", framedKey(3));
  write("ucx_frame", "empty-body", frame(kRemoteKeyMagic, Bytes{}));
  Bytes corrupt = framedKey(4);
  corrupt[12] ^= 0x40;
  write("ucx_frame", "bad-checksum", corrupt);
  Bytes truncated = framedKey(5);
  truncated.resize(truncated.size() - 3);
  write("ucx_frame", "truncated", truncated);
}

// UCX bodies of worker addresses: one this machine's UCX made (its process is gone when the
// seed is replayed, so connecting to it fails cleanly or reaches nobody), and the crafted
// ones that aborted an agent inside ucp_ep_create before kvx-ucx-probe.
void ucxAddresses() {
  engine::TransportOptions options;
  options.agentName = "seed";
  options.transports = "shm";
  auto transport = engine::createTransport("ucx", options);
  if (!transport.isOk()) {
    std::fprintf(stderr, "no UCX transport for the ucx_address seeds: %s\n",
                 transport.status().toString().c_str());
    return;
  }
  const Bytes framed = (*transport)->localAddress();
  auto body = engine::ucx::unframe(engine::ucx::kAddressMagic, framed, "own address");
  if (!body.isOk()) return;
  const Bytes real(body->begin(), body->end());
  write("ucx_address", "real-shm", real);
  Bytes versionTwo(41, 0);
  versionTwo[0] = 0x02;
  write("ucx_address", "version-two-zeros", versionTwo);
  Bytes firstByte = real;
  firstByte[0] ^= 0x0F;
  write("ucx_address", "first-byte-changed", firstByte);
  write("ucx_address", "truncated", Bytes(real.begin(), real.begin() + real.size() / 2));
  write("ucx_address", "empty", Bytes{});

  // Keys: a real one of this transport (its segment is gone when replayed), and garbage of
  // the same length, which made UCX 1.13 crash in ucp_ep_rkey_unpack over shared memory.
  std::vector<std::uint8_t> host(4096);
  auto memory = (*transport)->registerMemory(host.data(), host.size(), MemoryKind::kHost, -1);
  if (!memory.isOk()) return;
  auto key = engine::ucx::parseRemoteKey((*memory)->packedRemoteKey());
  if (!key.isOk()) return;
  const Bytes realKey(key->ucxKey.begin(), key->ucxKey.end());
  write("ucx_remote_key", "real-shm", realKey);
  write("ucx_remote_key", "all-ones", Bytes(realKey.size(), 0xFF));
  write("ucx_remote_key", "zeros", Bytes(realKey.size(), 0));
  write("ucx_remote_key", "one-byte", Bytes{1});
}

void socketWire() {
  using namespace engine::socket;
  auto header = [](const FrameHeader& h) {
    const EncodedHeader encoded = encodeFrameHeader(h);
    return Bytes(encoded.begin(), encoded.end());
  };
  write("socket_wire", "hello",
        header({FrameType::kHello, kProtectEncrypted, 0, 0x1234, 0x5678, 0, kNonceBytes}));
  write("socket_wire", "welcome",
        header({FrameType::kWelcome, 0, 0, 0x5678, 0x1234, 0, kNonceBytes}));
  write("socket_wire", "put", header({FrameType::kPut, 0, 7, 3, 0xfeed, 0x7f0000001000, 4096}));
  write("socket_wire", "message", header({FrameType::kMessage, 5, 9, 0, 0, 0, 105}));
  write("socket_wire", "error", header({FrameType::kError, 9, 2, 0, 0, 0, 20}));
  Bytes oversized = header({FrameType::kMessage, 0, 1, 0, 0, 0, kMaxMessageBytes + 1});
  write("socket_wire", "message-too-large", oversized);
  Bytes badType = header({FrameType::kDone, 0, 1, 0, 0, 0, 0});
  badType[5] = 42;
  write("socket_wire", "unknown-type", badType);
  SocketAddress address;
  address.instance = 0xabcdef;
  address.port = 40123;
  address.addresses = {0x0100007f, 0x020012c6};
  write("socket_wire", "address", packSocketAddress(address));
  Bytes cutAddress = packSocketAddress(address);
  cutAddress.pop_back();
  write("socket_wire", "address-truncated", cutAddress);
  write("socket_wire", "key", packRegionKey({4, 0x1122334455667788, 0x7f0000100000, 1 << 20}));
  write("socket_wire", "key-wrapping", packRegionKey({4, 1, ~std::uint64_t{0} - 10, 100}));
}

void histograms() {
  workload::LatencyHistogram h;
  for (int ms : {1, 2, 2, 5, 40, 300}) h.add(std::chrono::milliseconds(ms));
  h.add(std::chrono::nanoseconds(12));
  write("latency_histogram", "samples", h.toJson());
  write("latency_histogram", "empty", workload::LatencyHistogram().toJson());
  std::string miscount = h.toJson();
  miscount.replace(miscount.find("\"count\":7"), 9, "\"count\":8");
  write("latency_histogram", "miscount", miscount);
  write("latency_histogram", "wrong-format", R"({"format":"other","version":1})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  corpusRoot = argv[1];
  frames();
  messages();
  metadataBlobs();
  kvMessages();
  kvAgentInfos();
  notificationHeaders();
  stagingMessages();
  modelShapes();
  traces();
  ucxFrames();
  ucxAddresses();
  socketWire();
  histograms();
  return 0;
}
