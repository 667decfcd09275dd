"""The kvx notifications vLLM workers of the two instances exchange (vllm.py), each a text
"kvx-vllm:<kind>:<fields>":
  read:<expected readers>:<prefill request>   decode -> prefill (pull): one reader of these
                                              blocks is done (sent with its read's data, or
                                              alone when nothing had to be read)
  dest:<JSON>                                 decode -> prefill (push): where to write a
                                              request's blocks (see Destination)
  pushed:<units>:<decode request>             prefill -> decode (push): sent with a write's
                                              data, `units` (layer, block) pairs now in place
  push-failed:[<decode request>, <why>]       prefill -> decode: no more writes will come
  cancel:[<prefill request>, <decode request>] decode -> prefill: stop writing (push)
  cancelled:<decode request>                  prefill -> decode: no more writes will come
  alive:<prefill request>                     decode -> prefill: the request still waits for
                                              its blocks at the decode (the lease restarts)
(request ids may hold any character: the last field takes the rest, or the fields are JSON)"""
import dataclasses
import json

PREFIX = "kvx-vllm:"


@dataclasses.dataclass
class Destination:
    """A decode worker's blocks for a pushed request, a list per KV cache group
    (vllm_groups.py): block i of group g's receives the prefill's block `skip[g] + i` of that
    group (the first `skip[g]` were a prefix hit)."""
    request: str        # the prefill's request id
    reply_to: str       # the decode's request id
    blocks: list
    skip: list
    tp_rank: int
    tp_size: int
    layout: dict
    pp_size: int = 1    # the decode's pipeline stages (each stage's workers send one)


def read(expected, prefill_request):
    return f"{PREFIX}read:{expected}:{prefill_request}"


def dest(destination):
    return PREFIX + "dest:" + json.dumps(dataclasses.asdict(destination))


def pushed(units, decode_request):
    return f"{PREFIX}pushed:{units}:{decode_request}"


def push_failed(decode_request, why):
    return PREFIX + "push-failed:" + json.dumps([decode_request, str(why)])


def cancel(prefill_request, decode_request):
    return PREFIX + "cancel:" + json.dumps([prefill_request, decode_request])


def cancelled(decode_request):
    return f"{PREFIX}cancelled:{decode_request}"


def alive(prefill_request):
    return f"{PREFIX}alive:{prefill_request}"


def parse(payload):
    """(kind, fields) of a notification, None if it is not one of these (or malformed):
    read -> (expected, prefill request); dest -> Destination; pushed -> (units, decode
    request); push-failed -> (decode request, why); cancel -> (prefill request, decode
    request); cancelled and alive -> the request id."""
    text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
    if not text.startswith(PREFIX):
        return None
    kind, _, rest = text[len(PREFIX):].partition(":")
    try:
        if kind == "read":
            expected, _, request = rest.partition(":")
            return kind, (int(expected), request)
        if kind == "dest":
            return kind, Destination(**json.loads(rest))
        if kind == "pushed":
            units, _, request = rest.partition(":")
            return kind, (int(units), request)
        if kind in ("push-failed", "cancel"):
            first, second = json.loads(rest)
            return kind, (str(first), str(second))
        if kind in ("cancelled", "alive"):
            return kind, rest
    except (ValueError, TypeError):
        return None
    return None
