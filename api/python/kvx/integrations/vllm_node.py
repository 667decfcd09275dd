"""Where a vLLM worker's kvx agent listens, and the address its peers are told, in a fleet of
nodes that share one kv_connector_extra_config.

  - host: KVX_VLLM_HOST (set per node, as vLLM's NIXL connector takes
    VLLM_NIXL_SIDE_CHANNEL_HOST), else the extra config's "host", else this node's routable
    address where KVX_AUTH_TOKEN is set and loopback where not (node_address.default_host).
    The agent binds to it where it is an address of this node, else to every interface (a
    host name, or an address translated on the way) and tells peers the host as given.
  - port: KVX_VLLM_PORT, else the extra config's "port": a base from which each worker on a
    node takes its own (base + data-parallel rank x TP size + TP rank); 0 or unset, a free
    port each.
  - "listen_address" in the extra config binds exactly there instead (its port as given);
    peers are told the host above when it names a wildcard.
  - the data path's network devices: the extra config's "net_devices" (UCX_NET_DEVICES
    syntax), else the interface holding the host, so that the data path publishes the address
    that the control channel does; an explicit UCX_NET_DEVICES in the environment wins.
  - the shared secret: KVX_AUTH_TOKEN, read by the agent itself (kvx.Agent)."""
import dataclasses
import os

from kvx.integrations import node_address

HOST_VARIABLE = "KVX_VLLM_HOST"
PORT_VARIABLE = "KVX_VLLM_PORT"


@dataclasses.dataclass(frozen=True)
class WorkerAddress:
    bind: str                 # "host:port" the agent listens on
    host: str                 # the host its peers are told; None: the bound one
    net_devices: str = None   # for the data path; None: the agent's default

    def advertised(self, listen_address):
        """What peers are told, given the address the agent ended up listening on."""
        return node_address.advertised(listen_address, self.host)

    def agent_options(self):
        options = {"listen_address": self.bind}
        if self.net_devices:
            options["net_devices"] = self.net_devices
        return options


def _port_base(extra):
    text = os.environ.get(PORT_VARIABLE) or extra.get("port") or 0
    try:
        port = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"kvx's port base ({PORT_VARIABLE} or \"port\") is {text!r}, not a "
                         f"number") from None
    if not 0 <= port < 65536:
        raise ValueError(f"kvx's port base ({PORT_VARIABLE} or \"port\") {port} is not a TCP "
                         f"port")
    return port


def worker_address(extra, rank_offset):
    """The WorkerAddress of the worker `rank_offset` places on this node (data-parallel rank
    x TP size + TP rank), from the environment and the extra config."""
    given = os.environ.get(HOST_VARIABLE) or extra.get("host")
    if extra.get("listen_address"):
        bound_host, _ = node_address.split(extra["listen_address"])
        found = node_address.listen_options(given or bound_host)
        return WorkerAddress(extra["listen_address"], given,
                             extra.get("net_devices") or found.get("net_devices"))
    host = given or node_address.default_host()
    base = _port_base(extra)
    port = base + rank_offset if base else 0
    if port >= 65536:
        raise ValueError(f"kvx's port base {base} + worker {rank_offset} is past 65535")
    found = node_address.listen_options(host, port)
    return WorkerAddress(found["listen_address"], host,
                         extra.get("net_devices") or found.get("net_devices"))
