#include "api/python/src/agent_binding.h"

#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/python/src/binding_support.h"
#include "api/python/src/index_arrays.h"
#include "api/python/src/status_errors.h"
#include "kvx/agent.h"

namespace kvx::python {
namespace {

namespace py = pybind11;

TransferOp opFrom(const std::string& text) {
  if (text == "read") return TransferOp::kRead;
  if (text == "write") return TransferOp::kWrite;
  raise(invalidArgument("transfer operation '" + text + "' is neither 'read' nor 'write'"));
}

py::bytes bytesOf(const std::string& text) { return py::bytes(text.data(), text.size()); }

using PyAgent = AgentHandle<Agent>;

std::unique_ptr<PyAgent> makeAgent(const std::string& name, const py::kwargs& kwargs) {
  py::dict options(kwargs);
  AgentOptions agentOptions = takeAgentOptions(name, options);
  refuseUnknown(options, "Agent()");
  Result<std::unique_ptr<Agent>> agent =
      unlocked([&] { return Agent::create(std::move(agentOptions)); });
  return std::make_unique<PyAgent>(take(std::move(agent)), name);
}

py::dict regionDict(const RegionInfo& region) {
  py::dict d;
  d["id"] = region.id.value;
  d["name"] = region.name;
  d["address"] = region.address;
  d["length"] = region.length;
  d["kind"] = std::string(toString(region.kind));
  d["device"] = region.device;
  return d;
}

}  // namespace

void addAgent(py::module_& module) {
  py::class_<PyAgent>(module, "Agent")
      .def(py::init(&makeAgent), py::arg("name"))
      .def_property_readonly("name", &PyAgent::name)
      .def_property_readonly("listen_address",
                             [](const PyAgent& a) { return a.get()->listenAddress(); })
      .def("close", &PyAgent::close)
      .def(
          "register_memory",
          [](const PyAgent& a, const std::string& name, std::uintptr_t address,
             std::uint64_t length, const std::string& kind, int device, bool exposed) {
            MemoryRegionSpec spec{
                name, reinterpret_cast<void*>(address), length, kindFrom(kind), device, exposed};
            return take(a.get()->registerMemory(spec)).value;
          },
          py::arg("name"), py::arg("address"), py::arg("length"), py::arg("kind") = "host",
          py::arg("device") = -1, py::arg("exposed") = true)
      .def(
          "allocate_memory",
          [](const PyAgent& a, const std::string& name, std::uint64_t length,
             const std::string& kind, int device, bool exposed, bool populate) {
            AllocationSpec spec{name, length, kindFrom(kind), device, exposed, populate};
            AllocatedRegion region = take(a.get()->allocateMemory(spec));
            return py::make_tuple(region.id.value,
                                  reinterpret_cast<std::uintptr_t>(region.address));
          },
          py::arg("name"), py::arg("length"), py::arg("kind") = "host", py::arg("device") = -1,
          py::arg("exposed") = true, py::arg("populate") = true)
      .def("deregister_memory",
           [](const PyAgent& a, std::uint64_t region) {
             check(a.get()->deregisterMemory(RegionId(region)));
           })
      .def("export_metadata",
           [](const PyAgent& a) {
             std::vector<std::uint8_t> blob = take(a.get()->exportMetadata());
             return py::bytes(reinterpret_cast<const char*>(blob.data()), blob.size());
           })
      .def("load_peer_metadata",
           [](const PyAgent& a, const py::bytes& blob) {
             const std::string bytes = blob;
             const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
             return take(a.get()->loadPeerMetadata({data, bytes.size()}));
           })
      .def(
          "connect",
          [](const PyAgent& a, const std::string& address, std::optional<double> timeout) {
            std::shared_ptr<Agent> agent = a.get();
            std::optional<Deadline> deadline;
            if (timeout) deadline = deadlineIn(toMillis(*timeout, "timeout"));
            Result<std::string> peer = unlocked([&] {
              return deadline ? agent->connect(address, *deadline) : agent->connect(address);
            });
            return take(std::move(peer));
          },
          py::arg("address"), py::arg("timeout") = py::none())
      .def("disconnect",
           [](const PyAgent& a, const std::string& peer) {
             std::shared_ptr<Agent> agent = a.get();
             Status done = unlocked([&] { return agent->disconnect(peer); });
             check(done);
           })
      .def("peers", [](const PyAgent& a) { return a.get()->peers(); })
      .def("peer_writes_directly",
           [](const PyAgent& a, const std::string& peer) {
             return take(a.get()->peerWritesDirectly(peer));
           })
      .def("peer_info",
           [](const PyAgent& a, const std::string& peer) {
             PeerInfo info = take(a.get()->peerInfo(peer));
             py::list regions;
             for (const RegionInfo& r : info.regions) regions.append(regionDict(r));
             py::dict out;
             out["name"] = info.name;
             out["incarnation"] = info.incarnation;
             out["application_info"] = info.applicationInfo;
             out["regions"] = regions;
             return out;
           })
      .def("peer_regions",
           [](const PyAgent& a, const std::string& peer) {
             PeerInfo info = take(a.get()->peerInfo(peer));
             py::list regions;
             for (const RegionInfo& r : info.regions) regions.append(regionDict(r));
             return regions;
           })
      .def("prepare_local_list",
           [](const PyAgent& a, const py::handle& ranges) {
             std::shared_ptr<Agent> agent = a.get();
             std::vector<MemoryRange> table = rangeTable(ranges, "ranges");
             Result<ListId> list = unlocked([&] { return agent->prepareLocalList(table); });
             return take(std::move(list)).value;
           })
      .def("prepare_remote_list",
           [](const PyAgent& a, const std::string& peer, const py::handle& ranges) {
             std::shared_ptr<Agent> agent = a.get();
             std::vector<MemoryRange> table = rangeTable(ranges, "ranges");
             Result<ListId> list = unlocked([&] { return agent->prepareRemoteList(peer, table); });
             return take(std::move(list)).value;
           })
      .def("release_list",
           [](const PyAgent& a, std::uint64_t list) { check(a.get()->releaseList(ListId(list))); })
      .def(
          "make_transfer",
          [](const PyAgent& a, const std::string& op, std::uint64_t localList,
             const py::handle& localIndices, std::uint64_t remoteList,
             const py::handle& remoteIndices, std::optional<py::bytes> notification) {
            std::shared_ptr<Agent> agent = a.get();
            const TransferOp operation = opFrom(op);
            ArrayView<std::uint32_t> local = indexArray(localIndices, "local_indices");
            ArrayView<std::uint32_t> remote = indexArray(remoteIndices, "remote_indices");
            std::optional<std::string> note;
            if (notification) note = std::string(*notification);
            Result<TransferId> id = unlocked([&] {
              return agent->makeTransfer(operation, ListId(localList), local.values,
                                         ListId(remoteList), remote.values, std::move(note));
            });
            return take(std::move(id)).value;
          },
          py::arg("op"), py::arg("local_list"), py::arg("local_indices"), py::arg("remote_list"),
          py::arg("remote_indices"), py::arg("notification") = py::none())
      .def("post",
           [](const PyAgent& a, std::uint64_t transfer) {
             std::shared_ptr<Agent> agent = a.get();
             Status posted = unlocked([&] { return agent->post(TransferId(transfer)); });
             check(posted);
           })
      .def("poll",
           [](const PyAgent& a, std::uint64_t transfer) {
             TransferStatus s = a.get()->poll(TransferId(transfer));
             py::object why = py::none();
             if (!s.status.isOk()) why = py::str(s.status.toString());
             return py::make_tuple(std::string(toString(s.state)), why);
           })
      .def(
          "wait",
          [](const PyAgent& a, std::uint64_t transfer, double timeout) {
            std::shared_ptr<Agent> agent = a.get();
            const Deadline deadline = deadlineIn(toMillis(timeout, "timeout"));
            Status done = unlocked([&] { return agent->wait(TransferId(transfer), deadline); });
            check(done);
          },
          py::arg("transfer"), py::arg("timeout"))
      .def("cancel",
           [](const PyAgent& a, std::uint64_t transfer) {
             std::shared_ptr<Agent> agent = a.get();
             Status cancelled = unlocked([&] { return agent->cancel(TransferId(transfer)); });
             check(cancelled);
           })
      .def("release",
           [](const PyAgent& a, std::uint64_t transfer) {
             std::shared_ptr<Agent> agent = a.get();
             Status released = unlocked([&] { return agent->release(TransferId(transfer)); });
             check(released);
           })
      .def("send_notification",
           [](const PyAgent& a, const std::string& peer, const py::bytes& payload) {
             check(a.get()->sendNotification(peer, std::string(payload)));
           })
      .def(
          "take_notifications",
          [](const PyAgent& a, std::size_t max) {
            py::list out;
            for (Notification& n : a.get()->takeNotifications(max)) {
              out.append(py::make_tuple(n.peer, bytesOf(n.payload)));
            }
            return out;
          },
          py::arg("max") = static_cast<std::size_t>(SIZE_MAX))
      .def(
          "wait_notification",
          [](const PyAgent& a, double timeout) {
            std::shared_ptr<Agent> agent = a.get();
            const Deadline deadline = deadlineIn(toMillis(timeout, "timeout"));
            Result<Notification> note = unlocked([&] { return agent->waitNotification(deadline); });
            Notification n = take(std::move(note));
            return py::make_tuple(n.peer, bytesOf(n.payload));
          },
          py::arg("timeout"))
      .def("progress", [](const PyAgent& a) {
        std::shared_ptr<Agent> agent = a.get();
        return unlocked([&] { return agent->progress(); });
      });
}

}  // namespace kvx::python
