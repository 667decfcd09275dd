#include "api/python/src/kv_agent_binding.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/python/src/binding_support.h"
#include "api/python/src/index_arrays.h"
#include "api/python/src/status_errors.h"
#include "kvx/kv_agent.h"

namespace kvx::python {
namespace {

namespace py = pybind11;

using PyKvAgent = AgentHandle<KvAgent>;

KvMode modeFrom(const std::string& text) {
  std::optional<KvMode> mode = parseKvMode(text);
  if (!mode) raise(invalidArgument("KV mode '" + text + "' is neither 'push' nor 'pull'"));
  return *mode;
}

// KvAgent(name, role, model, blocks, ...): see kvx/kv_agent.py for the keyword arguments.
std::unique_ptr<PyKvAgent> makeKvAgent(const std::string& name, const std::string& role,
                                       const py::kwargs& kwargs) {
  py::dict options(kwargs);
  KvAgentOptions kv;
  std::optional<KvRole> parsedRole = parseKvRole(role);
  if (!parsedRole) raise(invalidArgument("role '" + role + "' is neither 'prefill' nor 'decode'"));
  kv.role = *parsedRole;
  if (auto v = popOption(options, "model")) kv.pool.model = v->cast<std::string>();
  if (auto v = popOption(options, "layout")) kv.pool.layout = v->cast<std::string>();
  if (auto v = popOption(options, "blocks")) kv.pool.blocks = v->cast<std::uint64_t>();
  if (auto v = popOption(options, "tensors")) {
    for (std::uintptr_t address : v->cast<std::vector<std::uintptr_t>>()) {
      kv.pool.tensors.push_back(reinterpret_cast<void*>(address));
    }
  }
  if (auto v = popOption(options, "tensor_bytes")) {
    kv.pool.tensorBytes = v->cast<std::vector<std::uint64_t>>();
  }
  if (auto v = popOption(options, "kind")) kv.pool.kind = kindFrom(v->cast<std::string>());
  if (auto v = popOption(options, "device")) kv.pool.device = v->cast<int>();
  if (auto v = popOption(options, "populate")) kv.pool.populate = v->cast<bool>();
  if (auto v = popOption(options, "mode")) kv.defaultMode = modeFrom(v->cast<std::string>());
  if (auto v = popOption(options, "request_timeout")) {
    kv.requestTimeout = toMillis(v->cast<double>(), "request_timeout");
  }
  if (auto v = popOption(options, "lease_timeout")) {
    kv.leaseTimeout = toMillis(v->cast<double>(), "lease_timeout");
  }
  if (auto v = popOption(options, "max_in_flight_bytes_per_peer")) {
    kv.maxInFlightBytesPerPeer = v->cast<std::uint64_t>();
  }
  if (auto v = popOption(options, "max_push_blocks_per_peer")) {
    kv.maxPushBlocksPerPeer = v->cast<std::uint64_t>();
  }
  if (auto v = popOption(options, "queue_capacity")) kv.queueCapacity = v->cast<std::size_t>();
  if (auto v = popOption(options, "prefix_cache_blocks")) {
    kv.prefixCacheBlocks = v->cast<std::uint64_t>();
  }
  if (auto v = popOption(options, "prefix_chunk_tokens")) {
    kv.prefixChunkTokens = v->cast<std::uint32_t>();
  }
  if (auto v = popOption(options, "reconnect")) kv.reconnect = v->cast<bool>();
  if (auto v = popOption(options, "check_free_blocks")) kv.checkFreeBlocks = v->cast<bool>();
  kv.agent = takeAgentOptions(name, options);
  refuseUnknown(options, "KvAgent()");
  Result<std::unique_ptr<KvAgent>> agent = unlocked([&] { return KvAgent::create(std::move(kv)); });
  return std::make_unique<PyKvAgent>(take(std::move(agent)), name);
}

py::array_t<std::uint64_t> toArray(const std::vector<std::uint64_t>& values) {
  py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

double seconds(std::chrono::nanoseconds ns) { return static_cast<double>(ns.count()) / 1e9; }

py::dict statusDict(const KvRequestStatus& s) {
  py::dict d;
  d["id"] = s.id;
  d["state"] = std::string(toString(s.state));
  d["error"] = s.status.isOk() ? py::object(py::none()) : py::object(py::str(s.status.toString()));
  d["peer"] = s.peer;
  d["mode"] = std::string(toString(s.mode));
  d["placement"] = s.placement;
  d["blocks"] = s.blocks;
  d["prefix_blocks"] = s.prefixBlocks;
  d["bytes"] = s.bytes;
  d["descriptors"] = s.descriptors;
  d["operations"] = s.operations;
  d["queued_seconds"] = seconds(s.queued);
  d["latency_seconds"] = seconds(s.latency);
  return d;
}

py::dict arrivalDict(const KvArrival& a) {
  py::dict d;
  d["id"] = a.id;
  d["peer"] = a.peer;
  d["peers"] = a.peers;
  d["tokens"] = a.tokens;
  d["blocks"] = toArray(a.blocks);
  d["prefix_blocks"] = a.prefixBlocks;
  d["prefix_hashes"] = toArray(a.prefixHashes);
  return d;
}

py::dict poolDict(const KvPoolInfo& p) {
  py::dict d;
  d["model"] = p.model;
  d["layout"] = p.layout;
  d["blocks"] = p.blocks;
  d["layers"] = p.layers;
  d["kv_count"] = p.kvCount;
  d["tokens_per_block"] = p.tokensPerBlock;
  d["segment_bytes"] = p.segmentBytes;
  d["block_bytes"] = p.blockBytes;
  d["tensors"] = p.tensors;
  d["tensor_bytes"] = p.tensorBytes;
  d["memory"] = std::string(toString(p.memory));
  d["device"] = p.device;
  return d;
}

py::dict usageDict(const KvPoolUsage& u) {
  py::dict d;
  d["total_blocks"] = u.totalBlocks;
  d["free_blocks"] = u.freeBlocks;
  d["free_extents"] = u.freeExtents;
  d["largest_free_extent"] = u.largestFreeExtent;
  d["cached_prefix_blocks"] = u.cachedPrefixBlocks;
  d["held_blocks"] = u.heldBlocks;
  d["late_writes"] = u.lateWrites;
  return d;
}

py::dict peerDict(const KvPeerStatus& p) {
  py::dict d;
  d["name"] = p.name;
  d["role"] = std::string(toString(p.role));
  d["compatible"] = p.compatible;
  d["reason"] = p.reason;
  d["total_blocks"] = p.totalBlocks;
  d["kv_heads"] = p.kvHeads;
  d["free_blocks"] = p.freeBlocks;
  d["in_flight_bytes"] = p.inFlightBytes;
  d["data_path"] = p.dataPath;
  return d;
}

KvRequestSpec requestFrom(const std::string& id, std::uint64_t tokens, const py::handle& blocks,
                          const py::handle& prefixHashes, const std::optional<std::string>& mode,
                          bool layerwise, const std::optional<std::string>& destination,
                          std::optional<double> timeout, const std::optional<py::dict>& slice,
                          bool keepSourceForProducer) {
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = tokens;
  ArrayView<std::uint64_t> source = valueArray(blocks, "source_blocks");
  spec.sourceBlocks.assign(source.values.begin(), source.values.end());
  if (!prefixHashes.is_none()) {
    ArrayView<std::uint64_t> hashes = valueArray(prefixHashes, "prefix_hashes");
    spec.prefixHashes.assign(hashes.values.begin(), hashes.values.end());
  }
  if (mode) spec.mode = modeFrom(*mode);
  spec.layerwise = layerwise;
  spec.keepSourceForProducer = keepSourceForProducer;
  spec.destination = destination;
  if (timeout) spec.timeout = toMillis(*timeout, "timeout");
  if (slice) {
    py::dict s = *slice;
    KvSlice out;
    if (auto v = popOption(s, "source_first_head")) out.sourceFirstHead = v->cast<std::uint32_t>();
    if (auto v = popOption(s, "destination_first_head")) {
      out.destinationFirstHead = v->cast<std::uint32_t>();
    }
    if (auto v = popOption(s, "heads")) out.heads = v->cast<std::uint32_t>();
    if (auto v = popOption(s, "destination_id")) out.destinationId = v->cast<std::string>();
    if (auto v = popOption(s, "sources")) out.sources = v->cast<std::uint32_t>();
    refuseUnknown(s, "slice");
    spec.slice = out;
  }
  return spec;
}

Deadline deadlineFor(double timeout) { return deadlineIn(toMillis(timeout, "timeout")); }

}  // namespace

void addKvAgent(py::module_& module) {
  py::class_<PyKvAgent>(module, "KvAgent")
      .def(py::init(&makeKvAgent), py::arg("name"), py::arg("role"))
      .def_property_readonly("name", &PyKvAgent::name)
      .def_property_readonly("listen_address",
                             [](const PyKvAgent& a) { return a.get()->listenAddress(); })
      .def_property_readonly(
          "role", [](const PyKvAgent& a) { return std::string(toString(a.get()->role())); })
      .def("close", &PyKvAgent::close)
      .def("shutdown",
           [](const PyKvAgent& a, double timeout, const std::string& reason) {
             std::shared_ptr<KvAgent> agent = a.get();
             const Deadline deadline = deadlineFor(timeout);
             check(unlocked([&] { return agent->shutdown(deadline, reason); }));
           })
      .def("connect",
           [](const PyKvAgent& a, const std::string& address, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             const Deadline deadline = deadlineFor(timeout);
             return take(unlocked([&] { return agent->connect(address, deadline); }));
           })
      .def("peers",
           [](const PyKvAgent& a) {
             py::list out;
             for (const KvPeerStatus& p : a.get()->peers()) out.append(peerDict(p));
             return out;
           })
      .def("pool", [](const PyKvAgent& a) { return poolDict(a.get()->pool()); })
      .def("usage", [](const PyKvAgent& a) { return usageDict(a.get()->usage()); })
      .def("give_back_held_blocks",
           [](const PyKvAgent& a, const std::string& peer) {
             std::shared_ptr<KvAgent> agent = a.get();
             return take(unlocked([&] { return agent->giveBackHeldBlocks(peer); }));
           })
      .def("write_segments",
           [](const PyKvAgent& a, const py::handle& refs, const py::handle& bytes, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             std::vector<KvSegmentRef> table = segmentTable(refs, "segments");
             py::buffer_info data =
                 byteBuffer(bytes, "data", table.size() * agent->pool().segmentBytes, false);
             std::span<const std::byte> span(static_cast<const std::byte*>(data.ptr),
                                             static_cast<std::size_t>(data.size * data.itemsize));
             const Deadline deadline = deadlineFor(timeout);
             check(unlocked([&] { return agent->writeSegments(table, span, deadline); }));
           })
      .def("read_segments",
           [](const PyKvAgent& a, const py::handle& refs, const py::handle& out, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             std::vector<KvSegmentRef> table = segmentTable(refs, "segments");
             py::buffer_info data =
                 byteBuffer(out, "out", table.size() * agent->pool().segmentBytes, true);
             std::span<std::byte> span(static_cast<std::byte*>(data.ptr),
                                       static_cast<std::size_t>(data.size * data.itemsize));
             const Deadline deadline = deadlineFor(timeout);
             check(unlocked([&] { return agent->readSegments(table, span, deadline); }));
           })
      .def("allocate_blocks",
           [](const PyKvAgent& a, std::uint64_t count) {
             return toArray(take(a.get()->allocateBlocks(count)));
           })
      .def("free_blocks",
           [](const PyKvAgent& a, const py::handle& blocks) {
             ArrayView<std::uint64_t> ids = valueArray(blocks, "blocks");
             check(a.get()->freeBlocks(ids.values));
           })
      .def(
          "submit",
          [](const PyKvAgent& a, const std::string& id, std::uint64_t tokens,
             const py::handle& blocks, const py::handle& prefixHashes,
             const std::optional<std::string>& mode, bool layerwise,
             const std::optional<std::string>& destination, std::optional<double> timeout,
             const std::optional<py::dict>& slice, bool keepSourceForProducer) {
            std::shared_ptr<KvAgent> agent = a.get();
            KvRequestSpec spec = requestFrom(id, tokens, blocks, prefixHashes, mode, layerwise,
                                             destination, timeout, slice, keepSourceForProducer);
            check(unlocked([&] { return agent->submit(spec); }));
          },
          py::arg("id"), py::arg("tokens"), py::arg("source_blocks"),
          py::arg("prefix_hashes") = py::none(), py::arg("mode") = py::none(),
          py::arg("layerwise") = false, py::arg("destination") = py::none(),
          py::arg("timeout") = py::none(), py::arg("slice") = py::none(),
          py::arg("keep_source_for_producer") = false)
      .def("layer_ready",
           [](const PyKvAgent& a, const std::string& id, std::uint32_t layer) {
             std::shared_ptr<KvAgent> agent = a.get();
             check(unlocked([&] { return agent->layerReady(id, layer); }));
           })
      .def("cancel",
           [](const PyKvAgent& a, const std::string& id) {
             std::shared_ptr<KvAgent> agent = a.get();
             check(unlocked([&] { return agent->cancel(id); }));
           })
      .def("status", [](const PyKvAgent& a,
                        const std::string& id) { return statusDict(take(a.get()->status(id))); })
      .def("wait",
           [](const PyKvAgent& a, const std::string& id, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             const Deadline deadline = deadlineFor(timeout);
             return statusDict(take(unlocked([&] { return agent->wait(id, deadline); })));
           })
      .def("next_arrival",
           [](const PyKvAgent& a, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             const Deadline deadline = deadlineFor(timeout);
             return arrivalDict(take(unlocked([&] { return agent->nextArrival(deadline); })));
           })
      .def("wait_layer",
           [](const PyKvAgent& a, const std::string& id, std::uint32_t layer, double timeout) {
             std::shared_ptr<KvAgent> agent = a.get();
             const Deadline deadline = deadlineFor(timeout);
             check(unlocked([&] { return agent->waitLayer(id, layer, deadline); }));
           })
      .def("consume",
           [](const PyKvAgent& a, const std::string& id) {
             std::shared_ptr<KvAgent> agent = a.get();
             check(unlocked([&] { return agent->consume(id); }));
           })
      .def("release",
           [](const PyKvAgent& a, const std::string& id) {
             std::shared_ptr<KvAgent> agent = a.get();
             check(unlocked([&] { return agent->release(id); }));
           })
      .def("drop_prefix_cache", [](const PyKvAgent& a) {
        std::shared_ptr<KvAgent> agent = a.get();
        check(unlocked([&] { return agent->dropPrefixCache(); }));
      });
}

}  // namespace kvx::python
