"""Two hosts made of network namespaces, "prefill" and "decode", joined by a veth pair
(198.18.1.1/30 and 198.18.1.2/30, private to the pair; no default route, so each host's only
address off itself is its veth's), for the connector tests that run a prefill and a decode on
different hosts (the Python twin of tests/fault/netns/netns_pair.h).

A test file runs itself inside the decode host (run_inside_decode): its process there drives
the decode, and starts the prefill inside the prefill host with `prefill_prefix`. The
namespaces carry the creator's pid (kvxpy-<pid>-p, kvxpy-<pid>-d); those of a creator that
is gone are removed by the next run. Needs root and iproute2: otherwise the test prints
kvx-test-skipped."""
import os
import shutil
import subprocess
import sys

PREFIX = "kvxpy-"
PREFILL_ADDRESS, DECODE_ADDRESS = "198.18.1.1", "198.18.1.2"
_INSIDE = "KVX_TWO_HOSTS_PREFILL_NS"  # set in the process that runs inside the decode host


def _run(*argv):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    if result.returncode != 0:
        raise RuntimeError(f"'{' '.join(argv)}' failed (exit {result.returncode}): "
                           f"{(result.stderr or result.stdout).strip()}")
    return result.stdout


def _remove(namespace):
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True,
                          timeout=20).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), 9)
        except (OSError, ValueError):
            pass
    subprocess.run(["ip", "netns", "delete", namespace], capture_output=True, timeout=20)


def _remove_stale():
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX):].split("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and not os.path.exists(f"/proc/{owner}"):
            _remove(name)


def _why_not():
    if os.geteuid() != 0:
        return f"network namespaces need root (euid {os.geteuid()})"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    return None


def _create(prefill_ns, decode_ns):
    prefill_if, decode_if = f"kvp{os.getpid()}p", f"kvp{os.getpid()}d"
    _run("ip", "netns", "add", prefill_ns)
    _run("ip", "netns", "add", decode_ns)
    _run("ip", "link", "add", prefill_if, "netns", prefill_ns, "type", "veth", "peer", "name",
         decode_if, "netns", decode_ns)
    for ns, iface, address in ((prefill_ns, prefill_if, PREFILL_ADDRESS),
                               (decode_ns, decode_if, DECODE_ADDRESS)):
        _run("ip", "-n", ns, "addr", "add", f"{address}/30", "dev", iface)
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "link", "set", iface, "up")
    # The veth's carrier comes up asynchronously; UCX lists only running interfaces.
    for ns, iface in ((prefill_ns, prefill_if), (decode_ns, decode_if)):
        for _ in range(300):
            if "LOWER_UP" in _run("ip", "-n", ns, "-o", "link", "show", iface):
                break
            subprocess.run(["sleep", "0.01"])
        else:
            raise RuntimeError(f"{iface} in {ns} did not come up within 3 s")


def inside():
    """Whether this process runs inside the decode host."""
    return bool(os.environ.get(_INSIDE))


def prefill_prefix():
    """The command prefix that runs a process inside the prefill host."""
    return ["ip", "netns", "exec", os.environ[_INSIDE]]


def run_inside_decode(script, timeout=280):
    """Builds the two hosts, runs `script` (this test file) inside the decode host with the
    same interpreter and environment, removes the hosts; exits with the script's status, or
    prints kvx-test-skipped and exits 0 where the hosts cannot be built."""
    why = _why_not()
    if why:
        print(f"kvx-test-skipped: {why}")
        sys.exit(0)
    _remove_stale()
    prefill_ns, decode_ns = f"{PREFIX}{os.getpid()}-p", f"{PREFIX}{os.getpid()}-d"
    try:
        try:
            _create(prefill_ns, decode_ns)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"kvx-test-skipped: two hosts cannot be built here: {error}")
            sys.exit(0)
        env = dict(os.environ, **{_INSIDE: prefill_ns})
        child = subprocess.run(["ip", "netns", "exec", decode_ns, sys.executable, script],
                               env=env, timeout=timeout)
        sys.exit(child.returncode)
    finally:
        _remove(prefill_ns)
        _remove(decode_ns)
