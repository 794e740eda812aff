"""The primitives built on scan: radix sort, select (compress, nonzero) and run-length
heads (unique_consecutive), on 1-D arrays of any library."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from . import _arrays
from . import _scanrt

_run = _arrays.run
_one_d = _arrays.one_d


def _autograd(*arrays: Any) -> bool:
    from . import _torch_autograd

    return any(a is not None and _torch_autograd(a) for a in arrays)


def _gathered(keys: Any, values: Any, descending: bool) -> Tuple[Any, Any, Any]:
    """Sorted keys and values as gathers of the inputs at the sort's indices, which
    PyTorch differentiates (gradients go back to where each element came from)."""
    _, indices = argsort(keys.detach(), descending=descending)
    return keys.gather(0, indices), None if values is None else values.gather(0, indices), indices


def sort(keys: Any, *, descending: bool = False, values: Any = None) -> Any:
    """Sorts the 1-D ``keys`` (stable: equal keys keep their order; floats in the total
    order -inf < ... < -0 < +0 < ... < +inf < NaN). With ``values`` (any type, as many),
    returns ``(sorted keys, values in that order)``; else the sorted keys."""
    _one_d(keys)
    if _autograd(keys, values):
        if values is not None:
            _one_d(values)
            if values.shape[0] != keys.shape[0]:
                raise ValueError(f"values are one per key: {values.shape[0]} for {keys.shape[0]}")
        sorted_keys, sorted_values, _ = _gathered(keys, values, descending)
        return sorted_keys if values is None else (sorted_keys, sorted_values)
    out = _arrays.empty(keys, keys.shape, _arrays.describe_dtype(keys))
    if values is None:
        _run([keys], lambda s: _scanrt.sort(_arrays.describe(keys), _arrays.describe(out), None, None, descending, s))
        return out
    _one_d(values)
    values_out = _arrays.empty(values, values.shape, _arrays.describe_dtype(values))
    _run([keys, values], lambda s: _scanrt.sort(_arrays.describe(keys), _arrays.describe(out), _arrays.describe(values),
                                                _arrays.describe(values_out), descending, s))
    return out, values_out


def argsort(keys: Any, *, descending: bool = False) -> Tuple[Any, Any]:
    """``(sorted keys, indices)`` of the 1-D ``keys``, as ``torch.sort(stable=True)``
    (int64 indices)."""
    _one_d(keys)
    if _autograd(keys):
        sorted_keys, _, indices = _gathered(keys, None, descending)
        return sorted_keys, indices
    out = _arrays.empty(keys, keys.shape, _arrays.describe_dtype(keys))
    indices = _arrays.empty(keys, keys.shape, "int64")
    # The bindings write U64 indices; int64 has the same bits for every index.
    d = _arrays.describe(indices)
    d = (d[0], "uint64", d[2], d[3], d[4])
    _run([keys], lambda s: _scanrt.sort(_arrays.describe(keys), _arrays.describe(out), None, d, descending, s))
    return out, indices


def _select(x: Any, mask: Any, rule: str, indices: bool, size: Optional[int], counts: bool = False):
    _one_d(x)
    n = x.shape[0]
    out_type = "uint64" if indices else _arrays.describe_dtype(x)
    out = _arrays.empty(x, (n if size is None else size,), "int64" if indices else out_type)
    count = _arrays.empty(x, (1,), "uint64")
    lengths = _arrays.empty(x, (n,), "int64") if counts else None
    d_out = _arrays.describe(out)
    d_out = (d_out[0], out_type, d_out[2], d_out[3], d_out[4])
    d_len = None
    if lengths is not None:
        d = _arrays.describe(lengths)
        d_len = (d[0], "uint64", d[2], d[3], d[4])
    inputs = [x] if mask is None else [x, mask]
    _run(inputs, lambda s: _scanrt.select(_arrays.describe(x), None if mask is None else _arrays.describe(mask), d_out,
                                          d_len, _arrays.describe(count), rule, indices, size, s))
    if size is not None:
        return out, count
    kept = int(count[0])  # waits for the count, as torch.nonzero does
    return (out[:kept], lengths[:kept]) if counts else out[:kept]


def compress(x: Any, mask: Any, *, size: Optional[int] = None) -> Any:
    """The elements of the 1-D ``x`` where the bool or uint8 ``mask`` is nonzero, in
    order. Waits for the count to size the result, unless ``size`` is given: then returns
    ``(out, count)``, ``out`` of ``size`` elements (the first ``count`` of them written)
    and ``count`` a one-element uint64 array on the device, without waiting (as
    ``torch.nonzero_static``)."""
    _one_d(mask)
    if mask.shape[0] != x.shape[0] or _arrays.describe_dtype(mask) not in ("bool", "uint8"):
        raise ValueError("the mask is a bool or uint8 array as long as the data")
    if _autograd(x):
        # The kept elements as a gather of x at their indices, which PyTorch differentiates;
        # with a size, the slots past the count are zeros (no gradient).
        _one_d(x)
        if size is None:
            return x.index_select(0, nonzero(mask))
        indices, count = nonzero(mask, size=size)
        import torch

        valid = torch.arange(size, device=x.device) < count.to(torch.int64)
        kept = x.index_select(0, torch.where(valid, indices, 0))
        return torch.where(valid, kept, torch.zeros_like(kept)), count
    return _select(x, mask, "mask", False, size)


def nonzero(x: Any, *, size: Optional[int] = None) -> Any:
    """The int64 indices of the nonzero elements of the 1-D ``x``; ``size`` as for
    :func:`compress`."""
    return _select(x, None, "nonzero", True, size)


def unique_consecutive(x: Any, *, return_counts: bool = False) -> Any:
    """The first element of each run of equal elements of the 1-D ``x`` (and, with
    ``return_counts``, each run's length, int64), as ``torch.unique_consecutive``. Not
    differentiable (a ``TypeError`` for tensors that require gradients)."""
    if _autograd(x):
        raise TypeError("unique_consecutive is not differentiable; detach the input")
    return _select(x, None, "run_heads", False, None, counts=return_counts)
