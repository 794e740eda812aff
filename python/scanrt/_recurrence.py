"""The linear recurrence ``h[t] = a[t] * h[t-1] + b[t]`` and its adjoint, with the options
of :func:`scanrt.cumsum`, on the crate's recipes."""

from __future__ import annotations

from typing import Any, Optional

from . import _arrays, _core, _scanrt

_FLOATS = _arrays.FLOATS


def _autograd(*arrays: Any) -> bool:
    return any(_arrays.is_array(x) and _arrays.torch_autograd(x) for x in arrays)


def _torch_ops():
    """The recurrence's PyTorch operators, imported at the first tensor that needs them:
    the module imports torch, which scanrt does not require."""
    from . import _torch_recurrence

    return _torch_recurrence


def _finish(h: Any, out: Any) -> Any:
    return h if out is None else _arrays.copy_into(out, h)


def _pair(a: Any, b: Any, dtype: Optional[str], names: str = "a and b") -> tuple:
    """``a`` and ``b`` in ``dtype`` (when given), checked to share a shape and a type."""
    if dtype is not None:
        a, b = _arrays.astype(a, dtype), _arrays.astype(b, dtype)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{names} differ in shape: {tuple(a.shape)} and {tuple(b.shape)}")
    t = _arrays.describe_dtype(a)
    if _arrays.describe_dtype(b) != t:
        raise TypeError(f"{names} have different types: {t} and {_arrays.describe_dtype(b)}")
    if t not in _FLOATS:
        raise TypeError(f"the linear recurrence takes float16, bfloat16, float32 or float64 arrays, not {t} "
                        "(dtype= converts)")
    return a, b


def linear_recurrence(a: Any, b: Any, axis: int = -1, *, exclusive: bool = False, reverse: bool = False,
                      initial: Any = None, deterministic: bool = False, dtype: Optional[str] = None, out: Any = None,
                      segments: Any = None, offsets: Any = None, keys: Any = None, return_final: bool = False) -> Any:
    """``h[t] = a[t] * h[t-1] + b[t]`` along ``axis``, with ``h[-1] = initial`` (0 by
    default); ``reverse`` runs from the last element (``h[t] = a[t] * h[t+1] + b[t]``).
    ``a`` and ``b`` have one shape and one float type (f32, f64; f16 and bf16 run with an
    f32 state, each ``h`` rounded once as it is written).

    ``exclusive``: element t is the state before it, ``h[t-1]`` (``initial`` at each
    start). ``deterministic``: bitwise identical results on every run. ``dtype``: the
    type to compute in (``a`` and ``b`` are converted first). ``out``: the array to write.
    ``segments`` (bool or uint8 flags) or ``keys`` (runs of equal keys) over the 1-D ``a``
    and ``b``: each segment a recurrence of its own from ``initial``.

    Batches of variable-length sequences: ``offsets``, a CSR array (int32, int64,
    uint32 or uint64, not decreasing) over the 1-D ``a`` and ``b``; sequence i is
    ``[offsets[i], offsets[i+1])`` (empty ones allowed) and runs a recurrence of its
    own. ``initial`` is then a float for every sequence or an array of one ``h0`` per
    sequence (``len(offsets) - 1`` of the state's type; one for a 1-D ``a`` without
    offsets). ``return_final``: also return each sequence's final state, its last ``h``
    (its ``h0`` when empty), as an array of one per sequence of the state's type:
    ``(h, final)``. All of it is differentiable on PyTorch tensors (gradients for ``a``,
    ``b``, ``initial`` and through ``final``), except an exclusive scan with states per
    sequence (a ``TypeError``)."""
    if (dtype is None and out is None and segments is None and offsets is None and keys is None and not return_final
            and (initial is None or isinstance(initial, (int, float))) and _torch_plain_pair(a, b, axis)):
        return _torch_fast("linear_recurrence", a, b, None if initial is None else float(initial), exclusive, reverse,
                           deterministic)
    a, b = _pair(a, b, dtype)
    if _arrays.library(a) == "jax" and not return_final:
        from . import _jax

        if _jax.takes(out, initial):
            data, kind = _jax.segments_of(segments, offsets, keys)
            return _jax.linear_recurrence(a, b, axis, exclusive, reverse, initial, deterministic, data, kind)
    if offsets is not None or _arrays.is_array(initial) or return_final:
        if segments is not None or keys is not None:
            raise TypeError("states per sequence take sequences by offsets (not flags or keys)")
        result = _sequences_recurrence(a, b, initial, exclusive, reverse, deterministic, offsets, return_final)
        return (_finish(result[0], out), result[1]) if return_final else _finish(result, out)
    _arrays.segment_data(a, segments, None, keys)
    if _autograd(a, b):
        h = _torch_ops().linear_recurrence(a, b, axis, initial, exclusive, reverse, deterministic, segments, keys)
        return _finish(h, out)
    return _finish(_recipe_of_pair("linear_recurrence", a, b, axis, initial, exclusive, reverse, deterministic,
                                   segments, keys), out)


def linear_recurrence_adjoint(a: Any, g: Any, axis: int = -1, *, initial: Any = None, reverse: bool = False,
                              deterministic: bool = False, segments: Any = None, keys: Any = None) -> Any:
    """``lam[t] = g[t] + a[s] * lam[s]`` along ``axis``, ``s`` the element before ``t``
    (``t - 1``; ``t + 1`` with ``reverse``), the first element (of each segment, with
    ``segments`` or ``keys`` as for :func:`linear_recurrence`) adding ``initial`` (0 by
    default) instead: the adjoint of :func:`linear_recurrence`, which reads each
    coefficient at the neighbour (no shifted copy of ``a``). Types as for the
    recurrence.

    It is the recurrence's gradient: for ``h = linear_recurrence(a, b, initial=h0)`` and
    ``g`` the gradient of ``h``, ``lam = linear_recurrence_adjoint(a, g, reverse=True)``
    is the gradient of ``b``, ``lam[t] * h[t-1]`` that of ``a[t]`` (``h[-1] = h0``) and
    ``a[0] * lam[0]`` that of ``h0`` (a custom VJP in JAX, for instance); ``initial`` is
    then the gradient of the final state. Differentiable on PyTorch tensors."""
    if (segments is None and keys is None and (initial is None or isinstance(initial, (int, float)))
            and _torch_plain_pair(a, g, axis)):
        return _torch_fast("linear_recurrence_adjoint", a, g, None if initial is None else float(initial), False,
                           reverse, deterministic)
    a, g = _pair(a, g, None, "a and g")
    _arrays.segment_data(a, segments, None, keys)
    if _autograd(a, g):
        return _torch_ops().linear_recurrence_adjoint(a, g, axis, initial, reverse, deterministic, segments, keys)
    return _recipe_of_pair("linear_recurrence_adjoint", a, g, axis, initial, False, reverse, deterministic,
                           segments, keys)


def _torch_plain_pair(a: Any, b: Any, axis: int) -> bool:
    """Whether ``a`` and ``b`` are the common PyTorch call, checked with nothing a small
    scan would feel: contiguous CUDA tensors of one shape and float type on one device,
    along their last axis, that need no graph (no gradients, no tracing, no transform)."""
    # A graph first: while torch.compile traces, nothing more is read (no layout guards).
    if not (_arrays.is_torch(a) and _arrays.is_torch(b)) or _autograd(a, b):
        return False
    return (a.is_cuda and b.is_cuda and a.dtype == b.dtype and _arrays.TORCH_DTYPE_NAMES.get(a.dtype) in _FLOATS
            and a.shape == b.shape and a.dim() > 0 and axis in (-1, a.dim() - 1) and a.is_contiguous()
            and b.is_contiguous() and a.get_device() == b.get_device())


def _torch_fast(recipe: str, a: Any, b: Any, init: Optional[float], exclusive: bool, reverse: bool,
                deterministic: bool) -> Any:
    """The common PyTorch call, with nothing between it and the binding that a small scan
    would feel: contiguous CUDA tensors along their last axis, on the raw current stream."""
    import torch

    h = torch.empty_like(a)
    (da, db, dh), stream = _arrays.torch_alike(a, b, h)
    _scanrt.recipe_scan(recipe=recipe, inputs=[da, db], outputs=[dh], row=a.shape[-1], inclusive=not exclusive,
                        reverse=reverse, initial=init, deterministic=deterministic, stream=stream)
    return h


def _recipe_of_pair(recipe: str, a: Any, b: Any, axis: int, initial: Any, exclusive: bool, reverse: bool,
                    deterministic: bool, segments: Any, keys: Any) -> Any:
    """A recipe reading two arrays of one shape and type and writing one, along ``axis``
    (or over the 1-D segments given)."""
    init = None if initial is None else float(initial)
    describe = _arrays.describe
    opt = lambda x: None if x is None else describe(x)  # noqa: E731
    if segments is not None or keys is not None:
        a, b = _arrays.contiguous(a), _arrays.contiguous(b)
        segments, keys = (None if x is None else _arrays.contiguous(x) for x in (segments, keys))
        h = _arrays.empty(a, a.shape, _arrays.describe_dtype(a))
        _arrays.run([a, b, segments if segments is not None else keys], lambda s: _scanrt.recipe_scan(
            recipe=recipe, inputs=[describe(a), describe(b)], outputs=[describe(h)], inclusive=not exclusive,
            reverse=reverse, initial=init, deterministic=deterministic, stream=s, segments=opt(segments),
            keys=opt(keys)))
        return h
    along = _arrays.normal_axis(a, axis)
    last = along == len(a.shape) - 1
    if _torch_plain_pair(a, b, axis):
        return _torch_fast(recipe, a, b, init, exclusive, reverse, deterministic)
    if not last and describe(a)[1:4] == describe(b)[1:4]:
        # An inner axis, a and b laid out alike: scanned where they lie, in one pass.
        h = _arrays.empty(a, a.shape, _arrays.describe_dtype(a))
        _arrays.run([a, b], lambda s: _scanrt.recipe_scan(
            recipe=recipe, inputs=[describe(a), describe(b)], outputs=[describe(h)], inclusive=not exclusive,
            reverse=reverse, initial=init, deterministic=deterministic, stream=s, axis=along))
        return h
    ma, axis = _arrays.last_axis_contiguous(a, axis)
    mb, _ = _arrays.last_axis_contiguous(b, axis)
    h = _arrays.empty(ma, ma.shape, _arrays.describe_dtype(ma))
    _arrays.run([ma, mb], lambda s: _scanrt.recipe_scan(
        recipe=recipe, inputs=[describe(ma), describe(mb)], outputs=[describe(h)], row=ma.shape[-1],
        inclusive=not exclusive, reverse=reverse, initial=init, deterministic=deterministic, stream=s))
    return _arrays.move_back(h, axis)


def _sequences_recurrence(a: Any, b: Any, initial: Any, exclusive: bool, reverse: bool, deterministic: bool,
                          offsets: Any, return_final: bool) -> Any:
    """``linear_recurrence`` of a batch of sequences by offsets (or of one 1-D sequence),
    with initial and final states per sequence: carries per segment."""
    _arrays.one_d(a)
    if offsets is not None:
        _arrays.check_offsets(offsets)
    count = max(int(offsets.shape[0]) - 1, 0) if offsets is not None else 1
    dtype = _arrays.describe_dtype(a)
    state = _core.STATE.get(dtype, dtype)
    if _arrays.is_array(initial) and (tuple(initial.shape) != (count,) or _arrays.describe_dtype(initial) != state):
        raise ValueError(f"initial is an array of one {state} h0 per sequence: shape ({count},)")
    if _autograd(a, b, initial):
        if exclusive:
            raise TypeError("an exclusive recurrence with states per sequence is not differentiable; detach the "
                            "inputs, or shift the inclusive result")
        return _torch_ops().sequences_recurrence(a, b, initial, reverse, deterministic, offsets, return_final)
    h, final = _core.recurrence_with_states(a, b, initial, exclusive, reverse, deterministic, offsets, return_final,
                                            count)
    return (h, final) if return_final else h
