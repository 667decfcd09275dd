# kvx-test-labels: python multiprocess
"""kvx selected in SGLang without editing SGLang (kvx.integrations.sglang_install,
sglang_launch), against a stand-in for SGLang that follows upstream's closed backend table,
its flag choices, its manager constructor and its spawned scheduler process
(sglang_double/README.md names the upstream files and commit): the documented command line
reaches kvx's bootstrap server and, in the spawned scheduler, kvx's manager, which registers
its rank; the same flag without kvx is refused as SGLang refuses it; install() adds a real
member to TransferBackend, patches modules that imported get_kv_class before it, leaves the
other backends to SGLang, and may run twice; kvx's classes implement every abstract member of
SGLang's base classes."""
import json
import os
import socket
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DOUBLE = os.path.join(HERE, "sglang_double")
sys.path.insert(0, DOUBLE)

from kvx.integrations import node_address  # noqa: E402
from sglang.srt.disaggregation import prefill  # noqa: E402,F401 (imported before install)
from sglang.srt.disaggregation import utils  # noqa: E402
from sglang.srt.disaggregation.base import conn  # noqa: E402


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(*args, token=None):
    env = {k: v for k, v in os.environ.items() if k != "KVX_AUTH_TOKEN"}
    if token:
        env["KVX_AUTH_TOKEN"] = token
    env["PYTHONPATH"] = os.pathsep.join([DOUBLE, env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=60)


class SglangInstall(unittest.TestCase):
    def test_the_documented_command_line_reaches_kvx(self):
        port = free_port()
        done = run("-m", "kvx.integrations.sglang_launch", "--disaggregation-mode", "prefill",
                   "--disaggregation-transfer-backend", "kvx",
                   "--disaggregation-bootstrap-port", str(port))
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        self.assertEqual(lines["BOOTSTRAP"], "kvx.integrations.sglang_bootstrap."
                                             "KvxKVBootstrapServer")
        self.assertEqual(lines["MANAGER"], "kvx.integrations.sglang.KvxKVManager")
        rank = json.loads(lines["RANK"])
        self.assertEqual(rank["rank_ip"], "127.0.0.1")  # no token: kvx stays on loopback
        self.assertNotEqual(rank["rank_port"], port)  # the rank's own kvx port
        # With a token, the rank registers the node's routable address, as SGLang's backends
        # register theirs.
        done = run("-m", "kvx.integrations.sglang_launch", "--disaggregation-mode", "prefill",
                   "--disaggregation-transfer-backend", "kvx",
                   "--disaggregation-bootstrap-port", str(free_port()),
                   token="a-fleet-secret-of-32-characters")
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        rank = json.loads(dict(line.split(" ", 1) for line in done.stdout.splitlines()
                               if " " in line)["RANK"])
        self.assertEqual(rank["rank_ip"], node_address.routable_host())

    def test_without_kvx_the_flag_is_refused(self):
        done = run("-m", "sglang.launch_server", "--disaggregation-mode", "prefill",
                   "--disaggregation-transfer-backend", "kvx")
        self.assertEqual(done.returncode, 2)
        self.assertIn("invalid choice: 'kvx'", done.stderr)

    def test_install(self):
        from kvx.integrations import sglang as backend
        from kvx.integrations.sglang_install import install
        with self.assertRaises(ValueError):
            utils.TransferBackend("kvx")
        install()
        install()
        member = utils.TransferBackend("kvx")
        self.assertIs(member, utils.TransferBackend.KVX)
        self.assertIn(member, list(utils.TransferBackend))
        self.assertEqual(len([m for m in utils.TransferBackend if m.value == "kvx"]), 1)
        for module in (utils, prefill):
            self.assertIs(module.get_kv_class(member, utils.KVClassType.MANAGER),
                          backend.KvxKVManager)
        self.assertIs(utils.get_kv_class(member, utils.KVClassType.KVARGS), conn.KVArgs)
        with self.assertRaises(NotImplementedError):  # another backend: SGLang's own answer
            utils.get_kv_class(utils.TransferBackend.NIXL, utils.KVClassType.MANAGER)
        from sglang.srt import server_args
        self.assertEqual(server_args.DISAGG_TRANSFER_BACKEND_CHOICES.count("kvx"), 1)

    def test_every_abstract_member_is_implemented(self):
        from kvx.integrations import sglang as backend
        for mine, theirs in ((backend.KvxKVManager, conn.BaseKVManager),
                             (backend.KvxKVSender, conn.BaseKVSender),
                             (backend.KvxKVReceiver, conn.BaseKVReceiver),
                             (backend.KvxKVBootstrapServer, conn.BaseKVBootstrapServer)):
            self.assertTrue(issubclass(mine, theirs), mine)
            self.assertEqual(set(getattr(mine, "__abstractmethods__", ())), set(), mine)


if __name__ == "__main__":
    unittest.main()
