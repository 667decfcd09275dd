# kvx-test-labels: python unit
"""kvx's vLLM connector subclasses the base classes of whichever vLLM is installed: a stand-in
vllm package (written to a temporary directory) whose
vllm/distributed/kv_transfer/kv_connector/v1/base.py has only the four names every v1
release has (KVConnectorBase_V1, KVConnectorHandshakeMetadata, KVConnectorMetadata,
KVConnectorRole), and one that also has SupportsHMA and KVConnectorWorkerMetadata (as
base.py @003df29 does): in each, KvxConnector is a subclass of that vLLM's classes, and of no
stand-in where vLLM has the real one."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

OLDER = """
import enum
class KVConnectorRole(enum.Enum):
    SCHEDULER = 0
    WORKER = 1
class KVConnectorMetadata:
    pass
class KVConnectorHandshakeMetadata:
    pass
class KVConnectorBase_V1:
    def __init__(self, vllm_config, role, kv_cache_config=None):
        self._vllm_config = vllm_config
        self._role = role
"""
NEWER = OLDER + """
class SupportsHMA:
    pass
class KVConnectorWorkerMetadata:
    pass
"""
CHECK = textwrap.dedent("""
    import sys
    from vllm.distributed.kv_transfer.kv_connector.v1 import base
    from kvx.integrations import vllm
    assert issubclass(vllm.KvxConnector, base.KVConnectorBase_V1)
    assert issubclass(vllm.KvxConnectorMetadata, base.KVConnectorMetadata)
    assert issubclass(vllm.KvxHandshake, base.KVConnectorHandshakeMetadata)
    assert vllm.KVConnectorRole is base.KVConnectorRole
    for name in ("SupportsHMA", "KVConnectorWorkerMetadata"):
        theirs = getattr(base, name, None)
        ours = getattr(vllm, name)
        assert (ours is theirs) if theirs else \
            ours.__module__ == "kvx.integrations.vllm_upstream", name
    assert issubclass(vllm.KvxWorkerMetadata, vllm.KVConnectorWorkerMetadata)
    print("SUBCLASSES", hasattr(base, "SupportsHMA"))
""")


def run_against(base_source):
    with tempfile.TemporaryDirectory() as root:
        package = os.path.join(root, "vllm", "distributed", "kv_transfer", "kv_connector", "v1")
        os.makedirs(package)
        path = os.path.join(root, "vllm")
        for folder in ("", "distributed", "distributed/kv_transfer",
                       "distributed/kv_transfer/kv_connector",
                       "distributed/kv_transfer/kv_connector/v1"):
            open(os.path.join(path, folder, "__init__.py"), "w").close()
        with open(os.path.join(package, "base.py"), "w") as base:
            base.write(base_source)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root,
                                                           os.environ.get("PYTHONPATH", "")]))
        return subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True,
                              text=True, timeout=60)


class VllmBase(unittest.TestCase):
    def test_an_older_vllm(self):
        done = run_against(OLDER)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertIn("SUBCLASSES False", done.stdout)

    def test_a_vllm_with_the_hybrid_allocator(self):
        done = run_against(NEWER)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        self.assertIn("SUBCLASSES True", done.stdout)


if __name__ == "__main__":
    unittest.main()
