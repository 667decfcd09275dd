"""Where a node's kvx agents listen and which address they tell their peers, for the server
connectors: a per-node host setting where there is one, else (default_host) the address of
the interface that routes off this node (the default route's, else the first interface that
is up and not loopback) once a shared secret is set (KVX_AUTH_TOKEN: kvx admits peers from
other hosts only with one), else loopback. An agent bound to a wildcard address ("0.0.0.0")
tells its peers the routable address with the port it was given.

Reads the kernel's tables (/proc/net/route, SIOCGIFADDR/SIOCGIFFLAGS); needs no root."""
import fcntl
import ipaddress
import os
import socket
import struct

_SIOCGIFFLAGS = 0x8913
_SIOCGIFADDR = 0x8915
_IFF_UP = 0x1
_IFF_LOOPBACK = 0x8
WILDCARDS = ("", "0.0.0.0", "::", "*")
LOOPBACK = "127.0.0.1"
TOKEN_VARIABLE = "KVX_AUTH_TOKEN"


def _ioctl(name, request):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        return fcntl.ioctl(probe.fileno(), request, struct.pack("256s", name.encode()[:15]))


def interface_address(name):
    """The IPv4 address of interface `name`, or None (no such interface, no address)."""
    try:
        return socket.inet_ntoa(_ioctl(name, _SIOCGIFADDR)[20:24])
    except OSError:
        return None


def _flags(name):
    try:
        return struct.unpack("H", _ioctl(name, _SIOCGIFFLAGS)[16:18])[0]
    except OSError:
        return 0


def _default_route_interface():
    try:
        with open("/proc/net/route") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError:
        return None
    for row in rows:
        if len(row) > 1 and row[1] == "00000000":
            return row[0]
    return None


def routable_host():
    """This node's address for peers on other nodes: the default route's interface's, else
    the first interface's that is up and not loopback, else 127.0.0.1."""
    candidates = [_default_route_interface()] + [name for _, name in socket.if_nameindex()]
    for name in candidates:
        if name is None:
            continue
        flags = _flags(name)
        if flags & _IFF_UP and not flags & _IFF_LOOPBACK:
            address = interface_address(name)
            if address is not None:
                return address
    return LOOPBACK


def default_host():
    """routable_host() where KVX_AUTH_TOKEN is set, else 127.0.0.1: without a shared secret a
    kvx agent listens on loopback only (kvx.Agent refuses other addresses), so an engine
    without one stays on its node."""
    return routable_host() if os.environ.get(TOKEN_VARIABLE) else LOOPBACK


def interface_of(host):
    """The interface holding IPv4 address `host` ("lo" for a loopback address), or None."""
    try:
        if ipaddress.ip_address(host).is_loopback:
            return "lo"
    except ValueError:
        return None
    for _, name in socket.if_nameindex():
        if interface_address(name) == host:
            return name
    return None


def listen_options(host, port=0):
    """kvx.Agent options for an agent that peers reach at `host`: it listens there where
    `host` is an address of this node, else (a name, or an address translated on the way) on
    every interface; its data path uses the interface that holds `host`, so that it publishes
    the address the control channel does (none named for loopback)."""
    interface = interface_of(host)
    options = {"listen_address": f"{host if interface is not None else '0.0.0.0'}:{port}"}
    if interface not in (None, "lo"):
        options["net_devices"] = interface
    return options


def split(address):
    """("host", port) of "host:port"."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"{address!r} is not host:port")
    return host.strip("[]"), int(port)


def advertised(bound_address, host=None):
    """The address peers reach an agent bound to `bound_address` at: `host` (a per-node
    setting) where given, else the bound host unless it is a wildcard, else routable_host(),
    with the bound port."""
    bound_host, port = split(bound_address)
    if not host:
        host = routable_host() if bound_host in WILDCARDS else bound_host
    return f"{host}:{port}"
