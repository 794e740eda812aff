"""What the public functions and the PyTorch operators (``_torch``, ``_torch_recurrence``)
both run, on arrays of any library: the result types of sums and products, the
extremes' indices, and the recurrence scan with states per sequence. It sits below both
layers and imports neither, so the operators take these from here and the public
functions reach the operators with imports that only point down."""

from __future__ import annotations

from typing import Any

from . import _arrays, _scanrt

# The accumulator NumPy and PyTorch give integer cumulative sums and products.
WIDENED = {"bool": "int64", "uint8": "int64", "int8": "int64", "int16": "int64", "uint16": "int64", "int32": "int64",
           "uint32": "uint64"}

# recipes::EXTREME_INITIAL_INDEX: the index of a result that keeps the initial value; the
# empty state's (an exclusive scan's first result) is one more. Element indices stay
# below both.
INITIAL_INDEX = (1 << 32) - 2

# The state type of the half types' recurrences.
STATE = {"float16": "float32", "bfloat16": "float32"}


def indices_of(indices: Any, row: int, empty: bool) -> Any:
    """uint32 indices as int64 (int32 on JAX without x64): within each row of ``row``
    elements (0: as they are), and with ``empty`` (an exclusive scan or an initial value)
    -1 where no element is the extreme. Each pass over the indices costs as much as the
    scan's: only those asked for run."""
    lib = _arrays.library(indices)
    if lib == "torch":
        import torch

        i = indices.to(torch.int64)
        kept = i % row if row else i
        return torch.where(i >= INITIAL_INDEX, -1, kept) if empty else kept
    if lib == "jax":
        import jax.numpy as jnp

        wide = jnp.int64 if jnp.zeros(0).dtype == jnp.float64 else jnp.int32  # int64 only with x64
        kept = (indices % row if row else indices).astype(wide)
        return jnp.where(indices >= INITIAL_INDEX, -1, kept) if empty else kept
    xp = _arrays.array_module(indices)
    i = indices.astype("int64")
    kept = i % row if row else i
    return xp.where(i >= INITIAL_INDEX, -1, kept) if empty else kept


def recurrence_with_states(a, b, initial, exclusive, reverse, deterministic, offsets, want_final, count):
    """The recurrence scan itself: ``h``, and each sequence's final ``h`` when asked."""
    a, b = _arrays.contiguous(a), _arrays.contiguous(b)
    dtype = _arrays.describe_dtype(a)
    h = _arrays.empty(a, a.shape, dtype)
    # States are (A, B) pairs of a's type (h -> A h + B): the carry in of sequence i is
    # (1, h0[i]), its total (A, final h).
    states_in = _arrays.ones_beside(initial) if _arrays.is_array(initial) else None
    states_out = _arrays.empty(a, (count, 2), STATE.get(dtype, dtype)) if want_final else None
    scalar = None if initial is None or _arrays.is_array(initial) else float(initial)
    describe = _arrays.describe
    arrays = [a, b] + [x for x in (offsets, states_in) if x is not None]
    _arrays.run(arrays, lambda s: _scanrt.recipe_scan(
        recipe="linear_recurrence", inputs=[describe(a), describe(b)], outputs=[describe(h)],
        inclusive=not exclusive, reverse=reverse, initial=scalar, deterministic=deterministic, stream=s,
        offsets=None if offsets is None else describe(offsets),
        carry_in=None if states_in is None else describe(states_in),
        carry_out=None if states_out is None else describe(states_out)))
    return h, None if states_out is None else states_out[:, 1]
