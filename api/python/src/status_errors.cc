#include "api/python/src/status_errors.h"

#include <array>
#include <string>

namespace kvx::python {
namespace {

namespace py = pybind11;

constexpr std::size_t kCodes = static_cast<std::size_t>(StatusCode::kInternal) + 1;

// The class of each code, held for the life of the interpreter (module state would be
// tidier; the module is never unloaded).
std::array<PyObject*, kCodes> classes{};

// The Python name of each code's exception.
const char* className(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return nullptr;
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kTimedOut: return "TimedOut";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kPeerFailed: return "PeerFailed";
    case StatusCode::kProtocolError: return "ProtocolError";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kTransportError: return "TransportError";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "InternalError";
  }
  return nullptr;
}

}  // namespace

void addErrors(py::module_& module) {
  const std::string prefix = "kvx.";
  PyObject* base = PyErr_NewExceptionWithDoc(
      (prefix + "Error").c_str(),
      "A kvx call failed; the subclass names the StatusCode, the message says why.",
      PyExc_RuntimeError, nullptr);
  module.add_object("Error", py::reinterpret_borrow<py::object>(base));
  for (std::size_t i = 1; i < kCodes; ++i) {
    const char* name = className(static_cast<StatusCode>(i));
    // TimedOut is a TimeoutError too, InvalidArgument a ValueError: Python code that catches
    // the built-in kinds catches kvx's.
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(base));
    if (static_cast<StatusCode>(i) == StatusCode::kTimedOut) {
      bases = py::make_tuple(py::reinterpret_borrow<py::object>(base),
                             py::reinterpret_borrow<py::object>(PyExc_TimeoutError));
    } else if (static_cast<StatusCode>(i) == StatusCode::kInvalidArgument) {
      bases = py::make_tuple(py::reinterpret_borrow<py::object>(base),
                             py::reinterpret_borrow<py::object>(PyExc_ValueError));
    }
    PyObject* cls = PyErr_NewException((prefix + name).c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    py::setattr(cls, "code", py::str(std::string(toString(static_cast<StatusCode>(i)))));
    classes[i] = cls;
    module.add_object(name, py::reinterpret_borrow<py::object>(cls));
  }
}

void raise(const Status& status) {
  const auto index = static_cast<std::size_t>(status.code());
  PyObject* cls =
      index < kCodes && classes[index] != nullptr ? classes[index] : classes[kCodes - 1];
  PyErr_SetString(cls, status.toString().c_str());
  throw py::error_already_set();
}

}  // namespace kvx::python
