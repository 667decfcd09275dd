"""A vLLM worker's paged KV cache as kvx sees it: its layers in forward order, the buffers
behind them (each registered once, however many layers' views it holds), each layer's
geometry (vllm_geometry.py), and descriptor lists over its blocks.

A list made here has E entries per (layer, scheduler block), at index
(layer * num_blocks + block) * E + e; E and each entry's extent come from pairing this
worker's geometry with a peer's for a range of heads (vllm_geometry.pair), so that entry i of
a list here and entry i of the matching list over the peer cover the same bytes of the same
tokens and heads. A block all of whose heads move is one entry where its bytes are
contiguous (blocks first, or K and V packed); a head range is one entry per head (HND) or per
token (NHD). A Mamba layer's block is one entry, its whole state (vllm_states.py)."""
import re

import numpy as np

import kvx
from kvx.integrations import vllm_geometry as geometry
from kvx.integrations import state_slices as slices
from kvx.integrations import vllm_states as states

# Bumped when what two workers exchange (describe(), vllm_messages.py) changes meaning.
PROTOCOL = 4


def layer_index(name):
    """The layer's position in the forward pass, from the numbers in its name as vLLM names
    layers ("model.layers.11.self_attn.attn" -> (11,)); names without one sort last."""
    numbers = tuple(int(n) for n in re.findall(r"\.(\d+)(?=\.|$)", name))
    return (0, numbers, name) if numbers else (1, (), name)


def buffer_name(index):
    """The region name of a worker's KV buffer `index` (KvLayout.buffers), on both sides."""
    return f"kv.buffer{index}"


def _storage(tensor):
    storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else \
        tensor.storage()
    return storage.data_ptr(), storage.nbytes()


def _device(tensor):
    device = tensor.device
    if device.type == "cpu":
        return -1
    if device.type == "cuda":
        return device.index if device.index is not None else 0
    raise ValueError(f"kvx moves CPU and CUDA KV caches, not {device.type} ones")


class KvLayout:
    """One worker's KV cache. Holds the tensors (and so their buffers) while it lives.

    `groups`: vLLM's KV cache groups (vllm_groups.py) where it has several (the hybrid
    allocator: full attention and sliding window layers, each group with block ids of its
    own); None for one group of every layer. A request's blocks are then one list per group,
    moved in that group's layers."""

    def __init__(self, kv_caches, block_size, tp_size=1, total_heads=None, groups=None):
        if not kv_caches:
            raise ValueError("no KV cache tensors to register")
        if groups is not None:  # layers in no group share another layer's cache
            kv_caches = {name: kv_caches[name] for name in kv_caches
                         if any(name in group.layers for group in groups)}
        stateful = {name: group.mamba_type for group in groups or () if group.state
                    for name in group.layers}
        self.names = sorted(kv_caches, key=layer_index)
        self._tensors = [kv_caches[name] for name in self.names]
        attention = [name for name in self.names if name not in stateful]
        if not attention:
            raise ValueError("no attention layer among the KV caches: kvx moves Mamba state "
                             "beside attention layers")
        first = kv_caches[attention[0]]
        self.dims = geometry.geometry_of(first)
        self.element = first.element_size()
        self.dtype = str(first.dtype)
        self.buffers = []   # (address, nbytes, device) of each buffer behind the layers
        self.places = []    # (buffer index, byte offset) of each layer, in forward order
        first_state = None  # the first Mamba layer's StatePlace: the others must match it
        shardings = set()   # each Mamba layer's states' shards (vllm_states.sharding)
        dim_first = states.conv_dim_first() if stateful else False
        for name, tensor in zip(self.names, self._tensors):
            if name in stateful:
                place = states.state_place(name, tensor, _storage, _device)
                first_state = first_state or place
                shape = (place.stride, place.span, place.blocks)
                if shape != (first_state.stride, first_state.span, first_state.blocks):
                    raise ValueError(
                        f"Mamba layer {name} has {place.blocks} states of {place.span} bytes "
                        f"every {place.stride}, the first Mamba layer {first_state.blocks} of "
                        f"{first_state.span} every {first_state.stride}")
                shardings.add(states.sharding(tensor, stateful[name], dim_first))
                buffer, offset = place.buffer, place.offset
            else:
                dims = geometry.geometry_of(tensor)
                if dims != self.dims or str(tensor.dtype) != self.dtype:
                    raise ValueError(
                        f"layer {name} is {list(tensor.shape)} {tensor.dtype} with strides "
                        f"{list(tensor.stride())}, layer {attention[0]} {list(first.shape)} "
                        f"{first.dtype} with strides {list(first.stride())}: kvx moves caches "
                        "whose attention layers share one geometry")
                address, nbytes = _storage(tensor)
                buffer, offset = (address, nbytes, _device(tensor)), tensor.data_ptr() - address
            if buffer not in self.buffers:
                self.buffers.append(buffer)
            self.places.append((self.buffers.index(buffer), offset))
        kernel_block = self.dims["token"][0]
        if block_size % kernel_block or self.dims["block"][0] % (block_size // kernel_block):
            raise ValueError(f"the scheduler's block size {block_size} is not a whole number "
                             f"of the cache's {kernel_block}-token kernel blocks "
                             f"({self.dims['block'][0]} of them)")
        self.block_size = block_size
        self.blocks_per_block = block_size // kernel_block
        self.num_blocks = self.dims["block"][0] // self.blocks_per_block
        # [block stride, bytes moved a block] of the Mamba layers' states; None without them.
        self.state = None if first_state is None else [first_state.stride, first_state.span]
        # How each rank's states shard (one for every Mamba layer), for moves between TP
        # sizes; None where not known.
        self.state_sharding = shardings.pop() if len(shardings) == 1 else None
        if first_state is not None and first_state.blocks != self.num_blocks:
            raise ValueError(f"the Mamba layers have {first_state.blocks} blocks, the attention "
                             f"layers {self.num_blocks}: vLLM gives every group one pool")
        self.heads = self.dims["head"][0]
        self.tp_size = tp_size
        mla = self.dims["head"][1] == 0  # [blocks, tokens, channels]: every rank has it all
        self.total_heads = total_heads or (1 if mla else self.heads * tp_size)
        # Positions (in self.names) of each group's layers, each group's blocks to keep
        # (the last ones; None: all), and whether it is a Mamba group.
        self.groups = [list(range(len(self.names)))] if groups is None else [
            [self.names.index(name) for name in self.names if name in group.layers]
            for group in groups]
        self.keep = [None] if groups is None else [group.keep for group in groups]
        self.stateful = [False] if groups is None else [group.state for group in groups]
        # The order a push writes layers in: the attention layers as vLLM saves them
        # (save_kv_layer, in forward order), then the Mamba layers, whose states are final
        # once the forward is (wait_for_save): vLLM's Mamba layers call no connector hook.
        self.save_order = [p for p, name in enumerate(self.names) if name not in stateful] + \
            [p for p, name in enumerate(self.names) if name in stateful]
        self.saved_by_layer = len(attention)  # save_order's layers that save_kv_layer names
        self.save_rank = {self.names[p]: rank for rank, p in enumerate(self.save_order)}
        self._description = self._describe()

    def any_tensor(self):
        """A tensor of the cache (its device and stream are the forward's)."""
        return states.first_tensor(self._tensors[0])

    def describe(self):
        """This worker's cache, as its handshake (and a push destination) describes it (do
        not modify)."""
        return self._description

    def _describe(self):
        return {"protocol": PROTOCOL, "layers": self.names,
                "places": [list(place) for place in self.places],
                "buffers": len(self.buffers), "dims": self.dims, "element": self.element,
                "dtype": self.dtype, "block_size": self.block_size,
                "blocks_per_block": self.blocks_per_block, "num_blocks": self.num_blocks,
                "heads": self.heads, "tp_size": self.tp_size, "total_heads": self.total_heads,
                "groups": self.groups, "keep": self.keep, "stateful": self.stateful,
                "state": self.state, "layout": geometry.layout_name(self.dims),
                "state_sharding": None if self.state_sharding is None else
                [s.wire() for s in self.state_sharding]}

    def buffer_names(self):
        return [buffer_name(i) for i in range(len(self.buffers))]

    def pair(self, theirs, first_here, first_there, count):
        """Lists' shape for `count` heads from `first_here` here and `first_there` in the
        peer's cache `theirs` (a describe()): (entries here, entries there, run length)."""
        here, there, length = geometry.pair(self.dims, theirs["dims"], self.element,
                                            self.blocks_per_block, count)
        return (here + np.uint64(first_here * self.dims["head"][1]),
                there + np.uint64(first_there * theirs["dims"]["head"][1]), length)


def _state_layers(side):
    """Positions of the layers of `side`'s Mamba groups."""
    return {p for group, state in zip(side["groups"], side.get("stateful") or ()) if state
            for p in group}


def rows(side, regions, entries, length, pieces=((0, None),)):
    """uint64 rows (region, offset, length) of every (layer, scheduler block, entry) of the
    cache `side` describes, its buffers registered as `regions`: an attention layer's entries
    at `entries` (offsets from each block's start) of `length` bytes, a Mamba layer's at
    `pieces` ((offset from the state's start, bytes): state_pieces; by default its whole
    state). A list has max(len(entries), len(pieces)) entries a block; the ones past a kind's
    own count repeat its first and are never indexed (pair_indices' `used`)."""
    pieces = [(int(at), int(side["state"][1] if n is None else n)) for at, n in pieces] \
        if side.get("state") else [(0, 1)]
    width = max(len(entries), len(pieces), 1)
    if len(entries) == 0:  # no attention bytes move: a placeholder never indexed
        entries, length = np.zeros(1, dtype=np.uint64), 1
    entries = np.resize(np.asarray(entries, dtype=np.uint64), width)
    block_stride = np.uint64(side["dims"]["block"][1] * side["blocks_per_block"])
    count = np.arange(side["num_blocks"], dtype=np.uint64)
    per_layer = ((count * block_stride)[:, None] + entries[None, :]).reshape(-1)
    state_layers = _state_layers(side)
    if state_layers:
        stride = np.uint64(side["state"][0])
        at = np.resize(np.array([a for a, _ in pieces], dtype=np.uint64), width)
        spans = np.resize(np.array([n for _, n in pieces], dtype=np.uint64), width)
        per_state = ((count * stride)[:, None] + at[None, :]).reshape(-1)
        state_lengths = np.tile(spans, len(count))
    table = np.zeros((len(side["places"]) * len(per_layer), 3), dtype=np.uint64)
    for i, (buffer, offset) in enumerate(side["places"]):
        part = table[i * len(per_layer):(i + 1) * len(per_layer)]
        part[:, 0] = regions[buffer]
        state = i in state_layers
        part[:, 1] = (per_state if state else per_layer) + np.uint64(offset)
        part[:, 2] = state_lengths if state else length
    return table


def state_pieces(mine, my_rank, theirs, their_rank, decode_is_mine):
    """[(offset here, offset there, bytes)] of a block's state that moves between this
    worker (rank `my_rank` of the cache `mine` describes) and rank `their_rank` of `theirs`,
    offsets from each state's start: the whole state between equal TP sizes (to the same
    rank), else the pieces state_slices pairs. Empty where they share none, or without
    Mamba layers."""
    if not mine.get("state"):
        return []
    if mine["tp_size"] == theirs["tp_size"]:
        return [(0, 0, mine["state"][1])] if my_rank == their_rank else []
    here, there = (tuple(slices.Sharding.from_wire(w) for w in side["state_sharding"])
                   for side in (mine, theirs))
    if decode_is_mine:
        moves = slices.slices(there, their_rank, theirs["tp_size"], here, my_rank,
                              mine["tp_size"])
        return [(d, p, n) for p, d, n in moves]
    return list(slices.slices(here, my_rank, mine["tp_size"], there, their_rank,
                              theirs["tp_size"]))


def indices(blocks, num_blocks, per_block, layers, used=None):
    """uint32 list indices of scheduler blocks `blocks` in the layers numbered in `layers`
    (layer-major), for a list with `per_block` entries a block, the first `used` of each
    (all by default)."""
    blocks = np.asarray(blocks, dtype=np.uint32)
    layers = np.asarray(layers, dtype=np.uint32)
    first = ((layers[:, None] * num_blocks + blocks[None, :]) * per_block).reshape(-1)
    entries = np.arange(per_block if used is None else used, dtype=np.uint32)
    return (first[:, None] + entries[None, :]).reshape(-1).astype(np.uint32)


def moved_bytes(entries, state_entries, length, pieces):
    """Bytes a list pair moves through `entries` indices, `state_entries` of them Mamba
    state pieces, each state the `pieces` (state_pieces) of it."""
    if not state_entries:
        return entries * length
    per_state = sum(n for _, _, n in pieces)
    return (entries - state_entries) * length + state_entries // len(pieces) * per_state


def layer_map(mine, theirs):
    """Per KV cache group of `mine` (a describe()), {position here: position there} of its
    layers that `theirs` holds too, in forward order. With pipeline parallelism one side
    holds a stage's layers only. Made once per peer cache, so that a write of a few layers
    costs only those (pair_indices)."""
    there = {name: i for i, name in enumerate(theirs["layers"])}
    return [{p: there[mine["layers"][p]] for p in group if mine["layers"][p] in there}
            for group in mine["groups"]]


def pair_indices(blocks_here, blocks_there, maps, blocks, their_blocks, per_block,
                 layers=None, stateful=None, used=(None, 1)):
    """(indices here, indices there, (layer, block) pairs, indices of Mamba states): each
    group's blocks (a list per group on each side) in the layers of that group both caches
    hold (`maps`, a layer_map()), only those among `layers` (positions here) where given, so
    that entry i here and entry i there cover the same layer and block. `blocks`,
    `their_blocks`: each cache's blocks a layer. `stateful`: whether each group is a Mamba
    group. `used`: the entries a block of an attention group (None: all) and of a Mamba group
    (rows: state_pieces) moves; a kind with 0 moves nothing."""
    here, there, count, state_entries = [], [], 0, 0
    for group, (pairs, mine_blocks, theirs_blocks) in enumerate(
            zip(maps, blocks_here, blocks_there)):
        chosen = list(pairs) if layers is None else [p for p in layers if p in pairs]
        state = bool(stateful and stateful[group])
        entries = used[1] if state else used[0]
        if not chosen or not len(mine_blocks) or entries == 0:
            continue
        here.append(indices(mine_blocks, blocks, per_block, chosen, entries))
        there.append(indices(theirs_blocks, their_blocks, per_block,
                             [pairs[p] for p in chosen], entries))
        count += len(chosen) * len(mine_blocks)
        state_entries += len(here[-1]) if state else 0
    if not here:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint32), 0, 0
    return np.concatenate(here), np.concatenate(there), count, state_entries


def shared_units(maps, block_groups, kinds=None):
    """(layer, block) pairs a transfer of `block_groups` over `maps` (layer_map) covers, in
    the groups `kinds` keeps (a bool per group; all by default)."""
    return sum(len(pairs) * len(blocks) for group, (pairs, blocks) in
               enumerate(zip(maps, block_groups)) if kinds is None or kinds[group])


def check_compatible(mine, theirs):
    """Raises kvx.InvalidArgument, naming both sides' values, unless two workers' caches
    (describe()) can move blocks between them: the same protocol, layers, block sizes,
    element type, tokens and channels, and the same model heads."""
    if not isinstance(theirs, dict) or not theirs:
        raise kvx.InvalidArgument("the other instance's KV cache layout is not known")
    if theirs.get("protocol") != mine["protocol"]:
        raise kvx.InvalidArgument(
            f"the other instance's kvx vLLM connector speaks protocol {theirs.get('protocol')}, "
            f"this one {mine['protocol']}: run the same kvx on both")
    _check_description(theirs)
    _check_layers(mine, theirs)
    for key in ("block_size", "blocks_per_block", "dtype", "element", "total_heads"):
        if mine[key] != theirs.get(key):
            raise kvx.InvalidArgument(f"KV caches differ in {key}: {mine[key]} here, "
                                      f"{theirs.get(key)} there")
    if mine["state"] is not None or theirs.get("state") is not None:
        _check_states(mine, theirs)
    for dim in geometry.DIMENSIONS:
        if dim in ("block", "head"):
            continue
        here, there = mine["dims"].get(dim, [None])[0], theirs["dims"].get(dim, [None])[0]
        if here != there:
            raise kvx.InvalidArgument(f"KV caches differ in their {dim} dimension: {here} "
                                      f"here ({mine['layout']}), {there} there "
                                      f"({theirs.get('layout')})")


def _check_states(mine, theirs):
    """Mamba states: between one TP size the same bytes a state; between TP sizes, shards
    that pair (state_slices.check), whichever side is the prefill."""
    here, there = (side["state"][1] if side["state"] else None for side in (mine, theirs))
    if mine["tp_size"] == theirs["tp_size"]:
        if here != there:
            raise kvx.InvalidArgument(f"Mamba states differ: {here} bytes a state here, "
                                      f"{there} there")
        return
    if not mine.get("state_sharding") or not theirs.get("state_sharding"):
        raise kvx.InvalidArgument(
            f"Mamba state moves between TP sizes ({mine['tp_size']} here, "
            f"{theirs['tp_size']} there) only where both know how each rank's states shard "
            "(mamba2, gdn_attention, mamba1, linear_attention layers)")
    here, there = (tuple(slices.Sharding.from_wire(w) for w in side["state_sharding"])
                   for side in (mine, theirs))
    slices.check(there, theirs["tp_size"], here, mine["tp_size"])
    slices.check(here, mine["tp_size"], there, theirs["tp_size"])


def _check_layers(mine, theirs):
    """The same layers and KV cache groups, or (pipeline parallelism: a stage's layers on
    either side) layers that may overlap in part or not at all, in KV cache groups of the
    same kinds, each layer both hold in the same group: that the stages together hold every
    layer is checked for a request (check_covered)."""
    layers = theirs["layers"]
    if not all(isinstance(n, str) for n in layers) or len(set(layers)) != len(layers):
        raise kvx.InvalidArgument(f"the other instance's KV cache layers are malformed: "
                                  f"{str(layers)[:200]}")
    for key in ("keep", "stateful"):
        if mine[key] != theirs.get(key):
            raise kvx.InvalidArgument(f"KV caches differ in {key}: {mine[key]} here, "
                                      f"{theirs.get(key)} there")
    groups = theirs["groups"]  # well formed (_check_description), as many as `keep` lists
    if layers == mine["layers"]:
        if mine["groups"] != groups:
            raise kvx.InvalidArgument(f"KV caches differ in groups: {mine['groups']} here, "
                                      f"{groups} there")
        return
    there = {layers[p]: g for g, positions in enumerate(groups) for p in positions}
    for g, positions in enumerate(mine["groups"]):
        for p in positions:
            name = mine["layers"][p]
            if name in there and there[name] != g:
                raise kvx.InvalidArgument(f"layer {name} is in KV cache group {g} here, "
                                          f"{there[name]} there: not the same model")


def check_covered(mine, theirs, request_id):
    """Raises kvx.InvalidArgument unless the peer caches `theirs` (the prefill's stages'
    describe()s; None for one not known, which holds every layer) hold every layer of
    `mine` between them."""
    if any(side is None for side in theirs):
        return
    held = {name for side in theirs for name in side["layers"]}
    missing = [name for name in mine["layers"] if name not in held]
    if missing:
        raise kvx.InvalidArgument(
            f"request {request_id}: {len(missing)} of this worker's {len(mine['layers'])} "
            f"layers ({missing[0]} ...) are in none of the other instance's caches "
            f"({sorted(held)[:1]} ...): not the same model, or not its pipeline stages")


def _whole(value, low=0):
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _check_description(theirs):
    """Raises kvx.InvalidArgument unless a peer's describe() has the types and ranges rows()
    and pair() read (its offsets are checked against its regions when a list is made)."""
    dims, places = theirs.get("dims"), theirs.get("places")
    well_formed = (
        isinstance(theirs.get("layers"), list) and
        isinstance(dims, dict) and set(dims) <= set(geometry.DIMENSIONS) and
        {"block", "token", "head", "chan"} <= set(dims) and
        all(isinstance(v, list) and len(v) == 2 and _whole(v[0], 1) and _whole(v[1])
            for v in dims.values()) and
        isinstance(places, list) and len(places) == len(theirs["layers"]) and
        isinstance(theirs.get("groups"), list) and
        all(isinstance(g, list) and all(_whole(p) and p < len(places) for p in g)
            for g in theirs["groups"]) and
        _whole(theirs.get("buffers"), 1) and
        all(isinstance(p, list) and len(p) == 2 and _whole(p[0]) and
            p[0] < theirs["buffers"] and _whole(p[1]) for p in places) and
        _whole(theirs.get("num_blocks"), 1) and _whole(theirs.get("heads"), 1) and
        _whole(theirs.get("tp_size"), 1) and
        isinstance(theirs.get("stateful"), list) and
        len(theirs["stateful"]) == len(theirs["groups"]) and
        all(isinstance(v, bool) for v in theirs["stateful"]) and
        (theirs.get("state") is None if not any(theirs["stateful"]) else
         isinstance(theirs.get("state"), list) and len(theirs["state"]) == 2 and
         _whole(theirs["state"][0], 1) and _whole(theirs["state"][1], 1) and
         theirs["state"][1] <= theirs["state"][0]) and
        dims["block"][0] == theirs["num_blocks"] * theirs["blocks_per_block"] and
        dims["head"][0] == theirs["heads"])
    if not well_formed:
        raise kvx.InvalidArgument(f"the other instance's KV cache description is malformed: "
                                  f"{str(theirs)[:200]}")
