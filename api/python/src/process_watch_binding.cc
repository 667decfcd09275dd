#include "api/python/src/process_watch_binding.h"

#include <memory>
#include <string>

#include "api/python/src/status_errors.h"
#include "kvx/process_watch.h"

namespace py = pybind11;

namespace kvx::python {

void addProcessWatch(py::module_& module) {
  py::class_<ProcessWatch, std::shared_ptr<ProcessWatch>>(
      module, "ProcessWatch", "Whether a process has ended; from watch_process()")
      .def("ended", &ProcessWatch::ended, "True once the process has exited (and after)");
  module.def(
      "this_process",
      [] {
        const ProcessIdentity self = thisProcess();
        py::dict out;
        out["pid"] = self.pid;
        out["host"] = self.host;  // "" where /proc does not say
        return out;
      },
      "This process: {'pid': ..., 'host': '<boot id>/pid:<pid namespace inode>'}");
  module.def(
      "watch_process",
      [](std::uint64_t pid, const std::string& host) {
        return take(watchProcess(ProcessIdentity{pid, host}));
      },
      py::arg("pid"), py::arg("host"),
      "A watch on the process this_process() gave in another process of this host");
}

}  // namespace kvx::python
