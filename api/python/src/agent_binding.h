#pragma once

// kvx._kvx.Agent: kvx::Agent for Python, at the level of addresses and ids (the kvx package's
// Python layer turns tensors and arrays into those). Blocking calls release the GIL; no
// Python code runs on kvx's threads (notifications and completions are taken, not pushed).
// close() ends the agent; any later call raises kvx.FailedPrecondition.

#include <pybind11/pybind11.h>

namespace kvx::python {

void addAgent(pybind11::module_& module);

}  // namespace kvx::python
