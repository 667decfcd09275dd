# kvx-test-labels: python unit
"""kvx's model of a vLLM worker's KV cache (kvx.integrations.vllm_layout, vllm_geometry,
vllm_heads), in one process and without agents: caches allocated as vLLM allocates them
(vllm_caches.py: every layout vLLM has handed connectors, a shared buffer with strided views,
kernel blocks smaller than the scheduler's), the lists the connector would make paired
between two workers and their entries copied byte for byte as a transfer would, and every
byte of every moved block compared. Tensor parallelism 1 -> 1, 2 -> 4, 4 -> 2 and 2 KV heads
at decode TP 4 (replicated heads); layers in forward order; caches that cannot pair (another
layout, another shape, a malformed description) refused with both sides' values. Prints
kvx-test-skipped without torch."""
import ctypes
import os
import sys
import unittest

import require_torch  # noqa: F401 (skips the test without torch)
import torch  # noqa: E402
import numpy as np

import kvx
from kvx.integrations import vllm_heads as heads
from kvx.integrations.vllm import KvxConnector
from kvx.integrations.vllm_layout import (KvLayout, check_compatible, check_covered, indices,
                                           layer_index, rows)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_caches import LAYOUTS, allocate, layer_names, parts  # noqa: E402

LAYERS, BLOCK_SIZE, KERNEL_BLOCK, HEAD_DIM = 3, 32, 16, 8
PER_BLOCK = BLOCK_SIZE // KERNEL_BLOCK


class Worker:
    """One TP rank's cache: its tensors, their KvLayout, and its buffers as "regions"."""

    def __init__(self, layout, blocks, rank, tp, total_heads):
        self.layout_name, self.rank, self.tp, self.total = layout, rank, tp, total_heads
        self.first, count = heads.held_heads(rank, tp, total_heads)
        self.caches = allocate(layout, LAYERS, blocks * PER_BLOCK, KERNEL_BLOCK, count,
                               HEAD_DIM, torch.float16)
        self.layout = KvLayout(self.caches, BLOCK_SIZE, tp, total_heads)
        self.regions = list(range(len(self.layout.buffers)))

    def views(self, layer, block):
        tensor = self.caches[self.layout.names[layer]]
        return [p[block * PER_BLOCK:(block + 1) * PER_BLOCK] for p in
                parts(tensor, self.layout_name)]

    def expected(self, layer, position, width):
        """What block position `position` of a layer holds for this rank's heads, by part."""
        total_bytes = sum(width)
        values = (np.arange(BLOCK_SIZE * self.total * total_bytes) + 7 * layer +
                  3 * position) % 251
        values = values.astype(np.uint8).reshape(PER_BLOCK, KERNEL_BLOCK, self.total,
                                                 total_bytes)
        mine = values[:, :, self.first:self.first + self.layout.heads]
        edges = np.cumsum([0] + width)
        return [mine[..., edges[i]:edges[i + 1]] for i in range(len(width))]

    def _parts(self, blocks):
        """(view, what it should hold) of every part of every layer of `blocks`."""
        for layer in range(LAYERS):
            for position, block in enumerate(blocks):
                views = self.views(layer, block)
                width = [v.shape[-1] for v in views]
                yield from zip(views, self.expected(layer, position, width))

    def fill(self, blocks):
        for view, values in self._parts(blocks):
            view[...] = torch.from_numpy(np.ascontiguousarray(values))

    def holds(self, blocks):
        return all(np.array_equal(view.numpy(), values) for view, values in self._parts(blocks))

    def address(self, row):
        region, offset, _ = (int(v) for v in row)
        return self.layout.buffers[region][0] + offset


def move(prefill_ranks, decode, prefill_blocks, decode_blocks):
    """What the connector's reads do: for each prefill rank holding some of the decode
    rank's heads, pair the two caches, make both lists and copy entry i to entry i."""
    mine = decode.layout.describe()
    for source in heads.sources(decode.rank, decode.tp, len(prefill_ranks), decode.total):
        prefill = prefill_ranks[source.rank]
        theirs = prefill.layout.describe()
        check_compatible(mine, theirs)
        here, there, length = decode.layout.pair(theirs, source.first_here,
                                                 source.first_there, source.count)
        local = rows(mine, decode.regions, here, length)
        remote = rows(theirs, prefill.regions, there, length)
        layers = range(LAYERS)
        for i, j in zip(indices(decode_blocks, mine["num_blocks"], len(here), layers),
                        indices(prefill_blocks, theirs["num_blocks"], len(there), layers)):
            assert local[i][2] == remote[j][2] == length
            ctypes.memmove(decode.address(local[i]), prefill.address(remote[j]), length)


class VllmLayout(unittest.TestCase):
    def exchange(self, layout, prefill_tp, decode_tp, total_heads):
        prefill = [Worker(layout, 10, r, prefill_tp, total_heads) for r in range(prefill_tp)]
        decode = [Worker(layout, 7, r, decode_tp, total_heads) for r in range(decode_tp)]
        prefill_blocks, decode_blocks = [9, 2, 5], [0, 6, 3]
        for worker in prefill:
            worker.fill(prefill_blocks)
        for worker in decode:
            self.assertFalse(worker.holds(decode_blocks))
            move(prefill, worker, prefill_blocks, decode_blocks)
            self.assertTrue(worker.holds(decode_blocks),
                            f"{layout} TP {prefill_tp} -> {decode_tp} rank {worker.rank}")
            untouched = [b for b in range(7) if b not in decode_blocks]
            self.assertTrue(all(not v.any() for layer in range(LAYERS) for b in untouched
                                for v in worker.views(layer, b)))

    def test_every_layout_moves_every_byte(self):
        for layout in LAYOUTS:
            with self.subTest(layout=layout):
                total = 1 if layout == "mla" else 4
                self.exchange(layout, 1, 1, total)
                self.exchange(layout, 2, 4, total)
                self.exchange(layout, 4, 2, total)

    def test_replicated_heads(self):
        """2 KV heads at decode TP 4 (each head on two ranks), from TP 1 and to TP 1."""
        for layout in ("LBHNC", "LBNHC", "kv-outer"):
            with self.subTest(layout=layout):
                self.exchange(layout, 1, 4, 2)
                self.exchange(layout, 4, 1, 2)
                self.exchange(layout, 4, 2, 2)

    def test_a_shared_buffer_is_one_region(self):
        worker = Worker("BLNHC", 4, 0, 1, 4)
        self.assertEqual(len(worker.layout.buffers), 1)
        self.assertEqual(len({worker.layout.places[i][1] for i in range(LAYERS)}), LAYERS)
        self.assertEqual(len(Worker("kv-outer", 4, 0, 1, 4).layout.buffers), LAYERS)

    def test_whole_blocks_are_one_entry_where_contiguous(self):
        worker = Worker("LBHNC", 4, 0, 1, 4)
        here, _, length = worker.layout.pair(worker.layout.describe(), 0, 0, 4)
        self.assertEqual((len(here), length), (1, BLOCK_SIZE * 4 * 2 * HEAD_DIM * 2))
        nhd = Worker("LBNHC", 4, 0, 1, 4)
        here, _, _ = nhd.layout.pair(nhd.layout.describe(), 1, 1, 1)
        self.assertEqual(len(here), BLOCK_SIZE)  # one head of NHD: one entry a token
        here, _, _ = worker.layout.pair(worker.layout.describe(), 1, 1, 1)
        self.assertEqual(len(here), PER_BLOCK)   # one head of HND: one a kernel block

    def test_layers_in_forward_order(self):
        names = layer_names(12)
        shuffled = sorted(names)  # model.layers.10 before model.layers.2
        self.assertNotEqual(shuffled, names)
        self.assertEqual(sorted(shuffled, key=layer_index), names)
        caches = allocate("LBHNC", 12, 4, KERNEL_BLOCK, 2, HEAD_DIM, torch.float16)
        layout = KvLayout({n: caches[n] for n in shuffled}, BLOCK_SIZE)
        self.assertEqual(layout.names, names)

    def test_another_layout_is_refused_naming_both(self):
        hnd, nhd = Worker("LBHNC", 4, 0, 2, 4), Worker("LBNHC", 4, 0, 1, 4)
        with self.assertRaises(kvx.InvalidArgument) as caught:
            nhd.layout.pair(hnd.layout.describe(), 0, 0, 2)
        self.assertIn("[block, token, head, chan] here", str(caught.exception))
        self.assertIn("[block, head, token, chan] there", str(caught.exception))

    def test_caches_that_differ_are_refused_naming_both(self):
        mine = Worker("LBHNC", 4, 0, 1, 4).layout.describe()
        for change, words in ((("total_heads", 8), "total_heads: 4 here, 8 there"),
                              (("protocol", 1), "protocol 1"),
                              (("block_size", 16), "block_size: 32 here, 16 there"),
                              (("dims", {**mine["dims"], "chan": [4, 2]}), "chan dimension"),
                              (("places", [[5, 0]] * LAYERS), "malformed"),
                              (("num_blocks", -1), "malformed")):
            theirs = dict(mine)
            theirs[change[0]] = change[1]
            with self.assertRaises(kvx.InvalidArgument) as caught:
                check_compatible(mine, theirs)
            self.assertIn(words, str(caught.exception))
        with self.assertRaises(kvx.InvalidArgument):
            check_compatible(mine, None)
        for change, words in ((("stateful", [True]), "malformed"),
                              (("layers", mine["layers"][:1] * LAYERS), "malformed")):
            with self.assertRaises(kvx.InvalidArgument) as caught:
                check_compatible(mine, dict(mine, **{change[0]: change[1]}))
            self.assertIn(words, str(caught.exception))

    def test_pipeline_stages_must_hold_every_layer_between_them(self):
        mine = Worker("LBHNC", 4, 0, 1, 4).layout.describe()
        first, rest = (dict(mine, layers=mine["layers"][:1]),
                       dict(mine, layers=mine["layers"][1:]))
        check_covered(mine, [first, rest], "r")
        check_covered(mine, [first, None], "r")  # a stage not known holds every layer
        with self.assertRaises(kvx.InvalidArgument) as caught:
            check_covered(mine, [rest], "r")
        self.assertIn("request r: 1 of this worker's 3 layers (model.layers.0.self_attn.attn "
                      "...) are in none of the other instance's caches", str(caught.exception))

    def test_pipeline_stages_keep_each_layer_in_its_group(self):
        """A stage of another instance may hold some of the layers, in the same KV cache
        groups (the hybrid allocator) as here, each layer in the group it is in here."""
        mine = dict(Worker("LBHNC", 4, 0, 1, 4).layout.describe(), groups=[[0, 2], [1]],
                    keep=[None, 3], stateful=[False, False])
        stage = dict(mine, layers=mine["layers"][1:], places=mine["places"][1:],
                     groups=[[1], [0]])
        check_compatible(mine, stage)
        with self.assertRaises(kvx.InvalidArgument) as caught:
            check_compatible(mine, dict(stage, groups=[[0], [1]]))
        self.assertIn("layer model.layers.2.self_attn.attn is in KV cache group 0 here, 1 "
                      "there", str(caught.exception))
        for change, words in ((("keep", [None, None]), "keep: [None, 3] here"),
                              (("groups", [[0, 1]]), "malformed")):
            with self.assertRaises(kvx.InvalidArgument) as caught:
                check_compatible(mine, dict(stage, **{change[0]: change[1]}))
            self.assertIn(words, str(caught.exception))

    def test_shapes_it_cannot_read_are_named(self):
        with self.assertRaises(ValueError) as caught:
            KvLayout({"model.layers.0.attn": torch.zeros(3, 5, dtype=torch.float16)}, 16)
        self.assertIn("[3, 5]", str(caught.exception))
        caches = allocate("LBHNC", 2, 4, KERNEL_BLOCK, 2, HEAD_DIM, torch.float16)
        with self.assertRaises(ValueError) as caught:
            KvLayout(caches, 24)
        self.assertIn("block size 24", str(caught.exception))
        mixed = dict(caches)
        mixed["model.layers.1.attn"] = allocate("LBNHC", 1, 4, KERNEL_BLOCK, 2, HEAD_DIM,
                                                torch.float16)["model.layers.0.self_attn.attn"]
        with self.assertRaises(ValueError) as caught:
            KvLayout(mixed, BLOCK_SIZE)
        self.assertIn("one geometry", str(caught.exception))

    def test_heads_every_decode_head_once_every_prefill_rank_told(self):
        for total, decode_tp, prefill_tp in ((4, 4, 2), (4, 2, 4), (2, 4, 1), (2, 1, 4),
                                             (2, 4, 4), (1, 2, 4), (8, 2, 8)):
            told = [0] * prefill_tp
            for rank in range(decode_tp):
                first, count = heads.held_heads(rank, decode_tp, total)
                covered = []
                for c in heads.contacts(rank, decode_tp, prefill_tp, total):
                    told[c.rank] += 1
                    if not c.count:
                        continue
                    p_first, _ = heads.held_heads(c.rank, prefill_tp, total)
                    covered += [first + c.first_here + i for i in range(c.count)]
                    self.assertEqual(first + c.first_here, p_first + c.first_there)
                self.assertEqual(covered, list(range(first, first + count)))
            self.assertTrue(all(told))
            self.assertEqual(told, [heads.contacted_by(r, decode_tp, prefill_tp, total)
                                    for r in range(prefill_tp)])

    def test_the_connector_asks_for_hnd_except_for_mla(self):
        config = type("Config", (), {"model_config": type("Model", (), {"use_mla": False})})
        self.assertEqual(KvxConnector.get_required_kvcache_layout(config), "HND")
        config.model_config.use_mla = True
        self.assertIsNone(KvxConnector.get_required_kvcache_layout(config))


if __name__ == "__main__":
    unittest.main()
