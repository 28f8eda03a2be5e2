"""The reference's recorded outputs (``autograder/data/``, written by ``make reference``), read once."""
import functools
import json
import os

import numpy as np

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")


@functools.lru_cache(maxsize=None)
def arrays(part, data_dir=DATA_DIR):
    """{name: array} of ``data/<part>.npz`` ("part_a" or "part_b")."""
    with np.load(os.path.join(data_dir, f"{part}.npz"), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


@functools.lru_cache(maxsize=None)
def meta(part, data_dir=DATA_DIR):
    """The JSON values of ``data/<part>.json`` (shapes, counts, thresholds, configurations)."""
    with open(os.path.join(data_dir, f"{part}.json"), encoding="utf-8") as f:
        return json.load(f)
