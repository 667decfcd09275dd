// kvx._kvx: the compiled part of the kvx Python package (api/python/kvx/ is the rest).
#include <pybind11/pybind11.h>

#include "api/python/src/agent_binding.h"
#include "api/python/src/dlpack_memory.h"
#include "api/python/src/kv_agent_binding.h"
#include "api/python/src/process_watch_binding.h"
#include "api/python/src/status_errors.h"

PYBIND11_MODULE(_kvx, module) {
  module.doc() = "kvx's compiled core; use the kvx package";
  kvx::python::addErrors(module);
  kvx::python::addAgent(module);
  kvx::python::addKvAgent(module);
  kvx::python::addDlpack(module);
  kvx::python::addProcessWatch(module);
}
