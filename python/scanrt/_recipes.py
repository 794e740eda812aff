"""Scans on the crate's recipes with the options of :func:`scanrt.cumsum`: running extremes
with the index of each (``cummax``, ``cummin``) and ``logcumsumexp``."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Tuple

from . import _arrays, _core, _scanrt

# Arrays of this many elements or more are scanned along their axis, which counts indices
# along it, not as rows, whose indices count over the whole array (the library refuses
# sequences longer than the indices number: OperatorDesc::max_length).
ROWS_INDEX_LIMIT = _core.INITIAL_INDEX
_FLOATS = _arrays.FLOATS
_torch_autograd = _arrays.torch_autograd


class Extremes(NamedTuple):
    """A running maximum or minimum and the index of each, as ``torch.cummax`` returns
    them (``result.values``, ``result.indices``, or unpacked as a pair)."""

    values: Any
    indices: Any


def _finish(results: Tuple[Any, ...], out: Any) -> Any:
    """The results, or copied into ``out`` (one array, or a tuple as long as the results)."""
    if out is None:
        return results if len(results) > 1 else results[0]
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(results):
        raise TypeError(f"out takes {len(results)} arrays, not {len(outs)}")
    for o, r in zip(outs, results):
        _arrays.copy_into(o, r)
    return outs if len(outs) > 1 else outs[0]


def _torch_fast(recipe: str, x: Any, exclusive: bool, reverse: bool, initial: Optional[float],
                deterministic: bool) -> Any:
    """The common PyTorch call, with nothing between it and the binding that a small scan
    would feel: a contiguous CUDA tensor along its last axis into a new one of its type,
    on the raw current stream."""
    import torch

    y = torch.empty_like(x)
    (dx, dy), stream = _arrays.torch_alike(x, y)
    _scanrt.recipe_scan(recipe=recipe, inputs=[dx], outputs=[dy], row=x.shape[-1], inclusive=not exclusive,
                        reverse=reverse, initial=initial, deterministic=deterministic, stream=stream)
    return y


def _recipe(recipe: str, x: Any, outs: list, row: int, exclusive: bool, reverse: bool, initial: Any,
            deterministic: bool, data: Any, segments: Any, offsets: Any, keys: Any, axis: Optional[int] = None) -> None:
    """Runs ``recipe`` reading ``x`` into ``outs`` on ``x``'s stream: rows of ``row``
    elements (0: one row, or the segments given), or along ``axis`` where ``x`` lies."""
    if axis is None:
        x = _arrays.contiguous(x)
    # Segment data is read as runs of elements, as cumsum's (a copy only where needed).
    segments, offsets, keys = (None if a is None else _arrays.contiguous(a) for a in (segments, offsets, keys))
    d = _arrays.describe
    opt = lambda a: None if a is None else d(a)  # noqa: E731
    arrays = [x] + ([data] if data is not None else [])
    _arrays.run(arrays, lambda s: _scanrt.recipe_scan(
        recipe=recipe, inputs=[d(x)], outputs=[d(o) for o in outs], row=row, inclusive=not exclusive,
        reverse=reverse, initial=initial, deterministic=deterministic, stream=s, offsets=opt(offsets), axis=axis,
        segments=opt(segments), keys=opt(keys)))


def _extreme(x: Any, recipe: str, axis: int, exclusive: bool, reverse: bool, initial: Any, deterministic: bool,
             dtype: Optional[str], out: Any, segments: Any, offsets: Any, keys: Any) -> Tuple[Any, Any]:
    if dtype is not None:
        x = _arrays.astype(x, dtype)
    if _arrays.library(x) == "jax":
        from . import _jax

        if _jax.takes(out, initial):
            data, kind = _jax.segments_of(segments, offsets, keys)
            return _jax.extreme(x, recipe, axis, exclusive, reverse, initial, deterministic, data, kind)
    data = _arrays.segment_data(x, segments, offsets, keys)
    if _torch_autograd(x):
        # Here, not at the top: _torch imports torch, which scanrt does not require.
        from . import _torch

        return _finish(_torch.extreme(x, recipe, axis, exclusive, reverse, initial, deterministic, segments, offsets,
                                      keys), out)
    t = _arrays.describe_dtype(x)
    if data is not None:
        values, indices = _arrays.empty(x, x.shape, t), _arrays.empty(x, x.shape, "uint32")
        _recipe(recipe, x, [values, indices], 0, exclusive, reverse, initial, deterministic, data, segments, offsets,
                keys)
        return _finish((values, _core.indices_of(indices, 0, exclusive or initial is not None)), out)
    axis = _arrays.normal_axis(x, axis)
    if _arrays.size(x) >= ROWS_INDEX_LIMIT:
        values, indices = _arrays.empty(x, x.shape, t), _arrays.empty(x, x.shape, "uint32")
        _recipe(recipe, x, [values, indices], 0, exclusive, reverse, initial, deterministic, None, None, None, None,
                axis=axis)
        return _finish((values, _core.indices_of(indices, 0, exclusive or initial is not None)), out)
    moved, axis = _arrays.last_axis_contiguous(x, axis)
    values, indices = _arrays.empty(moved, moved.shape, t), _arrays.empty(moved, moved.shape, "uint32")
    row = moved.shape[-1]
    _recipe(recipe, moved, [values, indices], row, exclusive, reverse, initial, deterministic, None, None, None, None)
    # One row: the indices are the positions already.
    row = 0 if row == _arrays.size(moved) else row
    found = _core.indices_of(indices, row, exclusive or initial is not None)
    return _finish((_arrays.move_back(values, axis), _arrays.move_back(found, axis)), out)


def cummax(x: Any, axis: int = -1, *, exclusive: bool = False, reverse: bool = False, initial: Any = None,
           deterministic: bool = False, dtype: Optional[str] = None, out: Any = None, segments: Any = None,
           offsets: Any = None, keys: Any = None) -> Extremes:
    """Running maximum along ``axis`` and the index (int64) of each maximum, as
    ``torch.cummax`` (an :class:`Extremes` named tuple): ties keep the earlier index; NaN is the maximum from where it
    appears. Every type (integers, bool, float16, bfloat16, float32, float64).

    ``exclusive``: element i is the maximum of the elements before it (the first is
    ``initial``, or the type's lowest value, with index -1). ``reverse``: from the last
    element. ``initial``: a value every result starts from; it wins ties (it comes
    first), and results that keep it have index -1. ``deterministic`` is accepted for
    symmetry with the sums (a maximum is exact in any order). ``dtype``: the type to take
    the maximum in (``x`` is converted first). ``out``: a ``(values, indices)`` pair to
    write. ``segments``, ``offsets``, ``keys`` (1-D ``x``): segments as in
    :func:`scanrt.cumsum`, each its own running maximum; indices are then positions in
    ``x``."""
    return Extremes(*_extreme(x, "cummax", axis, exclusive, reverse, initial, deterministic, dtype, out, segments,
                              offsets, keys))


def cummin(x: Any, axis: int = -1, *, exclusive: bool = False, reverse: bool = False, initial: Any = None,
           deterministic: bool = False, dtype: Optional[str] = None, out: Any = None, segments: Any = None,
           offsets: Any = None, keys: Any = None) -> Extremes:
    """Running minimum along ``axis`` and the index of each, as :func:`cummax` (an
    exclusive scan's first result is the type's highest value)."""
    return Extremes(*_extreme(x, "cummin", axis, exclusive, reverse, initial, deterministic, dtype, out, segments,
                              offsets, keys))


def logcumsumexp(x: Any, axis: int = -1, *, exclusive: bool = False, reverse: bool = False, initial: Any = None,
                 deterministic: bool = False, dtype: Optional[str] = None, out: Any = None, segments: Any = None,
                 offsets: Any = None, keys: Any = None) -> Any:
    """``log(cumsum(exp(x)))`` along ``axis``, computed stably: float32 and float64, and
    float16 and bfloat16 summed in float32 (each result rounded once).

    ``exclusive``: element i sums the elements before it (the first is ``initial``, or
    -inf). ``reverse``: from the last element. ``initial``: one more term before every
    result (``log(exp(initial) + ...)``). ``deterministic``: bitwise identical results
    on every run. ``dtype``: the type to compute in (``x`` is converted first; integer
    arrays need it). ``out``: the array to write. ``segments``, ``offsets``, ``keys``
    (1-D ``x``): segments as in :func:`scanrt.cumsum`. Differentiable on PyTorch
    tensors."""
    if (dtype is None and out is None and segments is None and offsets is None and keys is None
            and _arrays.is_torch(x) and x.is_cuda and x.is_contiguous() and not _torch_autograd(x)
            and _arrays.TORCH_DTYPE_NAMES.get(x.dtype) in _FLOATS and x.dim() and axis in (-1, x.dim() - 1)):
        return _torch_fast("logcumsumexp", x, exclusive, reverse, None if initial is None else float(initial),
                           deterministic)
    if dtype is not None:
        x = _arrays.astype(x, dtype)
    t = _arrays.describe_dtype(x)
    if t not in _FLOATS:
        raise TypeError(f"logcumsumexp takes float16, bfloat16, float32 or float64 arrays, not {t} "
                        "(dtype= converts)")
    if _arrays.library(x) == "jax":
        from . import _jax

        if _jax.takes(out, initial):
            data, kind = _jax.segments_of(segments, offsets, keys)
            return _jax.logcumsumexp(x, axis, exclusive, reverse, initial, deterministic, data, kind)
    data = _arrays.segment_data(x, segments, offsets, keys)
    init = None if initial is None else float(initial)
    if _torch_autograd(x):
        from . import _torch

        return _finish((_torch.logcumsumexp(x, axis, exclusive, reverse, init, deterministic, segments, offsets,
                                            keys),), out)
    if data is not None:
        result = _arrays.empty(x, x.shape, t)
        _recipe("logcumsumexp", x, [result], 0, exclusive, reverse, init, deterministic, data, segments, offsets, keys)
        return _finish((result,), out)
    moved, axis = _arrays.last_axis_contiguous(x, axis)
    result = _arrays.empty(moved, moved.shape, t)
    _recipe("logcumsumexp", moved, [result], moved.shape[-1], exclusive, reverse, init, deterministic, None, None,
            None, None)
    return _finish((_arrays.move_back(result, axis),), out)
