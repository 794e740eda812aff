"""JAX arrays through XLA's FFI: scanrt's scans, sorts and selections as XLA custom calls
(the handlers of ``src/xla_ffi``, on JAX's GPU and CPU platforms), so that they run
inside ``jax.jit`` on XLA's stream with no host synchronisation, batch under
``jax.vmap`` (a batch axis is more rows: each call scans along a negative axis, which
the leading batch axes leave in place; segmented and 1-D calls loop) and differentiate
under ``jax.grad`` (``custom_vjp`` around the calls: sums, extremes, the linear
recurrence, sorted keys; values follow permutations by gathers). Concrete JAX arrays
take the same calls, eagerly."""

import functools
from typing import Any, List, Optional, Sequence, Tuple

import jax
import numpy as np

from . import _arrays, _core, _scanrt

_REGISTERED: List[bool] = [False]


def takes(out: Any, *options: Any) -> bool:
    """Whether a call on a JAX array (or tracer) runs as an XLA custom call: JAX's default
    backend is a GPU or the CPU (traced values carry no device before XLA places them;
    on the CPU the host backend scans), and the call names no ``out`` and none of the
    array options (segments, carries in arrays) among ``options`` that the custom calls
    do not take."""
    if out is not None or any(_arrays.is_array(o) for o in options):
        return False
    return jax.default_backend() in ("gpu", "cpu")


def _register() -> None:
    if _REGISTERED[0]:
        return
    for platform, handlers in _scanrt.xla_handlers().items():
        for name, address in handlers.items():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(address), platform=platform)
    _REGISTERED[0] = True


def _dtype(name: str) -> Any:
    """JAX's type for ``name`` (64-bit types become 32-bit ones without x64)."""
    return jax.dtypes.canonicalize_dtype(name)


def _options(axis: int, ndim: int, exclusive: bool, reverse: bool, deterministic: bool, initial: Any) -> dict:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimensions")
    options: dict = dict(axis=axis % ndim - ndim, inclusive=not exclusive, reverse=bool(reverse),
                         deterministic=bool(deterministic))
    if initial is not None:
        if not isinstance(initial, (int, float)) or isinstance(initial, bool):
            raise TypeError(f"initial must be a number under JAX, not {type(initial).__name__}")
        options["initial"] = initial
    return options


def _call(target: str, inputs: Sequence[Any], results: Sequence[Tuple[tuple, Any]], vmap: str = "broadcast_all",
          **options: Any) -> List[Any]:
    """The custom call ``target`` on ``inputs`` into arrays of ``results`` (shape, type);
    ``vmap``: how ``jax.vmap`` batches it (scans along an axis: more rows; 1-D and
    segmented calls: a loop)."""
    _register()
    shapes = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in results]
    return list(jax.ffi.ffi_call(target, shapes, vmap_method=vmap)(*inputs, **options))


def _inputs(x: Any, data: Any) -> List[Any]:
    """A call's arrays: ``x`` and, for a segmented call, its segment data after it."""
    return [x] if data is None else [x, data]


def _batching(data: Any) -> str:
    """How ``jax.vmap`` batches a call: more rows, or (segments of 1-D arrays) a loop."""
    return "broadcast_all" if data is None else "sequential"


def _no_cotangent(data: Any) -> Any:
    """The zero cotangent of segment data (integers and flags have none)."""
    return None if data is None else np.zeros(data.shape, jax.dtypes.float0)


def segments_of(segments: Any, offsets: Any, keys: Any) -> Tuple[Any, Optional[str]]:
    """The segment data given (at most one of them, 1-D) and its form for the handler."""
    for data, kind in ((segments, "flags"), (offsets, "offsets"), (keys, "keys")):
        if data is not None:
            return (data.astype("uint8") if kind == "flags" else data), kind
    return None, None


def scan(x: Any, op: str, axis: int, exclusive: bool, reverse: bool, initial: Any, deterministic: bool,
         out_type: str, data: Any = None, kind: Optional[str] = None) -> Any:
    """A built-in operator's scan of ``x`` along ``axis`` (or over the segments of the 1-D
    ``x`` that ``data`` gives, in the form ``kind``) into ``out_type``."""
    options = _options(axis, x.ndim, exclusive, reverse, deterministic, initial)
    if kind is not None:
        options["segments"] = kind
    out = _dtype(out_type)
    if op == "sum" and initial is None and out.kind == "f" and x.dtype.kind == "f":
        return _sum(x, data, out, tuple(sorted(options.items())))
    if op == "prod" and out.kind == "f" and x.dtype.kind == "f":
        return _prod(x, data, out, tuple(sorted(options.items())))
    return _call("scanrt_scan", _inputs(x, data), [(x.shape, out)], _batching(data), op=op, **options)[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _sum(x: Any, data: Any, out: Any, options: tuple) -> Any:
    return _call("scanrt_scan", _inputs(x, data), [(x.shape, out)], _batching(data), op="sum", **dict(options))[0]


def _sum_forward(x, data, out, options):
    # The residuals: a zero-size array of x's type (its gradient's type), the segments.
    return _sum(x, data, out, options), (jax.numpy.zeros(0, x.dtype), data)


def _sum_backward(out, options, residuals, g):
    like, data = residuals
    # Element s reaches every result t at or after it in its segment (before it,
    # reversed): the gradient is the same scan of g the other way, over the same segments.
    reverse = dict(options, reverse=not dict(options)["reverse"])
    grad = _call("scanrt_scan", _inputs(g, data), [(g.shape, g.dtype)], _batching(data), op="sum", **reverse)[0]
    return grad.astype(like.dtype), _no_cotangent(data)


_sum.defvjp(_sum_forward, _sum_backward)


def flags_of(x: Any, data: Any, kind: Optional[str]) -> Any:
    """Segment data of the 1-D ``x`` (as ``segments_of`` gives it) as uint8 head flags
    (None without segments)."""
    jnp = jax.numpy
    if kind == "offsets":
        # Heads at each segment's start; empty segments' starts coincide, and a start at
        # the end (trailing empty segments) is dropped by the scatter.
        return jnp.zeros(x.shape, "uint8").at[data[:-1]].set(1, mode="drop")
    if kind == "keys":
        return (data != jnp.roll(data, 1)).at[0].set(True).astype("uint8")
    return None if data is None else data.astype("uint8")


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _prod(x: Any, data: Any, out: Any, options: tuple) -> Any:
    return _call("scanrt_scan", _inputs(x, data), [(x.shape, out)], _batching(data), op="prod", **dict(options))[0]


def _prod_forward(x, data, out, options):
    return _prod(x, data, out, options), (x, data)


def _prod_backward(out, options, residuals, g):
    # y[t] = c * prod of the x[j] up to t (before t: exclusive) in scan order. Without
    # dividing (zeros are ordinary): dy/dx[i] sums g[t] times every other factor of y[t],
    # which is p[i] (c times the factors before i) times r[i], where r[i] = g[i] + x[s] r[s]
    # (s after i; the adjoint recurrence) for inclusive scans, and r[i] = q[s] with
    # q[t] = g[t] + x[t] q[next] (the recurrence of x and g the other way) for exclusive.
    x, data = residuals
    opts = dict(options)
    kind, axis = opts.get("segments"), opts["axis"]
    before = dict(opts, inclusive=False)
    p = _call("scanrt_scan", _inputs(x, data), [(x.shape, x.dtype)], _batching(data), op="prod", **before)[0]
    recipe = "linear_recurrence_adjoint" if opts["inclusive"] else "linear_recurrence"
    r = _recurrence_call(recipe, x, g.astype(x.dtype), data, kind, axis, not opts["reverse"], opts["deterministic"],
                         inclusive=opts["inclusive"])
    return p * r, _no_cotangent(data)


_prod.defvjp(_prod_forward, _prod_backward)


def extreme(x: Any, recipe: str, axis: int, exclusive: bool, reverse: bool, initial: Any,
            deterministic: bool, data: Any = None, kind: Optional[str] = None) -> Tuple[Any, Any]:
    """cummax or cummin of ``x`` along ``axis`` (or over the segments of the 1-D ``x``):
    values and int indices, positions along the axis (in ``x`` for segments; -1 where the
    initial value or an exclusive scan's start is the extreme)."""
    options = _options(axis, x.ndim, exclusive, reverse, deterministic, initial)
    if kind is not None:
        options["segments"] = kind
    empty = exclusive or initial is not None
    if x.dtype.kind == "f":
        values, raw = _extreme_values(x, data, recipe, tuple(sorted(options.items())))
    else:
        values, raw = _call("scanrt_recipe", _inputs(x, data), [(x.shape, x.dtype), (x.shape, "uint32")],
                            _batching(data), recipe=recipe, **options)
    return values, _core.indices_of(raw, 0, empty)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _extreme_values(x: Any, data: Any, recipe: str, options: tuple) -> Tuple[Any, Any]:
    return tuple(_call("scanrt_recipe", _inputs(x, data), [(x.shape, x.dtype), (x.shape, "uint32")],
                       _batching(data), recipe=recipe, **dict(options)))


def _extreme_forward(x, data, recipe, options):
    values, raw = _extreme_values(x, data, recipe, options)
    return (values, raw), (raw, data)


def _extreme_backward(recipe, options, residuals, grads):
    jnp = jax.numpy
    raw, data = residuals
    g = grads[0]
    axis = dict(options)["axis"]
    moved_g, moved_i = jnp.moveaxis(g, axis, -1), jnp.moveaxis(raw, axis, -1)
    n = moved_g.shape[-1]
    # Each result's gradient goes to the element it took (none for the initial value).
    kept = moved_i < n
    rows = jnp.arange(moved_g.size // max(n, 1)).reshape(moved_g.shape[:-1] + (1,)) * n
    target = jnp.where(kept, rows + jnp.where(kept, moved_i, 0).astype(rows.dtype), moved_g.size)
    flat = jnp.zeros(moved_g.size + 1, g.dtype).at[target.reshape(-1)].add(moved_g.reshape(-1))
    return jnp.moveaxis(flat[:-1].reshape(moved_g.shape), -1, axis), _no_cotangent(data)


_extreme_values.defvjp(_extreme_forward, _extreme_backward)


def logcumsumexp(x: Any, axis: int, exclusive: bool, reverse: bool, initial: Any, deterministic: bool,
                 data: Any = None, kind: Optional[str] = None) -> Any:
    options = _options(axis, x.ndim, exclusive, reverse, deterministic, initial)
    if kind is not None:
        options["segments"] = kind
    return _logcumsumexp(x, data, tuple(sorted(options.items())))


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _logcumsumexp(x: Any, data: Any, options: tuple) -> Any:
    return _call("scanrt_recipe", _inputs(x, data), [(x.shape, x.dtype)], _batching(data), recipe="logcumsumexp",
                 **dict(options))[0]


def _logcumsumexp_forward(x, data, options):
    y = _logcumsumexp(x, data, options)
    return y, (x, y, data)


def _logcumsumexp_backward(options, residuals, g):
    # dy[t]/dx[i] = exp(x[i] - y[t]) for each t that takes i (an initial value is only one
    # more term): the gradient is exp(x[i]) times the scan the other way of g[t] exp(-y[t]),
    # summed in log space, the positive and negative parts of g apart, so that nothing
    # overflows (a zero part is log 0 = -inf, the sum's identity).
    jnp = jax.numpy
    x, y, data = residuals
    back = {k: v for k, v in options if k != "initial"}
    back["reverse"] = not back["reverse"]

    def part(gp: Any) -> Any:
        return _call("scanrt_recipe", _inputs(jnp.log(gp) - y, data), [(x.shape, x.dtype)], _batching(data),
                     recipe="logcumsumexp", **back)[0]

    g = g.astype(x.dtype)
    return jnp.exp(x + part(jnp.maximum(g, 0))) - jnp.exp(x + part(jnp.maximum(-g, 0))), _no_cotangent(data)


_logcumsumexp.defvjp(_logcumsumexp_forward, _logcumsumexp_backward)


def linear_recurrence(a: Any, b: Any, axis: int, exclusive: bool, reverse: bool, initial: Any,
                      deterministic: bool, data: Any = None, kind: Optional[str] = None) -> Any:
    """``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` from ``initial`` (0), or over the
    segments of the 1-D ``a`` and ``b`` that ``data`` gives in the form ``kind`` (as
    ``segments_of`` returns them) a recurrence of its own in each, from ``initial``;
    differentiable in ``a`` and ``b`` (inclusive scans)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise TypeError(f"a and b have one shape and type: {a.shape} {a.dtype} and {b.shape} {b.dtype}")
    options = _options(axis, a.ndim, exclusive, reverse, deterministic, initial)
    if exclusive:
        given = {} if initial is None else {"initial": initial}
        return _recurrence_call("linear_recurrence", a, b, data, kind, options["axis"], bool(reverse),
                                bool(deterministic), inclusive=False, **given)
    start = 0.0 if initial is None else float(initial)
    return _recurrence(a, b, data, kind, options["axis"], bool(reverse), start, bool(deterministic))


def _recurrence_call(recipe: str, a: Any, x: Any, data: Any, kind: Optional[str], axis: int, reverse: bool,
                     deterministic: bool, inclusive: bool = True, **initial: Any) -> Any:
    """The recurrence (or its adjoint) of ``a`` and ``x``, over the segments ``data`` gives
    in the form ``kind``, if any."""
    segments = {} if kind is None else {"segments": kind}
    return _call("scanrt_recipe", [a, x] + ([] if data is None else [data]), [(a.shape, a.dtype)],
                 _batching(data), recipe=recipe, axis=axis, inclusive=inclusive, reverse=reverse,
                 deterministic=deterministic, **segments, **initial)[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
def _recurrence(a: Any, b: Any, data: Any, kind: Optional[str], axis: int, reverse: bool, start: float,
                deterministic: bool) -> Any:
    return _recurrence_call("linear_recurrence", a, b, data, kind, axis, reverse, deterministic, initial=start)


def _recurrence_forward(a, b, data, kind, axis, reverse, start, deterministic):
    h = _recurrence(a, b, data, kind, axis, reverse, start, deterministic)
    return h, (a, h, data)


def _recurrence_backward(kind, axis, reverse, start, deterministic, residuals, g):
    jnp = jax.numpy
    a, h, data = residuals
    # lam[t] = g[t] + a[s] lam[s], s the element after t in the recurrence's order (in its
    # segment): the gradient of b; that of a[t] is lam[t] times the state before t (start
    # at the head of each recurrence).
    lam = _recurrence_call("linear_recurrence_adjoint", a, g, data, kind, axis, not reverse, deterministic)
    n = h.shape[axis]
    head = jnp.full_like(jnp.take(h, jnp.arange(1), axis=axis), start)
    if reverse:
        before = jnp.concatenate([jnp.take(h, jnp.arange(1, n), axis=axis), head], axis=axis)
    else:
        before = jnp.concatenate([head, jnp.take(h, jnp.arange(n - 1), axis=axis)], axis=axis)
    if data is not None:
        # A segment's head (forward: its first element; reversed: its last) starts anew.
        heads = flags_of(h, data, kind) != 0
        if reverse:
            heads = jnp.concatenate([heads[1:], jnp.ones(1, bool)])
        before = jnp.where(heads, start, before)
    return lam * before, lam, _no_cotangent(data)


_recurrence.defvjp(_recurrence_forward, _recurrence_backward)


def operator_scan(op: Any, inputs: List[Any], exclusive: bool, reverse: bool, initial: Optional[bytes],
                  deterministic: bool, data: Any, kind: Optional[str], axis: Optional[int]) -> Any:
    """A user-defined operator's scan (``scanrt.Operator``) of JAX arrays: of 1-D arrays
    (over the segments ``data`` gives in the form ``kind``, if any), or along ``axis``;
    ``initial`` is a state's bytes. No gradient."""
    options: dict = dict(operator=op.xla_handle(), inclusive=not exclusive, reverse=bool(reverse),
                         deterministic=bool(deterministic))
    if initial is not None:
        options["initial"] = initial.hex()
    if kind is not None:
        options["segments"] = kind
    first = inputs[0]
    if axis is not None:
        if not -first.ndim <= axis < first.ndim:
            raise ValueError(f"axis {axis} is out of range for an array of {first.ndim} dimensions")
        options["axis"] = axis % first.ndim - first.ndim
        results = [(first.shape, t) for t in op.store[1]]
    else:
        results = op._outputs(op._length(first))
    outs = _call("scanrt_operator", inputs + ([] if data is None else [data]),
                 [(shape, _dtype(t)) for shape, t in results], "sequential" if axis is None else "broadcast_all",
                 **options)
    return outs[0] if len(outs) == 1 else tuple(outs)


def sort(keys: Any, values: Any, descending: bool, bits: Any, return_indices: bool) -> Any:
    """The stable radix sort of the 1-D ``keys``, as ``_primitives.sort`` returns it: the
    sorted keys, with ``values`` in their order, or with their indices. Gradients reach
    float keys and values through the sort's permutation."""
    begin, end = (0, -1) if bits is None else (int(bits[0]), int(bits[1]))
    options = (("begin_bit", begin), ("descending", bool(descending)), ("end_bit", end))
    if keys.dtype.kind == "f":
        sorted_keys, raw = _sorted(keys, options)
    else:
        sorted_keys, raw = _sort_call(keys, options)
    if values is not None:
        # The values follow the permutation: a gather JAX differentiates.
        return sorted_keys, jax.numpy.take(values, raw.astype(_dtype("int64")))
    return (sorted_keys, raw.astype(_dtype("int64"))) if return_indices else sorted_keys


def _sort_call(keys: Any, options: tuple) -> Tuple[Any, Any]:
    index = _dtype("uint64")  # uint32 where JAX has no 64-bit types
    return tuple(_call("scanrt_sort", [keys], [(keys.shape, keys.dtype), (keys.shape, index)], vmap="sequential",
                       **dict(options)))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _sorted(keys: Any, options: tuple) -> Tuple[Any, Any]:
    return _sort_call(keys, options)


def _sorted_forward(keys, options):
    sorted_keys, raw = _sort_call(keys, options)
    return (sorted_keys, raw), raw


def _sorted_backward(options, raw, grads):
    # Each sorted key's gradient goes back to the position it came from.
    g = grads[0]
    return (jax.numpy.zeros_like(g).at[raw].set(g),)


_sorted.defvjp(_sorted_forward, _sorted_backward)


def select(x: Any, flags: Any, rule: str, indices: bool, size: int, operand: Any) -> Tuple[Any, Any]:
    """At most ``size`` kept elements of the 1-D ``x`` (or their int positions) and the
    count, as ``_primitives.select`` with a size: the slots past the count hold zeros.
    Kept values of float arrays are a gather of ``x`` at the kept positions, which JAX
    differentiates."""
    if not indices and x.dtype.kind == "f" and x.shape[0] > 0:
        positions, count = select(jax.lax.stop_gradient(x), flags, rule, True, size, operand)
        kept = jax.numpy.arange(size) < count[0]
        return jax.numpy.where(kept, jax.numpy.take(x, jax.numpy.where(kept, positions, 0)), 0), count
    inputs = [x] if flags is None else [x, flags]
    out = _dtype("uint64") if indices else x.dtype
    options = dict(rule=rule, indices=bool(indices), capacity=int(size))
    if operand is not None:
        options["operand"] = _number(operand)
    found, count = _call("scanrt_select", inputs, [((size,), out), ((1,), _count_type())], vmap="sequential",
                         **options)
    count = count.astype(_dtype("int64"))
    zeros = jax.numpy.arange(size) >= count[0]
    found = jax.numpy.where(zeros, 0, found)
    return (found.astype(_dtype("int64")) if indices else found), count


def run_heads(x: Any, size: int) -> Tuple[Any, Any, Any]:
    """``unique_consecutive(x, return_counts=True, size=size)`` of the 1-D ``x``: the first
    element and the length of each run of equal elements (the first ``size`` of them;
    zeros after), and the number of runs (all of them, as a selection's count)."""
    # A run-length encoding writes every run (it takes no capacity): room for x's length.
    room = max(x.shape[0], size)
    arrays = [((room,), x.dtype), ((room,), _dtype("uint64")), ((1,), _count_type())]
    heads, lengths, count = _call("scanrt_select", [x], arrays, vmap="sequential", rule="run_heads",
                                  indices=False, capacity=-1, lengths=True)
    count = count.astype(_dtype("int64"))
    past = jax.numpy.arange(size) >= count[0]
    return (jax.numpy.where(past, 0, heads[:size]),
            jax.numpy.where(past, 0, lengths[:size]).astype(_dtype("int64")), count)


def partition(x: Any, flags: Any, rule: str, operand: Any, split: bool) -> Tuple[Any, ...]:
    """The stable partition of the 1-D ``x``, as ``_primitives.partition``: ``(out, count)``
    (the kept, then the rejected from the end backwards), or with ``split``
    ``(selected, rejected, count)`` (zeros past each's part)."""
    inputs = [x] if flags is None else [x, flags]
    n = x.shape[0]
    options = dict(rule=rule, capacity=-1, partition="two" if split else "reversed")
    if operand is not None:
        options["operand"] = _number(operand)
    arrays = [((n,), x.dtype)] * (2 if split else 1) + [((1,), _count_type())]
    parts = _call("scanrt_select", inputs, arrays, vmap="sequential", **options)
    count = parts[-1].astype(_dtype("int64"))
    if not split:
        return parts[0], count
    selected, rejected = parts[0], parts[1]
    positions = jax.numpy.arange(n)
    return (jax.numpy.where(positions < count[0], selected, 0),
            jax.numpy.where(positions < n - count[0], rejected, 0), count)


def _count_type() -> Any:
    """The type a selection's custom call counts in: int64, or uint32 where JAX has no
    64-bit types (the count is then returned as int32)."""
    wide = _dtype("int64")
    return wide if wide.itemsize == 8 else _dtype("uint32")


def _number(value: Any) -> Any:
    """A comparison's operand as an attribute: a Python int or float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = value.item() if hasattr(value, "item") else value
    if not isinstance(value, (int, float)):
        raise TypeError(f"a comparison's value is a number, not {type(value).__name__}")
    return value
