#pragma once

// kvx._kvx.KvAgent: kvx::KvAgent for Python (a prefill or decode agent with its KV pool,
// block placement and request life cycle), at the level of ids and arrays: block ids and
// segment tables go in and out as numpy arrays, statuses as dicts. Blocking calls release
// the GIL; no Python code runs on kvx's threads. close() ends the agent; any later call
// raises kvx.FailedPrecondition.

#include <pybind11/pybind11.h>

namespace kvx::python {

void addKvAgent(pybind11::module_& module);

}  // namespace kvx::python
