"""What kvx's vLLM connector reports to vLLM's KV connector metrics (get_kv_connector_stats):
the bytes, transfers, failures, descriptors and transfer time of a worker's reads (pull) or
writes (push) since the last report, as a KVConnectorStats that vLLM aggregates over the TP
ranks (vllm/distributed/kv_transfer/kv_connector/v1/metrics.py: `data`, `aggregate`,
`reduce`, `is_empty`, `reset`); each rank's own figures stay in `data["ranks"]`."""
import dataclasses
import time

try:
    from vllm.distributed.kv_transfer.kv_connector.v1.metrics import KVConnectorStats
except ImportError:  # vLLM absent or older: a stand-in with the members vLLM calls
    @dataclasses.dataclass
    class KVConnectorStats:
        data: dict = dataclasses.field(default_factory=dict)

_COUNTS = ("bytes", "transfers", "failures", "descriptors", "seconds")


def _empty():
    return {name: 0 for name in _COUNTS}


@dataclasses.dataclass
class KvxConnectorStats(KVConnectorStats):
    data: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in _COUNTS:
            self.data.setdefault(name, 0)
        self.data.setdefault("ranks", {})

    def reset(self):
        self.data = {**_empty(), "ranks": {}}

    def is_empty(self):
        return self.data["transfers"] == 0 and self.data["failures"] == 0

    def aggregate(self, other):
        theirs = other.data if isinstance(other, KVConnectorStats) else dict(other or {})
        for name in _COUNTS:
            self.data[name] += theirs.get(name, 0)
        for rank, figures in (theirs.get("ranks") or {}).items():
            mine = self.data["ranks"].setdefault(str(rank), _empty())
            for name in _COUNTS:
                mine[name] += figures.get(name, 0)
        return self

    def reduce(self):
        """The figures vLLM logs: totals, and the mean time of a transfer."""
        data = self.data
        ended = data["transfers"] + data["failures"]
        return {"kvx_bytes": data["bytes"], "kvx_transfers": data["transfers"],
                "kvx_failures": data["failures"], "kvx_descriptors": data["descriptors"],
                "kvx_mean_transfer_seconds": data["seconds"] / ended if ended else 0.0}

    def to_dict(self):
        return dict(self.data)


class TransferTally:
    """A worker's transfers from post to end, counted for the next report. Thread: the
    worker's."""

    def __init__(self, tp_rank):
        self._rank = str(tp_rank)
        self._posted = {}  # transfer id -> (posted at, bytes, descriptors)
        self._figures = _empty()

    def posted(self, transfer, descriptors, nbytes):
        self._posted[transfer] = (time.monotonic(), nbytes, descriptors)

    def ended(self, transfer, succeeded):
        """A transfer done or failed (one cancelled before it ended counts as failed)."""
        entry = self._posted.pop(transfer, None)
        if entry is None:
            return
        started, nbytes, descriptors = entry
        figures = self._figures
        figures["transfers" if succeeded else "failures"] += 1
        figures["seconds"] += time.monotonic() - started
        if succeeded:
            figures["bytes"] += nbytes
            figures["descriptors"] += descriptors

    def failed(self):
        """A request whose transfer could not even start (its peer unreachable, its caches
        refused)."""
        self._figures["failures"] += 1

    def take(self):
        """The figures since the last call, as KvxConnectorStats; None when nothing ended."""
        figures, self._figures = self._figures, _empty()
        if not figures["transfers"] and not figures["failures"]:
            return None
        return KvxConnectorStats({**figures, "ranks": {self._rank: dict(figures)}})
