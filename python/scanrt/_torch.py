"""scanrt's functions as PyTorch operators (``torch.ops.scanrt.*``): they carry autograd
and run inside ``torch.compile`` graphs and captured CUDA graphs. The public functions
route tensors here when they require gradients or are being compiled.

Every operator works on the last axis of a contiguous tensor; the public functions move
the axis there (``movedim``, differentiable) first.

Gradients:
- a sum scan's is the same scan of the gradient in the other direction;
- cummax/cummin send each gradient to the index its value came from;
- logcumsumexp's is ``exp(x_i) * sum_{j >= i} g_j exp(-y_j)``, evaluated stably as the
  reverse logcumsumexp of ``log|g_j| - y_j`` for the positive and negative parts;
- the linear recurrence's is its adjoint, a recurrence in the other direction whose
  coefficient is the neighbour's (``recipes::linear_recurrence_adjoint``):
  ``l_t = g_t + a_{t+1} l_{t+1}``, then ``db = l``, ``da = l * h_{t-1}``,
  ``dh0 = a_0 l_0``; the adjoint's own gradient is the recurrence again (double
  backward);
- cumprod's (inclusive, forward, no initial value) is PyTorch's own.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor
from torch.types import Number

from . import _arrays, _scanrt

_DTYPES = {"int64": torch.int64, "uint64": torch.uint64, "int32": torch.int32, "uint32": torch.uint32,
           "float32": torch.float32, "float64": torch.float64}


def _describe(t: Tensor):
    return _arrays.describe(t)


def _stream(t: Tensor) -> int:
    return _arrays.stream_of(t)


@torch.library.custom_op("scanrt::scan", mutates_args=())
def scan_op(x: Tensor, op: str, exclusive: bool, reverse: bool, initial: Optional[float], deterministic: bool,
            dtype: torch.dtype) -> Tensor:
    x = x.contiguous()
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    init = None if initial is None else (int(initial) if not dtype.is_floating_point else initial)
    _scanrt.scan(_describe(x), _describe(out), op, not exclusive, reverse, init, deterministic, _stream(x))
    return out


@scan_op.register_fake
def _(x, op, exclusive, reverse, initial, deterministic, dtype):
    return x.new_empty(x.shape, dtype=dtype)


def _scan_setup(ctx, inputs, output):
    x, op, exclusive, reverse, initial, deterministic, dtype = inputs
    ctx.op, ctx.exclusive, ctx.reverse, ctx.deterministic = op, exclusive, reverse, deterministic
    ctx.has_initial = initial is not None
    ctx.x_dtype = x.dtype
    if op == "prod":
        ctx.save_for_backward(x)


def _scan_backward(ctx, grad):
    if ctx.op == "sum":
        g = scan_op(grad.contiguous(), "sum", ctx.exclusive, not ctx.reverse, None, ctx.deterministic, grad.dtype)
        return g.to(ctx.x_dtype), None, None, None, None, None, None
    if ctx.op == "prod" and not ctx.exclusive and not ctx.reverse and not ctx.has_initial:
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            (g,) = torch.autograd.grad(torch.cumprod(xx, -1), xx, grad)
        return g, None, None, None, None, None, None
    raise NotImplementedError(f"scanrt: no gradient for this {ctx.op} scan (exclusive, reverse or initial cumprod)")


scan_op.register_autograd(_scan_backward, setup_context=_scan_setup)


def _recipe(recipe: str, x: Tensor, outs, row: int, exclusive: bool, reverse: bool, initial, deterministic: bool,
            segments: Optional[Tensor], offsets: Optional[Tensor], keys: Optional[Tensor]) -> None:
    """A recipe over the rows of ``x`` (``row`` elements; 0 with segments)."""
    opt = lambda t: None if t is None else _describe(t)  # noqa: E731
    _scanrt.recipe_scan(recipe, [_describe(x)], [_describe(o) for o in outs], row, not exclusive, reverse, initial,
                        deterministic, _stream(x), opt(offsets), None, None, None, segments=opt(segments),
                        keys=opt(keys))


def _segmented(segments, offsets, keys) -> bool:
    return segments is not None or offsets is not None or keys is not None


@torch.library.custom_op("scanrt::extreme", mutates_args=())
def extreme_op(x: Tensor, recipe: str, reverse: bool, exclusive: bool, initial: Optional[Number],
               deterministic: bool, segments: Optional[Tensor], offsets: Optional[Tensor],
               keys: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    """Values and int64 indices along the last axis (positions in ``x`` with segments; -1
    where the initial value or nothing is the extreme)."""
    from ._recipes import _indices

    x = x.contiguous()
    values = torch.empty_like(x)
    indices = torch.empty(x.shape, dtype=torch.uint32, device=x.device)
    row = 0 if _segmented(segments, offsets, keys) else (x.shape[-1] if x.dim() else 1)
    _recipe(recipe, x, [values, indices], row, exclusive, reverse, initial, deterministic, segments, offsets, keys)
    return values, _indices(indices, row)


@extreme_op.register_fake
def _(x, recipe, reverse, exclusive, initial, deterministic, segments, offsets, keys):
    return torch.empty_like(x), x.new_empty(x.shape, dtype=torch.int64)


def _extreme_setup(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.shape = inputs[0].shape


def _extreme_backward(ctx, grad_values, grad_indices):
    # Each gradient goes to the element its value came from; none where the initial value
    # or nothing was the extreme (index -1).
    (indices,) = ctx.saved_tensors
    g = torch.zeros(ctx.shape, dtype=grad_values.dtype, device=grad_values.device)
    kept = grad_values * (indices >= 0)
    return g.scatter_add_(-1, indices.clamp(min=0), kept), None, None, None, None, None, None, None, None


extreme_op.register_autograd(_extreme_backward, setup_context=_extreme_setup)


@torch.library.custom_op("scanrt::logcumsumexp", mutates_args=())
def logcumsumexp_op(x: Tensor, reverse: bool, exclusive: bool, initial: Optional[float], deterministic: bool,
                    segments: Optional[Tensor], offsets: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    row = 0 if _segmented(segments, offsets, keys) else x.shape[-1]
    _recipe("logcumsumexp", x, [out], row, exclusive, reverse, initial, deterministic, segments, offsets, keys)
    return out


@logcumsumexp_op.register_fake
def _(x, reverse, exclusive, initial, deterministic, segments, offsets, keys):
    return torch.empty_like(x)


def _lse_setup(ctx, inputs, output):
    x, reverse, exclusive, initial, deterministic, segments, offsets, keys = inputs
    ctx.save_for_backward(x, output, segments, offsets, keys)
    ctx.reverse, ctx.exclusive, ctx.deterministic = reverse, exclusive, deterministic


def _lse_backward(ctx, grad):
    # dx_j = exp(x_j) * sum over the results i that include x_j of g_i exp(-y_i): the scan
    # in the other direction over the same segments (exclusive too), as logcumsumexps of
    # log|g| - y for the positive and negative parts; in float32 for the half types.
    x, y, segments, offsets, keys = ctx.saved_tensors
    wide = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    xw, yw, gw = x.to(wide), y.to(wide), grad.to(wide)
    result = torch.zeros_like(xw)
    for sign in (1.0, -1.0):
        part = torch.clamp(sign * gw, min=0)
        # No term where y is -inf (nothing summed yet: an exclusive head); log 0 is -inf.
        log_part = torch.where((part > 0) & (yw > -float("inf")), torch.log(part) - yw,
                               torch.full_like(part, -float("inf")))
        summed = logcumsumexp_op(log_part.contiguous(), not ctx.reverse, ctx.exclusive, None, ctx.deterministic,
                                 segments, offsets, keys)
        result = result + sign * torch.exp(xw + summed)
    return result.to(x.dtype), None, None, None, None, None, None, None


logcumsumexp_op.register_autograd(_lse_backward, setup_context=_lse_setup)


@torch.library.custom_op("scanrt::linear_recurrence", mutates_args=())
def linear_recurrence_op(a: Tensor, b: Tensor, initial: Optional[float], reverse: bool) -> Tensor:
    a, b = a.contiguous(), b.contiguous()
    h = torch.empty_like(a)
    _scanrt.recipe_scan("linear_recurrence", [_describe(a), _describe(b)], [_describe(h)], a.shape[-1], True, reverse,
                        initial, False, _stream(a))
    return h


@linear_recurrence_op.register_fake
def _(a, b, initial, reverse):
    return torch.empty_like(a)


def _lr_setup(ctx, inputs, output):
    a, b, initial, reverse = inputs
    ctx.save_for_backward(a, output)
    ctx.initial, ctx.reverse = initial, reverse


def _lr_backward(ctx, grad):
    # The gradient of b is the adjoint recurrence lam_t = g_t + a_{t+1} lam_{t+1}, scanned
    # in the other direction (the recipe reads a_{t+1} at the neighbour: no shifted copy);
    # that of a_t is lam_t h_{t-1}, h_{-1} = h0.
    a, h = ctx.saved_tensors
    h0 = 0.0 if ctx.initial is None else ctx.initial
    lam = linear_recurrence_adjoint_op(a, grad, not ctx.reverse)
    return _times_neighbour(lam, h, ctx.reverse, h0), lam, None, None


def _times_neighbour(x: Tensor, y: Tensor, after: bool, edge: float) -> Tensor:
    """x_t * y_{t-1} along the last axis (y_{t+1} when `after`), `edge` beyond the end:
    products into slices of one new tensor, or differentiable ones when a graph is being
    built (double backward)."""
    if torch.is_grad_enabled():
        products = x[..., :-1] * y[..., 1:] if after else x[..., 1:] * y[..., :-1]
        end = x[..., -1:] * edge if after else x[..., :1] * edge
        return torch.cat([products, end] if after else [end, products], -1)
    out = torch.empty_like(x)
    if after:
        torch.mul(x[..., :-1], y[..., 1:], out=out[..., :-1])
        torch.mul(x[..., -1:], edge, out=out[..., -1:])
    else:
        torch.mul(x[..., 1:], y[..., :-1], out=out[..., 1:])
        torch.mul(x[..., :1], edge, out=out[..., :1])
    return out


linear_recurrence_op.register_autograd(_lr_backward, setup_context=_lr_setup)


@torch.library.custom_op("scanrt::linear_recurrence_adjoint", mutates_args=())
def linear_recurrence_adjoint_op(a: Tensor, g: Tensor, reverse: bool, initial: Optional[float] = None) -> Tensor:
    """lam_t = g_t + a_s lam_s, s the element before t in the scan's direction (per row);
    the first element adds `initial`."""
    a, g = a.contiguous(), g.contiguous()
    lam = torch.empty_like(a)
    _scanrt.recipe_scan("linear_recurrence_adjoint", [_describe(a), _describe(g)], [_describe(lam)], a.shape[-1], True,
                        reverse, initial, False, _stream(a))
    return lam


@linear_recurrence_adjoint_op.register_fake
def _(a, g, reverse, initial=None):
    return torch.empty_like(a)


def _adjoint_setup(ctx, inputs, output):
    a, g, reverse, initial = inputs
    ctx.save_for_backward(a, output)
    ctx.reverse = reverse


def _adjoint_backward(ctx, grad):
    # lam = L^-1 g, L bidiagonal: the gradient of g is L^-T grad, the recurrence
    # mu_t = grad_t + a_t mu_s in the other direction (s the element before t there); that
    # of a_k is mu at the element after k in the adjoint's direction times lam_k (0 for
    # the last element, whose a the adjoint never reads).
    a, lam = ctx.saved_tensors
    mu = linear_recurrence_op(a, grad, None, not ctx.reverse)
    return _times_neighbour(lam, mu, not ctx.reverse, 0.0), mu, None, None


linear_recurrence_adjoint_op.register_autograd(_adjoint_backward, setup_context=_adjoint_setup)


@torch.library.custom_op("scanrt::sequences_recurrence", mutates_args=())
def sequences_recurrence_op(a: Tensor, b: Tensor, offsets: Optional[Tensor], h0: Optional[Tensor],
                            scalar: Optional[float], reverse: bool) -> Tuple[Tensor, Tensor]:
    from . import _recurrence_with_states

    count = 1 if offsets is None else max(offsets.shape[0] - 1, 0)
    h, final = _recurrence_with_states(a.contiguous(), b.contiguous(), h0 if h0 is not None else scalar, reverse,
                                       offsets, True, count)
    return h, final.contiguous()


def _state_type(a: Tensor) -> torch.dtype:
    """The recurrence's state type: f32 for the half types."""
    return torch.float32 if a.dtype in (torch.float16, torch.bfloat16) else a.dtype


@sequences_recurrence_op.register_fake
def _(a, b, offsets, h0, scalar, reverse):
    count = 1 if offsets is None else max(offsets.shape[0] - 1, 0)
    return torch.empty_like(a), a.new_empty((count,), dtype=_state_type(a))


def _seq_setup(ctx, inputs, output):
    a, b, offsets, h0, scalar, reverse = inputs
    ctx.save_for_backward(a, output[0], offsets, h0)
    ctx.scalar, ctx.reverse = scalar, reverse


def _seq_backward(ctx, grad, grad_final):
    # Per sequence [lo, hi) the gradient of b is the adjoint recurrence
    # lam_t = g_t + a_{t+1} lam_{t+1} in the other direction, started from the final
    # state's gradient (a carry in per sequence); each sequence's total passes on the
    # gradient of its h0 (a_lo lam_lo; the final gradient for an empty sequence). The
    # gradient of a_t is lam_t h_{t-1} (h_{lo-1} = h0). Writes at sequence positions go
    # through a buffer one longer than the data, whose last slot takes the empty
    # sequences' writes, so no index depends on the data (no host synchronisation).
    a, h, offsets, h0 = ctx.saved_tensors
    n, count = a.shape[0], (1 if offsets is None else max(offsets.shape[0] - 1, 0))
    grad = torch.zeros_like(a) if grad is None else grad.contiguous()
    state = _state_type(a)
    grad_final = a.new_zeros((count,), dtype=state) if grad_final is None else grad_final.contiguous()
    lam, grad_h0 = sequences_adjoint_op(a, grad, offsets, grad_final, not ctx.reverse)
    start = 0.0 if ctx.scalar is None else ctx.scalar  # where no h0 array says otherwise
    o = torch.tensor([0, n], device=a.device) if offsets is None else offsets.to(torch.int64).clamp(0, n)
    lo, hi = o[:-1], o[1:]
    first = torch.where(lo < hi, hi - 1 if ctx.reverse else lo, torch.full_like(lo, n))
    h0_all = (h0 if h0 is not None else a.new_full((count,), start)).to(a.dtype)
    zero, start_t = a.new_zeros(1), a.new_full((1,), start)
    # h before each element in traversal order: the sequences' h0, the start value at
    # the heads of the elements outside every sequence.
    before = torch.cat([h[1:], start_t, zero]) if ctx.reverse else torch.cat([start_t, h[:-1], zero])
    if offsets is not None:
        outside = (o[:1] - 1).clamp(0, n) if ctx.reverse else o[-1:]
        outside = torch.where(outside < n, outside, torch.full_like(outside, n))
        if ctx.reverse:
            outside = torch.where(o[:1] > 0, outside, torch.full_like(outside, n))
        before.index_put_((outside,), start_t)
    before.index_put_((first,), h0_all)
    grad_a = lam * before[:n]
    return grad_a, lam, None, (grad_h0.to(h0.dtype) if h0 is not None else None), None, None


@torch.library.custom_op("scanrt::sequences_adjoint", mutates_args=())
def sequences_adjoint_op(a: Tensor, g: Tensor, offsets: Optional[Tensor], u: Tensor,
                         reverse: bool) -> Tuple[Tensor, Tensor]:
    """The adjoint recurrence per sequence, sequence i started from u[i]: lam, and what
    each sequence's total passes on (a_first lam_first; u[i] when empty)."""
    a, g = a.contiguous(), g.contiguous()
    lam = torch.empty_like(a)
    # States (q, p, a, has): the carry in passes u, (0, u, 1, 1); a total passes a * p.
    ones = torch.ones_like(u)
    states_in = torch.stack([torch.zeros_like(u), u, ones, ones], -1)
    states_out = torch.empty_like(states_in)
    _scanrt.recipe_scan("linear_recurrence_adjoint", [_describe(a), _describe(g)], [_describe(lam)], 0, True,
                        reverse, None, False, _stream(a), None if offsets is None else _describe(offsets),
                        _describe(states_in), _describe(states_out))
    return lam, states_out[:, 1] * states_out[:, 2]


@sequences_adjoint_op.register_fake
def _(a, g, offsets, u, reverse):
    return torch.empty_like(a), torch.empty_like(u)


sequences_recurrence_op.register_autograd(_seq_backward, setup_context=_seq_setup)


def sequences_recurrence(a, b, initial, reverse, offsets, return_final):
    array = initial is not None and hasattr(initial, "shape")
    h, final = sequences_recurrence_op(a, b, offsets, initial if array else None,
                                       None if initial is None or array else float(initial), reverse)
    return (h, final) if return_final else h


# The public functions' torch paths: move the axis last (differentiably), run the
# operator, move it back.

def scan(x, op, axis, exclusive, reverse, initial, deterministic, dtype, out):
    from . import _WIDENED

    moved = x.movedim(axis, -1) if axis % x.dim() != x.dim() - 1 else x
    name = str(x.dtype).replace("torch.", "")
    out_dtype = _DTYPES[dtype] if isinstance(dtype, str) else (dtype or _DTYPES.get(_WIDENED.get(name, name), x.dtype))
    y = scan_op(moved, op, exclusive, reverse, None if initial is None else float(initial), deterministic, out_dtype)
    y = y.movedim(-1, axis) if y is not moved and axis % x.dim() != x.dim() - 1 else y
    if out is not None:
        out.copy_(y)
        return out
    return y


def extreme(x, recipe, axis, exclusive, reverse, initial, deterministic, segments, offsets, keys):
    from ._recipes import _INITIAL_INDEX

    if x.numel() >= _INITIAL_INDEX:
        raise ValueError(f"{recipe} of tensors that require gradients indexes fewer than 2^32 - 2 elements")
    if _segmented(segments, offsets, keys):
        return extreme_op(x, recipe, reverse, exclusive, initial, deterministic, segments, offsets, keys)
    last = axis % x.dim() == x.dim() - 1
    moved = x if last else x.movedim(axis, -1)
    v, i = extreme_op(moved, recipe, reverse, exclusive, initial, deterministic, None, None, None)
    return (v, i) if last else (v.movedim(-1, axis), i.movedim(-1, axis))


def logcumsumexp(x, axis, exclusive, reverse, initial, deterministic, segments, offsets, keys):
    if _segmented(segments, offsets, keys):
        return logcumsumexp_op(x, reverse, exclusive, initial, deterministic, segments, offsets, keys)
    last = axis % x.dim() == x.dim() - 1
    y = logcumsumexp_op(x if last else x.movedim(axis, -1), reverse, exclusive, initial, deterministic, None, None,
                        None)
    return y if last else y.movedim(-1, axis)


def linear_recurrence(a, b, axis, initial, reverse):
    last = axis % a.dim() == a.dim() - 1
    move = (lambda t: t) if last else (lambda t: t.movedim(axis, -1))
    h = linear_recurrence_op(move(a), move(b), None if initial is None else float(initial), reverse)
    return h if last else h.movedim(-1, axis)


def linear_recurrence_adjoint(a, g, axis, initial, reverse):
    last = axis % a.dim() == a.dim() - 1
    move = (lambda t: t) if last else (lambda t: t.movedim(axis, -1))
    lam = linear_recurrence_adjoint_op(move(a), move(g), reverse, None if initial is None else float(initial))
    return lam if last else lam.movedim(-1, axis)
