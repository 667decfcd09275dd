#pragma once

// kvx._kvx.this_process() and kvx._kvx.watch_process(pid, host): kvx/process_watch.h for
// Python, so that the connectors (kvx/integrations/peer_process.py) name their process and
// watch a peer's the same way the KV agents do. watch_process raises the kvx.Error of
// watchProcess's Status (kvx.NotFound: not running; kvx.FailedPrecondition: another host or
// pid namespace; kvx.Unimplemented: no pidfds). A ProcessWatch is used by one thread at a time.

#include <pybind11/pybind11.h>

namespace kvx::python {

void addProcessWatch(pybind11::module_& module);

}  // namespace kvx::python
