"""Page indices as runs of consecutive pages (sglang.py): what the decode sends the prefill,
and the descriptors a transfer moves (one per run of pages consecutive on both sides)."""
import numpy as np


def runs(indices):
    """[[start, length], ...] of page indices in their order, consecutive ones merged."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size == 0:
        return []
    breaks = np.nonzero(np.diff(indices) != 1)[0] + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [indices.size]])
    return [[int(indices[s]), int(e - s)] for s, e in zip(starts, ends)]


def expand(page_runs):
    """The page indices of `page_runs` (the inverse of runs)."""
    if not page_runs:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(s, s + n, dtype=np.int64) for s, n in page_runs])


def paired_runs(source, destination):
    """(source starts, destination starts, lengths) of the runs where page i of `source`
    goes to page i of `destination` and both are consecutive: one descriptor each."""
    source = np.asarray(source, dtype=np.int64)
    destination = np.asarray(destination, dtype=np.int64)
    if source.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    breaks = np.nonzero((np.diff(source) != 1) | (np.diff(destination) != 1))[0] + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [source.size]])
    return source[starts], destination[starts], ends - starts
