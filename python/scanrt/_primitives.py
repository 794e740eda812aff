"""The primitives built on scan, on arrays of any library: radix sort (sort, argsort)
and nonzero of 1-D arrays; selections (select, compress), partition and run-length heads
(unique_consecutive) of arrays of any shape, read as their elements in C order."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

from . import _arrays
from . import _scanrt

_run = _arrays.run
_one_d = _arrays.one_d


def _elements(x: Any, mask: Any = None) -> Tuple[Any, Any]:
    """``x`` and its ``mask`` (of ``x``'s shape) as 1-D arrays of their elements in C
    order, as NumPy's ``x[mask]`` and ``torch.masked_select`` read arrays of several
    dimensions (views where the library can; PyTorch differentiates through them)."""
    if len(x.shape) == 1:
        return x, mask
    if mask is not None and tuple(mask.shape) != tuple(x.shape):
        raise ValueError(f"the mask has the data's shape {tuple(x.shape)}, not {tuple(mask.shape)}")
    size = math.prod(x.shape)
    return x.reshape((size,)), None if mask is None else mask.reshape((size,))


def _autograd(*arrays: Any) -> bool:
    return any(a is not None and _arrays.torch_autograd(a) for a in arrays)


def _gathered(keys: Any, values: Any, descending: bool, bits: Optional[Tuple[int, int]]) -> Tuple[Any, Any, Any]:
    """Sorted keys and values as gathers of the inputs at the sort's indices, which
    PyTorch differentiates (gradients go back to where each element came from)."""
    indices = argsort(keys.detach(), descending=descending, bits=bits)
    return keys.gather(0, indices), None if values is None else values.gather(0, indices), indices


def sort(keys: Any, *, descending: bool = False, values: Any = None, bits: Optional[Tuple[int, int]] = None,
         return_indices: bool = False) -> Any:
    """Sorts the 1-D ``keys`` (stable: equal keys keep their order; floats in the total
    order -inf < ... < -0 < +0 < ... < +inf < NaN). Returns the sorted keys; with
    ``values`` (any type, as many) ``(sorted keys, values in that order)``; with
    ``return_indices``, ``(sorted keys, their int64 positions in keys)`` (as
    ``torch.sort(stable=True)``'s ``(values, indices)``). ``bits``: ``(begin, end)``, the
    bits of the keys' ordered form the sort looks at (as CUB's bit range; keys equal there
    keep their order). Sorted keys and values pass gradients back on PyTorch tensors."""
    _one_d(keys)
    if values is not None:
        _one_d(values)
        if values.shape[0] != keys.shape[0]:
            raise ValueError(f"values are one per key: {values.shape[0]} for {keys.shape[0]}")
        if return_indices:
            raise ValueError("return_indices sorts the keys alone: take values[indices] for their order")
    if _arrays.library(keys) == "jax":
        from . import _jax

        if _jax.takes(None):
            return _jax.sort(keys, values, descending, bits, return_indices)
    if _autograd(keys, values):
        sorted_keys, sorted_values, indices = _gathered(keys, values, descending, bits)
    else:
        out = _arrays.empty(keys, keys.shape, _arrays.describe_dtype(keys))
        span, sorted_values, indices = _bit_range(bits), None, None
        if return_indices:
            indices = _arrays.empty(keys, keys.shape, "int64")
            moved_in, moved_out = None, _unsigned(indices)
        elif values is not None:
            sorted_values = _arrays.empty(values, values.shape, _arrays.describe_dtype(values))
            moved_in, moved_out = _arrays.describe(values), _arrays.describe(sorted_values)
        else:
            moved_in = moved_out = None
        _run([keys] if values is None else [keys, values],
             lambda s: _scanrt.sort(keys=_arrays.describe(keys), keys_out=_arrays.describe(out), values=moved_in,
                                    values_out=moved_out, descending=descending, stream=s, bits=span))
        sorted_keys = out
    if return_indices:
        return sorted_keys, indices
    return sorted_keys if values is None else (sorted_keys, sorted_values)


def _bit_range(bits: Optional[Tuple[int, int]]) -> Tuple[int, Optional[int]]:
    if bits is None:
        return (0, None)
    begin, end = bits
    return (int(begin), int(end))


def argsort(keys: Any, *, descending: bool = False, bits: Optional[Tuple[int, int]] = None) -> Any:
    """The int64 positions that sort the 1-D ``keys``, as ``numpy.argsort(kind="stable")``
    and ``torch.argsort(stable=True)`` (``sort(..., return_indices=True)`` gives the
    sorted keys too); ``bits`` as for :func:`sort`."""
    return sort(keys, descending=descending, bits=bits, return_indices=True)[1]


def _unsigned(indices: Any) -> tuple:
    """The description of a signed index array as its unsigned type: the bindings write
    unsigned indices, of the same bits for every index, as wide as the array made (int32
    where JAX has no 64-bit types)."""
    d = _arrays.describe(indices)
    return (d[0], "u" + d[1]) + tuple(d[2:])


def _jax_flags(rule: str, flags: Any) -> Any:
    """The flags a JAX selection passes to its custom call: bool masks as uint8 bytes,
    words of bits as uint32."""
    if flags is None:
        return None
    return flags.astype("uint8") if rule == "mask" else flags.astype("uint32")


def _count_beside(x: Any) -> Any:
    """A one-element int64 array beside ``x``, for a selection's count (as torch's and
    NumPy's counts); int32 where JAX has no 64-bit types, which holds the count of at
    most 2^31 - 1 elements."""
    count = _arrays.empty(x, (1,), "int64")
    if _arrays.describe_dtype(count) != "int64" and _size(x) >= 2**31:
        raise TypeError("an int32 count cannot hold the count of 2^31 elements or more: enable JAX's "
                        "64-bit types (jax.config.update('jax_enable_x64', True))")
    return count


def _count_arg(count: Any) -> tuple:
    """A count array as the binding takes it: int64 as it is, int32 as uint32."""
    d = _arrays.describe(count)
    return d if d[1] == "int64" else _unsigned(count)


def _size(x: Any) -> int:
    size = 1
    for extent in _arrays.describe(x)[2]:
        size *= extent
    return size


def _select(x: Any, mask: Any, rule: str, indices: bool, size: Optional[int], counts: bool = False,
            operand: Any = None, predicate: Any = None):
    _one_d(x)
    if size is not None and predicate is None and _arrays.library(x) == "jax":
        from . import _jax

        if _jax.takes(None):
            if counts:
                return _jax.run_heads(x, size)
            return _jax.select(x, _jax_flags(rule, mask), rule, indices, size, operand)
    n = x.shape[0]
    # A run-length encoding writes every run (it takes no capacity): room for n of them.
    room = n if size is None else max(n, size) if counts else size
    out = _arrays.empty(x, (room,), "int64" if indices else _arrays.describe_dtype(x))
    count = _count_beside(x)
    lengths = _arrays.empty(x, (room,), "int64") if counts else None
    d_out = _unsigned(out) if indices else _arrays.describe(out)
    d_len = None if lengths is None else _unsigned(lengths)
    inputs = [x] if mask is None else [x, mask]
    flags = _describe_flags(rule, mask)
    _run(inputs, lambda s: _scanrt.select(x=_arrays.describe(x), mask=flags, out=d_out, lengths=d_len,
                                          count=_count_arg(count), rule=rule, indices=indices,
                                          capacity=None if counts else size,
                                          stream=s, operand=operand, predicate=predicate))
    if size is not None and lengths is not None:
        return out[:size], lengths[:size], count
    if size is not None:
        return out, count
    kept = int(count[0])  # waits for the count, as torch.nonzero does
    return (out[:kept], lengths[:kept]) if lengths is not None else out[:kept]


class Predicate:
    """A user-defined selection predicate: CUDA source defining ``__device__ bool
    function(T x)`` for the element type ``T`` (compiled with NVRTC for each GPU at its
    first selection there), and optionally ``host(x) -> bool``, which selections of
    NumPy arrays call on the host backend, one element at a time (an exception it raises
    is raised by the selection)."""

    def __init__(self, function: str, source: str, host: Optional[Callable[[Any], Any]] = None) -> None:
        self.function, self.source, self.host = str(function), str(source), host


_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def _describe_flags(rule: str, flags: Any) -> Any:
    """The description of a selection's flags for the binding (words of bits as uint32)."""
    if flags is None:
        return None
    d = _arrays.describe(flags)
    return (d[0], "uint32", d[2], d[3], d[4]) if rule == "bits" else d


def _rule(x: Any, mask: Any, bits: Any, where: Any, predicate: Any) -> Tuple[str, Any, Any, Any]:
    """``(rule, flags, operand, predicate)`` of a selection given one
    way: ``mask`` (bool
    or uint8 flags), ``bits`` (uint32 words of flags, bit i of word w for element
    32 w + i), ``where`` ("nonzero", "not_nan", or a comparison ``(op, value)``) or a
    :class:`Predicate`."""
    _one_d(x)
    if sum(v is not None for v in (mask, bits, where, predicate)) != 1:
        raise TypeError("select by one of mask, bits, where or predicate")
    n = x.shape[0]
    if mask is not None:
        _one_d(mask)
        if mask.shape[0] != n or _arrays.describe_dtype(mask) not in ("bool", "uint8"):
            raise ValueError("the mask is a bool or uint8 array as long as the data")
        return "mask", mask, None, None
    if bits is not None:
        _one_d(bits)
        if _arrays.describe_dtype(bits) not in ("uint32", "int32") or bits.shape[0] < (n + 31) // 32:
            raise ValueError(f"bits are uint32 words of flags, at least {(n + 31) // 32} for {n} elements")
        return "bits", bits, None, None
    if predicate is not None:
        if not isinstance(predicate, Predicate):
            raise TypeError("predicate is a scanrt.Predicate")
        return "predicate", None, None, (predicate.source, predicate.function, predicate.host)
    if where in ("nonzero", "not_nan"):
        return where, None, None, None
    if isinstance(where, tuple) and len(where) == 2 and where[0] in _COMPARISONS:
        return where[0], None, where[1], None
    raise ValueError(f"where is \"nonzero\", \"not_nan\" or (op, value) with op one of {', '.join(_COMPARISONS)}")


def _torch_flags(x: Any, rule: str, operand: Any) -> Any:
    """The selection of the built-in rules as a bool tensor, by PyTorch's own operators."""
    import torch

    x = x.detach()
    if rule == "nonzero":
        return x != 0
    if rule == "not_nan":
        return ~torch.isnan(x) if x.is_floating_point() else torch.ones_like(x, dtype=torch.bool)
    return {"==": torch.eq, "!=": torch.ne, "<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge}[rule](
        x, operand)


def select(x: Any, mask: Any = None, *, bits: Any = None, where: Any = None, predicate: Any = None,
           indices: bool = False, size: Optional[int] = None) -> Any:
    """The elements of ``x`` (or, with ``indices``, their int64 positions; of any shape,
    its elements in C order, as NumPy's ``x[mask]``) that one selection keeps, in order:
    ``mask`` (bool or uint8 of ``x``'s shape, nonzero keeps), ``bits`` (uint32 words of
    flags), ``where`` (``"nonzero"``, ``"not_nan"``, or ``(op, value)`` with op one of
    ``==, !=, <, <=, >, >=``: ``x op value``, NaN failing every comparison but ``!=``) or
    ``predicate`` (a :class:`Predicate`). Waits for the count to size the
    result unless ``size`` is given, as :func:`compress`. Values pass gradients back on
    PyTorch tensors."""
    x, mask = _elements(x, mask)
    rule, flags, operand, pred = _rule(x, mask, bits, where, predicate)
    if not indices and _autograd(x):
        found = select(x.detach(), mask, bits=bits, where=where, predicate=predicate, indices=True, size=size)
        return _gathered_at(x, found, size)
    return _select(x, flags, rule, indices, size, operand=operand, predicate=pred)


def _gathered_at(x: Any, found: Any, size: Optional[int]) -> Any:
    """``x`` at the selected positions, which PyTorch differentiates; with a size, the
    slots past the count are zeros (no gradient)."""
    if size is None:
        return x.index_select(0, found)
    import torch

    positions, count = found
    valid = torch.arange(size, device=x.device) < count.to(torch.int64)
    kept = x.index_select(0, torch.where(valid, positions, 0))
    return torch.where(valid, kept, torch.zeros_like(kept)), count


def partition(x: Any, mask: Any = None, *, bits: Any = None, where: Any = None, predicate: Any = None,
              split: bool = False) -> Tuple[Any, ...]:
    """A stable two-way partition of ``x`` (of any shape, read as :func:`select` reads
    it) by one selection (as :func:`select`). Returns ``(out, count)``: ``out`` holds the
    selected elements in order, then the rejected ones from the end backwards (as CUB's
    ``DevicePartition``), and ``count`` is a one-element int64 array on the device
    (nothing waits for it). With ``split``, returns ``(selected, rejected, count)``: two
    arrays as long as ``x``, the first ``count`` and ``len(x) - count`` elements the
    selected and the rejected ones, each in order (the rest unspecified). Values pass
    gradients back on PyTorch tensors (built-in selections)."""
    x, mask = _elements(x, mask)
    rule, flags, operand, pred = _rule(x, mask, bits, where, predicate)
    if _autograd(x):
        return _torch_partition(x, rule, flags, operand, split)
    if pred is None and _arrays.library(x) == "jax":
        from . import _jax

        if _jax.takes(None):
            return _jax.partition(x, _jax_flags(rule, flags), rule, operand, split)
    n = x.shape[0]
    t = _arrays.describe_dtype(x)
    out = _arrays.empty(x, (n,), t)
    rejected = _arrays.empty(x, (n,), t) if split else None
    count = _count_beside(x)
    d = _arrays.describe
    _run([x] + ([flags] if flags is not None else []), lambda s: _scanrt.select(
        x=d(x), mask=_describe_flags(rule, flags), out=d(out), count=_count_arg(count), rule=rule, stream=s, operand=operand,
        predicate=pred, partition="two" if split else "reversed", rejected=None if rejected is None else d(rejected)))
    return (out, rejected, count) if split else (out, count)


def _torch_partition(x: Any, rule: str, flags: Any, operand: Any, split: bool) -> Tuple[Any, ...]:
    """The partition as gathers of ``x`` at the partition of its positions, which PyTorch
    differentiates."""
    import torch

    if rule == "predicate":
        raise TypeError("a partition by a user predicate is not differentiable; detach the input")
    n = x.shape[0]
    if rule == "mask":
        keep = flags
    elif rule == "bits":
        words = flags.to(torch.int64) & 0xFFFFFFFF
        keep = ((words.repeat_interleave(32) >> torch.arange(32, device=x.device).repeat(words.shape[0])) & 1)[:n]
        keep = keep.to(torch.bool)
    else:
        keep = _torch_flags(x, rule, operand)
    order, count = partition(torch.arange(n, device=x.device), keep)
    out = x.index_select(0, order)
    if not split:
        return out, count
    positions = torch.arange(n, device=x.device)
    kept = count.to(torch.int64)
    selected = torch.where(positions < kept, out, torch.zeros_like(out))
    rejected = torch.where(positions < n - kept, x.index_select(0, order.flip(0)), torch.zeros_like(out))
    return selected, rejected, count


def compress(x: Any, mask: Any, *, size: Optional[int] = None) -> Any:
    """The elements of ``x`` where the bool or uint8 ``mask`` (of ``x``'s shape) is
    nonzero, in order (of any shape: its elements in C order, as NumPy's ``x[mask]``).
    Waits for the count to size the result, unless ``size`` is given: then returns
    ``(out, count)``, ``out`` of ``size`` elements (the first ``count`` of them written)
    and ``count`` a one-element int64 array on the device, without waiting (as
    ``torch.nonzero_static``)."""
    x, mask = _elements(x, mask)
    _one_d(mask)
    if mask.shape[0] != x.shape[0] or _arrays.describe_dtype(mask) not in ("bool", "uint8"):
        raise ValueError("the mask is a bool or uint8 array as long as the data")
    if _autograd(x):
        _one_d(x)
        return _gathered_at(x, nonzero(mask, size=size), size)
    return _select(x, mask, "mask", False, size)


def nonzero(x: Any, *, size: Optional[int] = None) -> Any:
    """The int64 indices of the nonzero elements of the 1-D ``x``; ``size`` as for
    :func:`compress`."""
    return _select(x, None, "nonzero", True, size)


def unique_consecutive(x: Any, *, return_counts: bool = False, size: Optional[int] = None) -> Any:
    """The first element of each run of equal elements of ``x`` (and, with
    ``return_counts``, each run's length, int64), as ``torch.unique_consecutive``: of any
    shape, its elements in C order. Waits for the number of runs to size the results,
    unless ``size`` is given (as for :func:`compress`; inside ``jax.jit`` it must be):
    then returns ``(values, count)`` or ``(values, counts, count)``: the first ``size``
    runs (with JAX, zeros after the last) and the number of runs. Not differentiable
    (a ``TypeError`` for tensors that require gradients)."""
    if _autograd(x):
        raise TypeError("unique_consecutive is not differentiable; detach the input")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError(f"size is a number of elements, not {size!r}")
    x, _ = _elements(x)
    return _select(x, None, "run_heads", False, size, counts=return_counts)
