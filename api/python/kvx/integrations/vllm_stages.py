"""Pipeline parallelism for kvx's vLLM connector (vllm.py): an instance of PP size above 1
has a worker per (PP rank, TP rank), each holding its stage's layers only. Each decode
worker reads, or is written, each of its layers from the prefill stage that holds it, the
layers matched by name (vllm_layout.layer_map), so the two instances' stages may split the
layers differently (vLLM's NIXL connector requires a decode of PP 1); a prefill worker
waits for the decode workers of every stage (vllm_pull.PullReader.note, the `pp_size` of a
push Destination). The scheduler gets the workers' handshakes by (PP rank, TP rank)
(KVConnectorBase_V1.set_xfer_handshake_metadata_pp_aware, vllm/v1/engine/core.py and base.py
@003df29), and a finished request's kv_transfer_params name each stage's workers and layout
("remote_stages"; "remote_addresses" and "remote_layout" stay those of stage 0)."""
import dataclasses

import kvx
from kvx.integrations import vllm_heads as heads


@dataclasses.dataclass(frozen=True)
class Stage:
    addresses: tuple  # its workers' kvx addresses, by TP rank
    layout: dict      # a worker's KvLayout.describe()


def pipeline(extra):
    """(rank, size) of this worker's pipeline stage: vLLM's parallel state when it is set up,
    else the extra config's pp_rank and pp_size (0 and 1 by default)."""
    try:
        from vllm.distributed.parallel_state import get_pp_group
        group = get_pp_group()
        return group.rank_in_group, group.world_size
    except Exception:  # vLLM absent, or its parallel state not initialised (scheduler side)
        return int(extra.get("pp_rank", 0)), int(extra.get("pp_size", 1))


def by_stage(metadata):
    """The handshakes by stage, each a list by TP rank, from {(pp rank, tp rank): handshake};
    ValueError where one is missing."""
    keys = sorted(metadata)
    stages = sorted({pp for pp, _ in keys})
    ranks = sorted({tp for _, tp in keys})
    if stages != list(range(len(stages))) or ranks != list(range(len(ranks))) or \
            len(keys) != len(stages) * len(ranks):
        raise ValueError(f"handshakes of (PP, TP) ranks {keys}: some are missing")
    return [[metadata[(pp, tp)] for tp in ranks] for pp in stages]


def params(workers):
    """kv_transfer_params naming every stage's workers (`workers`: by stage, by TP rank)."""
    first = workers[0]
    found = {"remote_addresses": [w.address for w in first], "remote_layout": first[0].layout}
    if len(workers) > 1:
        found["remote_stages"] = [{"addresses": [w.address for w in stage],
                                   "layout": stage[0].layout} for stage in workers]
    return found


def stages(kv_transfer_params):
    """The prefill's Stages from a request's kv_transfer_params."""
    given = kv_transfer_params.get("remote_stages")
    if isinstance(given, list) and given:
        return [Stage(tuple(s.get("addresses") or ()), s.get("layout")) for s in given
                if isinstance(s, dict)]
    return [Stage(tuple(kv_transfer_params.get("remote_addresses") or ()),
                  kv_transfer_params.get("remote_layout"))]


def addresses(stage_list):
    """Every worker address of every stage."""
    return [address for stage in stage_list for address in stage.addresses]


def prefill_contacts(spec, tp_rank, tp_size, layout):
    """The prefill workers decode worker `tp_rank` of `tp_size` (its cache `layout`, a
    KvLayout) reads from or tells for request `spec` (vllm_heads.contacts), in every pipeline
    stage, as (address, Source, that stage's cache layout)."""
    remote_tp = len(spec.remote_addresses)
    found = []
    for stage in spec.remote_stages or [Stage(tuple(spec.remote_addresses),
                                              spec.remote_layout)]:
        if len(stage.addresses) != remote_tp:
            raise kvx.InvalidArgument(f"request {spec.request_id}: a prefill stage of "
                                      f"{len(stage.addresses)} workers, another of "
                                      f"{remote_tp}")
        found += [(stage.addresses[c.rank], c, stage.layout) for c in
                  heads.contacts(tp_rank, tp_size, remote_tp, layout.total_heads,
                                 layout.state is not None)]
    return found

