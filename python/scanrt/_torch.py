"""scanrt's functions as PyTorch operators (``torch.ops.scanrt.*``): they carry autograd
and run inside ``torch.compile`` graphs, captured CUDA graphs and torch.func's transforms.
The public functions route tensors here when they require gradients, are being compiled
or belong to a torch.func transform.

Each operator comes in two forms with one implementation, one backward and one
``setup_context``: the torch custom operator (``GRAPH``), which ``torch.compile``
traces, and an ``autograd.Function`` twin (``EAGER``) that eager calls take, free of the
custom operators' dispatch (about 100 us a call, more than a small scan's kernel), with a
``vmap`` rule. A backward runs its scans through the form its forward ran in.

Every operator works on the last axis of a contiguous tensor (or a 1-D tensor with
segments); the public functions move the axis there (``movedim``, differentiable) first.

Gradients:
- a sum scan's is the same scan of the gradient in the other direction (over the same
  segments);
- cummax/cummin send each gradient to the index its value came from (none where the
  initial value, or nothing, is the extreme);
- logcumsumexp's is ``exp(x_i) * sum_j g_j exp(-y_j)`` over the results ``j`` that include
  ``x_i``: the scan in the other direction over the same segments, evaluated stably as
  logcumsumexps of ``log|g_j| - y_j`` for the positive and negative parts;
- the linear recurrence's is its adjoint (``_torch_recurrence.py``);
- a product scan's is PyTorch's own ``cumprod``'s (zeros included), differentiated in the
  same direction, exclusive form and initial value; by segments it has none (a
  ``TypeError``).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor
from torch.types import Number

from . import _arrays, _core, _scanrt

_DTYPES = {"int64": torch.int64, "uint64": torch.uint64, "int32": torch.int32, "uint32": torch.uint32,
           "float32": torch.float32, "float64": torch.float64}


class OpSet:
    """One form of every operator, by name (``GRAPH`` or ``EAGER``)."""


GRAPH, EAGER = OpSet(), OpSet()


def ops() -> OpSet:
    """The form a call takes now: the custom operators while ``torch.compile`` traces."""
    return GRAPH if torch.compiler.is_compiling() else EAGER


# What torch's ``Function.apply`` does outside torch.func's transforms and tracing, less
# its binding of the forward's signature (``inspect``, tens of microseconds a call), which
# changes nothing here: the twins' ``forward(*inputs)`` has no defaults to fill in. Without
# these (private) hooks, every call takes torch's own ``apply``.
try:
    from torch._C import _are_functorch_transforms_active as _TRANSFORMS_ACTIVE
    from torch._functorch.utils import unwrap_dead_wrappers as _UNWRAP_DEAD
except ImportError:
    _TRANSFORMS_ACTIVE = _UNWRAP_DEAD = None


def _batched(apply, data, info, in_dims, inputs):
    """The vmap rule of an operator along the last axis: each batch element is one more
    row, so the batch dimension goes first (unbatched data broadcast to it) and the
    operator runs once. ``data``: the positions of the tensors it scans; any other tensor
    (segment data) would tie rows to one layout, so it is refused."""
    args = list(inputs)
    for k, (value, dim) in enumerate(zip(inputs, in_dims)):
        if not isinstance(value, torch.Tensor):
            continue
        if k not in data:
            raise NotImplementedError("scanrt: vmap of a scan by segments (or of sequences by offsets)")
        if dim is None:
            args[k] = value.expand(info.batch_size, *value.shape)
        else:
            args[k] = value.movedim(dim, 0)
    output = apply(*args)
    return output, (0,) * len(output) if isinstance(output, tuple) else 0


def define(name, impl, fake, setup, backward, non_differentiable=(), data=(0,)):
    """Registers ``scanrt::name`` (``impl``'s schema, ``fake`` for tracing, autograd) in
    ``GRAPH`` and its ``autograd.Function`` twin in ``EAGER``. ``backward(ops, ctx,
    *grads)`` runs its scans through ``ops``, the set its forward ran in. ``data``: the
    positions of the tensors the operator scans along their last axis (for ``vmap``).
    Callers of an ``EAGER`` operator pass every argument, defaults included."""
    op = torch.library.custom_op(f"scanrt::{name}", impl, mutates_args=())
    op.register_fake(fake)
    op.register_autograd(lambda ctx, *grads: backward(GRAPH, ctx, *grads), setup_context=setup)

    class Twin(torch.autograd.Function):
        @classmethod
        def apply(cls, *inputs):
            if _TRANSFORMS_ACTIVE is None or _TRANSFORMS_ACTIVE() or torch.compiler.is_compiling():
                return super().apply(*inputs)
            return super(torch.autograd.Function, cls).apply(*_UNWRAP_DEAD(inputs))

        # forward and setup_context apart, as torch.func's transforms require.
        @staticmethod
        def forward(*inputs):
            return impl(*inputs)

        @staticmethod
        def setup_context(ctx, inputs, output):
            setup(ctx, inputs, output)
            if non_differentiable:
                ctx.mark_non_differentiable(*(output[k] for k in non_differentiable))

        @staticmethod
        def backward(ctx, *grads):
            return backward(EAGER, ctx, *grads)

        @staticmethod
        def vmap(info, in_dims, *inputs):
            return _batched(Twin.apply, data, info, in_dims, inputs)

    Twin.__name__ = Twin.__qualname__ = f"{name}_eager"
    setattr(GRAPH, name, op)
    setattr(EAGER, name, Twin.apply)


def describe(t: Tensor):
    return _arrays.describe(t)


def stream(t: Tensor) -> int:
    return _arrays.stream_of(t)


def segmented(*data) -> bool:
    return any(d is not None for d in data)


# ---------------------------------------------------------------- sums and products

def _scan(x: Tensor, op: str, exclusive: bool, reverse: bool, initial: Optional[Number], deterministic: bool,
          dtype: torch.dtype, segments: Optional[Tensor], offsets: Optional[Tensor],
          keys: Optional[Tensor]) -> Tensor:
    x = x.contiguous()
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    init = None if initial is None else (int(initial) if not dtype.is_floating_point else float(initial))
    opt = lambda t: None if t is None else describe(t)  # noqa: E731
    _scanrt.scan(x=describe(x), out=describe(out), op=op, inclusive=not exclusive, reverse=reverse, initial=init,
                 deterministic=deterministic, stream=stream(x), segments=opt(segments), offsets=opt(offsets),
                 keys=opt(keys))
    return out


def _scan_fake(x, op, exclusive, reverse, initial, deterministic, dtype, segments, offsets, keys):
    return x.new_empty(x.shape, dtype=dtype)


def _scan_setup(ctx, inputs, output):
    x, op, exclusive, reverse, initial, deterministic, dtype, segments, offsets, keys = inputs
    ctx.op, ctx.exclusive, ctx.reverse, ctx.deterministic = op, exclusive, reverse, deterministic
    ctx.initial = initial
    ctx.x_dtype = x.dtype
    ctx.save_for_backward(x if op == "prod" else None, segments, offsets, keys)


def _prod_of(x: Tensor, exclusive: bool, reverse: bool, initial: Optional[Number]) -> Tensor:
    """A product scan along the last axis in PyTorch's differentiable operators, whose
    gradient (zeros included) is the scan's."""
    y = torch.cumprod(x.flip(-1) if reverse else x, -1)
    if initial is not None:
        y = y * initial
    if exclusive:
        y = torch.cat([torch.full_like(y[..., :1], 1.0 if initial is None else initial), y[..., :-1]], -1)
    return y.flip(-1) if reverse else y


def _scan_backward(ops, ctx, grad):
    x, segments, offsets, keys = ctx.saved_tensors
    none = (None,) * 9
    if ctx.op == "sum":
        g = ops.scan(grad.contiguous(), "sum", ctx.exclusive, not ctx.reverse, None, ctx.deterministic, grad.dtype,
                     segments, offsets, keys)
        return (g.to(ctx.x_dtype),) + none
    if ctx.op == "prod":
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            (g,) = torch.autograd.grad(_prod_of(xx, ctx.exclusive, ctx.reverse, ctx.initial), xx, grad)
        return (g,) + none
    raise NotImplementedError(f"scanrt: a {ctx.op} scan has no gradient")


define("scan", _scan, _scan_fake, _scan_setup, _scan_backward)


# ---------------------------------------------------------------- the recipes of one input

def _recipe(recipe: str, x: Tensor, outs, row: int, exclusive: bool, reverse: bool, initial, deterministic: bool,
            segments: Optional[Tensor], offsets: Optional[Tensor], keys: Optional[Tensor]) -> None:
    """A recipe over the rows of ``x`` (``row`` elements; 0 with segments, read as runs of
    elements: copies, held here until the call returns, where they are not)."""
    segments, offsets, keys = (None if t is None else t.contiguous() for t in (segments, offsets, keys))
    opt = lambda t: None if t is None else describe(t)  # noqa: E731
    _scanrt.recipe_scan(recipe=recipe, inputs=[describe(x)], outputs=[describe(o) for o in outs], row=row,
                        inclusive=not exclusive, reverse=reverse, initial=initial, deterministic=deterministic,
                        stream=stream(x), offsets=opt(offsets), segments=opt(segments), keys=opt(keys))


def _extreme(x: Tensor, recipe: str, reverse: bool, exclusive: bool, initial: Optional[Number], deterministic: bool,
             segments: Optional[Tensor], offsets: Optional[Tensor], keys: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    """Values and int64 indices along the last axis (positions in ``x`` with segments; -1
    where the initial value or nothing is the extreme)."""
    x = x.contiguous()
    values = torch.empty_like(x)
    indices = torch.empty(x.shape, dtype=torch.uint32, device=x.device)
    row = 0 if segmented(segments, offsets, keys) else (x.shape[-1] if x.dim() else 1)
    _recipe(recipe, x, [values, indices], row, exclusive, reverse, initial, deterministic, segments, offsets, keys)
    return values, _core.indices_of(indices, 0 if row == x.numel() else row, exclusive or initial is not None)


def _extreme_fake(x, recipe, reverse, exclusive, initial, deterministic, segments, offsets, keys):
    return x.new_empty(x.shape), x.new_empty(x.shape, dtype=torch.int64)


def _extreme_setup(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.shape = inputs[0].shape


def _extreme_backward(ops, ctx, grad_values, grad_indices):
    # Each gradient goes to the element its value came from; none where the initial value
    # or nothing was the extreme (index -1).
    (indices,) = ctx.saved_tensors
    g = torch.zeros(ctx.shape, dtype=grad_values.dtype, device=grad_values.device)
    kept = grad_values * (indices >= 0)
    return g.scatter_add_(-1, indices.clamp(min=0), kept), None, None, None, None, None, None, None, None


define("extreme", _extreme, _extreme_fake, _extreme_setup, _extreme_backward, non_differentiable=(1,))


def _logcumsumexp(x: Tensor, reverse: bool, exclusive: bool, initial: Optional[float], deterministic: bool,
                  segments: Optional[Tensor], offsets: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    row = 0 if segmented(segments, offsets, keys) else x.shape[-1]
    _recipe("logcumsumexp", x, [out], row, exclusive, reverse, initial, deterministic, segments, offsets, keys)
    return out


def _lse_fake(x, reverse, exclusive, initial, deterministic, segments, offsets, keys):
    return x.new_empty(x.shape)


def _lse_setup(ctx, inputs, output):
    x, reverse, exclusive, initial, deterministic, segments, offsets, keys = inputs
    ctx.save_for_backward(x, output, segments, offsets, keys)
    ctx.reverse, ctx.exclusive, ctx.deterministic = reverse, exclusive, deterministic


def _lse_backward(ops, ctx, grad):
    # In float32 for the half types.
    x, y, segments, offsets, keys = ctx.saved_tensors
    wide = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    xw, yw, gw = x.to(wide), y.to(wide), grad.to(wide)
    result = torch.zeros_like(xw)
    for sign in (1.0, -1.0):
        part = torch.clamp(sign * gw, min=0)
        # No term where y is -inf (nothing summed yet: an exclusive head); log 0 is -inf.
        log_part = torch.where((part > 0) & (yw > -float("inf")), torch.log(part) - yw,
                               torch.full_like(part, -float("inf")))
        summed = ops.logcumsumexp(log_part.contiguous(), not ctx.reverse, ctx.exclusive, None, ctx.deterministic,
                                  segments, offsets, keys)
        result = result + sign * torch.exp(xw + summed)
    return result.to(x.dtype), None, None, None, None, None, None, None


define("logcumsumexp", _logcumsumexp, _lse_fake, _lse_setup, _lse_backward)


# ---------------------------------------------------------------- the public functions' torch paths
# Move the axis last (differentiably), run the operator, move it back.

def scan(x, op, axis, exclusive, reverse, initial, deterministic, dtype, out, segments=None, offsets=None, keys=None):
    name = str(x.dtype).replace("torch.", "")
    widened = _DTYPES.get(_core.WIDENED.get(name, name), x.dtype)
    out_dtype = getattr(torch, dtype) if isinstance(dtype, str) else (dtype or widened)
    # A Python number as it is (an int64 initial past 2^53 stays exact through the
    # operator's Scalar), a NumPy scalar or one-element tensor as its number.
    init = initial.item() if hasattr(initial, "item") else initial
    if segmented(segments, offsets, keys):
        if op == "prod":
            raise TypeError("a product scan by segments is not differentiable; detach the input")
        y = ops().scan(x, op, exclusive, reverse, init, deterministic, out_dtype, segments, offsets, keys)
    else:
        axis = _arrays.normal_axis(x, axis)
        last = axis == x.dim() - 1
        moved = x if last else x.movedim(axis, -1)
        y = ops().scan(moved, op, exclusive, reverse, init, deterministic, out_dtype, None, None, None)
        y = y if last else y.movedim(-1, axis)
    return y if out is None else _arrays.copy_into(out, y)


def extreme(x, recipe, axis, exclusive, reverse, initial, deterministic, segments, offsets, keys):
    # Rows count their indices over the whole tensor: the library refuses more than they
    # number (OperatorDesc::max_length).
    if segmented(segments, offsets, keys):
        return ops().extreme(x, recipe, reverse, exclusive, initial, deterministic, segments, offsets, keys)
    axis = _arrays.normal_axis(x, axis)
    last = axis == x.dim() - 1
    moved = x if last else x.movedim(axis, -1)
    v, i = ops().extreme(moved, recipe, reverse, exclusive, initial, deterministic, None, None, None)
    return (v, i) if last else (v.movedim(-1, axis), i.movedim(-1, axis))


def logcumsumexp(x, axis, exclusive, reverse, initial, deterministic, segments, offsets, keys):
    if segmented(segments, offsets, keys):
        return ops().logcumsumexp(x, reverse, exclusive, initial, deterministic, segments, offsets, keys)
    axis = _arrays.normal_axis(x, axis)
    last = axis == x.dim() - 1
    y = ops().logcumsumexp(x if last else x.movedim(axis, -1), reverse, exclusive, initial, deterministic, None,
                           None, None)
    return y if last else y.movedim(-1, axis)
