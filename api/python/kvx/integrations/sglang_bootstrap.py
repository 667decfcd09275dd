"""SGLang's bootstrap for kvx's backend: one HTTP server per prefill node, on SGLang's
disaggregation_bootstrap_port, that every prefill rank of the node registers its kvx address
with and that a decode asks for the prefill's parallel layout and for the rank to connect to.

The routes and fields are SGLang's own (CommonKVBootstrapServer,
python/sglang/srt/disaggregation/common/conn.py @0094505):
  PUT  /route   a rank registers: attn_tp_size, attn_tp_rank, attn_cp_size, attn_cp_rank,
                attn_dp_size, attn_dp_rank, pp_size, pp_rank, system_dp_size, system_dp_rank,
                rank_ip, rank_port, page_size, kv_cache_dtype, ...
  GET  /route?prefill_dp_rank=&prefill_cp_rank=&target_tp_rank=&target_pp_rank=
                the rank's {rank_ip, rank_port}; all four -1: the prefill's layout
                {attn_tp_size, attn_cp_size, dp_size, pp_size, page_size, kv_cache_dtype,
                follow_bootstrap_room}; 503 until every rank registered, 404 for a rank
                that is not there, 400 for a malformed query or registration
  GET  /health  200
Here rank_ip:rank_port is the rank's kvx control channel."""
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kvx
from kvx.integrations.sglang_upstream import BaseKVBootstrapServer

_MAX_BODY = 64 * 1024
_MAX_RANKS = 4096
_SIZES = ("attn_tp_size", "attn_cp_size", "attn_dp_size", "pp_size")
_RANKS = ("attn_tp_rank", "attn_cp_rank", "attn_dp_rank", "pp_rank")


def _whole(value, low, high):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


class _Table:
    """The registered ranks of one prefill node's engine. Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._info = None    # the layout, from the first registration
        self._ranks = {}     # (dp, cp, tp, pp) -> {"rank_ip", "rank_port"}

    def register(self, entry):
        """None, or why the registration is refused."""
        if not isinstance(entry, dict):
            return "a registration is a JSON object"
        sizes = [entry.get(k, 1) for k in _SIZES]
        ranks = [entry.get(k, 0) for k in _RANKS]
        if not all(_whole(s, 1, _MAX_RANKS + 1) for s in sizes) or \
                not all(_whole(r, 0, s) for r, s in zip(ranks, sizes)):
            return f"sizes {sizes} and ranks {ranks} are not ranks of a layout"
        if not isinstance(entry.get("rank_ip"), str) or \
                not _whole(entry.get("rank_port"), 1, 65536):
            return "rank_ip must be a host and rank_port a port"
        info = {"attn_tp_size": sizes[0], "attn_cp_size": sizes[1], "dp_size": sizes[2],
                "pp_size": sizes[3], "page_size": entry.get("page_size"),
                "kv_cache_dtype": entry.get("kv_cache_dtype"), "follow_bootstrap_room": True}
        with self._lock:
            if self._info is not None and self._info != info:
                return f"this node's ranks registered {self._info}, this one {info}"
            self._info = info
            self._ranks[tuple(ranks[i] for i in (2, 1, 0, 3))] = {
                "rank_ip": entry["rank_ip"], "rank_port": entry["rank_port"]}
        return None

    def lookup(self, dp, cp, tp, pp):
        """(HTTP status, JSON answer)."""
        with self._lock:
            info = self._info
            if info is None or len(self._ranks) < (info["attn_tp_size"] * info["attn_cp_size"] *
                                                   info["dp_size"] * info["pp_size"]):
                return 503, {"error": "not every prefill rank has registered yet"}
            if (dp, cp, tp, pp) == (-1, -1, -1, -1):
                return 200, dict(info)
            rank = self._ranks.get((dp, cp, tp, pp))
        if rank is None:
            return 404, {"error": f"no prefill rank dp {dp} cp {cp} tp {tp} pp {pp}"}
        return 200, dict(rank)


class _Handler(BaseHTTPRequestHandler):
    table = None  # set per server

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        return

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/health":
            return self._answer(200, {"status": "ok"})
        if url.path != "/route":
            return self._answer(404, {"error": f"no route {url.path}"})
        query = urllib.parse.parse_qs(url.query)
        try:
            key = [int(query[name][0]) for name in ("prefill_dp_rank", "prefill_cp_rank",
                                                     "target_tp_rank", "target_pp_rank")]
        except (KeyError, ValueError):
            return self._answer(400, {"error": "prefill_dp_rank, prefill_cp_rank, "
                                               "target_tp_rank and target_pp_rank are numbers"})
        return self._answer(*self.table.lookup(*key))

    def do_PUT(self):  # noqa: N802
        if urllib.parse.urlsplit(self.path).path != "/route":
            return self._answer(404, {"error": f"no route {self.path}"})
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY:
            return self._answer(400, {"error": f"a registration is at most {_MAX_BODY} bytes"})
        try:
            entry = json.loads(self.rfile.read(length))
        except ValueError:
            return self._answer(400, {"error": "a registration is JSON"})
        why = self.table.register(entry)
        return self._answer(400, {"error": why}) if why else self._answer(200, {"ok": True})


class KvxKVBootstrapServer(BaseKVBootstrapServer):
    """The node's bootstrap server, serving on a thread of its own until close() (SGLang
    starts one per prefill node and keeps it for the process's life). Port 0 picks one."""

    def __init__(self, host, port):
        handler = type("Handler", (_Handler,), {"table": _Table()})
        self._server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), handler)
        self._server.daemon_threads = True
        self.host = host
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="kvx-sglang-bootstrap")
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


def _request(method, address, path, body=None, timeout=5.0):
    """(status, JSON answer) of one request to the bootstrap server at "host:port"; raises
    kvx.PeerFailed when it cannot be reached."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{address}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.loads(error.read() or b"{}")
        except ValueError:
            return error.code, {}
    except (OSError, ValueError) as error:
        raise kvx.PeerFailed(f"the SGLang bootstrap server at {address}: {error}") from None


def register(address, entry, timeout=5.0):
    status, answer = _request("PUT", address, "/route", entry, timeout)
    if status != 200:
        raise kvx.InvalidArgument(f"the SGLang bootstrap server at {address} refused this "
                                  f"rank ({status}): {answer.get('error')}")


def parallel_info(address, timeout=5.0):
    """The prefill's layout, or None while some of its ranks have not registered."""
    status, answer = _request("GET", address, "/route?prefill_dp_rank=-1&prefill_cp_rank=-1"
                              "&target_tp_rank=-1&target_pp_rank=-1", timeout=timeout)
    if status == 503:
        return None
    if status != 200:
        raise kvx.PeerFailed(f"the SGLang bootstrap server at {address} answered {status}: "
                             f"{answer.get('error')}")
    return answer


def rank_address(address, dp_rank, tp_rank, cp_rank=0, pp_rank=0, timeout=5.0):
    """"ip:port" of the kvx control channel of a prefill rank."""
    status, answer = _request("GET", address, f"/route?prefill_dp_rank={dp_rank}&prefill_cp_rank="
                              f"{cp_rank}&target_tp_rank={tp_rank}&target_pp_rank={pp_rank}",
                              timeout=timeout)
    if status != 200 or not isinstance(answer.get("rank_ip"), str):
        raise kvx.NotFound(f"the SGLang bootstrap server at {address} has no prefill rank dp "
                           f"{dp_rank} tp {tp_rank} ({status}: {answer.get('error')})")
    return f"{answer['rank_ip']}:{answer['rank_port']}"
