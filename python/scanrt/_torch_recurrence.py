"""The linear recurrence and its adjoint as PyTorch operators (the two forms of
``_torch.define``), with autograd.

The recurrence's gradient is its adjoint, a recurrence in the other direction whose
coefficient is the neighbour's (``recipes::linear_recurrence_adjoint``):
``l_t = g_t + a_{t+1} l_{t+1}``, then ``db = l``, ``da = l * h_{t-1}``, ``dh0 = a_0 l_0``;
the adjoint's own gradient is the recurrence again (double backward). Segments by flags
or keys restart both at the same elements; an exclusive recurrence is the inclusive one
moved by one element, ``h0`` at each start.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _arrays, _core, _scanrt
from ._torch import define, describe, ops, segmented, stream


def _pair(recipe: str, a: Tensor, b: Tensor, initial: Optional[float], reverse: bool, deterministic: bool,
          segments: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    """A recipe of two inputs along the last axis (or the 1-D segments given)."""
    a, b = a.contiguous(), b.contiguous()
    h = torch.empty_like(a)
    row = 0 if segmented(segments, keys) else a.shape[-1]
    opt = lambda t: None if t is None else describe(t)  # noqa: E731
    _scanrt.recipe_scan(recipe=recipe, inputs=[describe(a), describe(b)], outputs=[describe(h)], row=row,
                        reverse=reverse, initial=initial, deterministic=deterministic, stream=stream(a),
                        segments=opt(segments), keys=opt(keys))
    return h


def starts_of(segments: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    """Where segments start (forward sense; element 0 always)."""
    if segments is not None:
        s = segments.to(torch.bool)
        return torch.cat([s.new_ones(1), s[1:]])
    assert keys is not None, "segments by flags or by keys"
    return torch.cat([keys.new_ones(1, dtype=torch.bool), keys[1:] != keys[:-1]])


def outside(segments: Optional[Tensor], keys: Optional[Tensor], after: bool) -> Optional[Tensor]:
    """Where the neighbour (``t + 1`` when ``after``, else ``t - 1``) lies outside the
    element's segment or the array; None without segments (rows: the edge column)."""
    if not segmented(segments, keys):
        return None
    s = starts_of(segments, keys)
    return torch.cat([s[1:], s.new_ones(1)]) if after else s


def shifted(y: Tensor, after: bool, edge: float, out_of: Optional[Tensor]) -> Tensor:
    """``y`` at each element's neighbour along the last axis (``t + 1`` when ``after``),
    ``edge`` where the neighbour is outside (``out_of``, or beyond the row)."""
    pad = torch.full_like(y[..., :1], edge)
    moved = torch.cat([y[..., 1:], pad], -1) if after else torch.cat([pad, y[..., :-1]], -1)
    return moved if out_of is None else torch.where(out_of, torch.full_like(y, edge), moved)


def times_neighbour(x: Tensor, y: Tensor, after: bool, edge: float, out_of: Optional[Tensor]) -> Tensor:
    """``x_t * y`` at the neighbour (``edge`` outside): products into slices of one new
    tensor, or differentiable ones when a graph is being built (double backward) or
    segments decide the edges."""
    if torch.is_grad_enabled() or out_of is not None:
        return x * shifted(y, after, edge, out_of)
    out = torch.empty_like(x)
    if after:
        torch.mul(x[..., :-1], y[..., 1:], out=out[..., :-1])
        torch.mul(x[..., -1:], edge, out=out[..., -1:])
    else:
        torch.mul(x[..., 1:], y[..., :-1], out=out[..., 1:])
        torch.mul(x[..., :1], edge, out=out[..., :1])
    return out


def _recurrence(a: Tensor, b: Tensor, initial: Optional[float], reverse: bool, deterministic: bool,
                segments: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    return _pair("linear_recurrence", a, b, initial, reverse, deterministic, segments, keys)


def _recurrence_fake(a, b, initial, reverse, deterministic, segments, keys):
    return a.new_empty(a.shape)


def _recurrence_setup(ctx, inputs, output):
    a, b, initial, reverse, deterministic, segments, keys = inputs
    ctx.save_for_backward(a, output, segments, keys)
    ctx.initial, ctx.reverse, ctx.deterministic = initial, reverse, deterministic


def _recurrence_backward(ops, ctx, grad):
    # The gradient of b is the adjoint recurrence lam_t = g_t + a_{t+1} lam_{t+1}, scanned
    # in the other direction (the recipe reads a_{t+1} at the neighbour: no shifted copy);
    # that of a_t is lam_t h_{t-1}, h0 before each segment's first element.
    a, h, segments, keys = ctx.saved_tensors
    h0 = 0.0 if ctx.initial is None else ctx.initial
    lam = ops.linear_recurrence_adjoint(a, grad, not ctx.reverse, None, ctx.deterministic, segments, keys)
    grad_a = times_neighbour(lam, h, ctx.reverse, h0, outside(segments, keys, ctx.reverse))
    return grad_a, lam, None, None, None, None, None


define("linear_recurrence", _recurrence, _recurrence_fake, _recurrence_setup, _recurrence_backward, data=(0, 1))


def _adjoint(a: Tensor, g: Tensor, reverse: bool, initial: Optional[float], deterministic: bool,
             segments: Optional[Tensor], keys: Optional[Tensor]) -> Tensor:
    """lam_t = g_t + a_s lam_s, s the element before t in the scan's direction (per row or
    segment); the first element adds `initial`."""
    return _pair("linear_recurrence_adjoint", a, g, initial, reverse, deterministic, segments, keys)


def _adjoint_fake(a, g, reverse, initial, deterministic, segments, keys):
    return a.new_empty(a.shape)


def _adjoint_setup(ctx, inputs, output):
    a, g, reverse, initial, deterministic, segments, keys = inputs
    ctx.save_for_backward(a, output, segments, keys)
    ctx.reverse, ctx.deterministic = reverse, deterministic


def _adjoint_backward(ops, ctx, grad):
    # lam = L^-1 g, L bidiagonal: the gradient of g is L^-T grad, the recurrence
    # mu_t = grad_t + a_t mu_s in the other direction (s the element before t there); that
    # of a_k is mu at the element after k in the adjoint's direction times lam_k (0 for
    # the last element of a segment, whose a the adjoint never reads).
    a, lam, segments, keys = ctx.saved_tensors
    mu = ops.linear_recurrence(a, grad, None, not ctx.reverse, ctx.deterministic, segments, keys)
    grad_a = times_neighbour(lam, mu, not ctx.reverse, 0.0, outside(segments, keys, not ctx.reverse))
    return grad_a, mu, None, None, None, None, None


define("linear_recurrence_adjoint", _adjoint, _adjoint_fake, _adjoint_setup, _adjoint_backward, data=(0, 1))


def linear_recurrence(a, b, axis, initial, exclusive, reverse, deterministic, segments, keys):
    h0 = 0.0 if initial is None else float(initial)
    if segmented(segments, keys):
        h = ops().linear_recurrence(a, b, None if initial is None else h0, reverse, deterministic, segments, keys)
        return shifted(h, reverse, h0, outside(segments, keys, reverse)) if exclusive else h
    axis = _arrays.normal_axis(a, axis)
    last = axis == a.dim() - 1
    move = (lambda t: t) if last else (lambda t: t.movedim(axis, -1))
    h = ops().linear_recurrence(move(a), move(b), None if initial is None else h0, reverse, deterministic, None, None)
    if exclusive:
        h = shifted(h, reverse, h0, None)
    return h if last else h.movedim(-1, axis)


def linear_recurrence_adjoint(a, g, axis, initial, reverse, deterministic, segments, keys):
    init = None if initial is None else float(initial)
    if segmented(segments, keys):
        return ops().linear_recurrence_adjoint(a, g, reverse, init, deterministic, segments, keys)
    axis = _arrays.normal_axis(a, axis)
    last = axis == a.dim() - 1
    move = (lambda t: t) if last else (lambda t: t.movedim(axis, -1))
    lam = ops().linear_recurrence_adjoint(move(a), move(g), reverse, init, deterministic, None, None)
    return lam if last else lam.movedim(-1, axis)


# ---------------------------------------------------------------- sequences by offsets, with states

def _sequences(a: Tensor, b: Tensor, offsets: Optional[Tensor], h0: Optional[Tensor], scalar: Optional[float],
               reverse: bool, deterministic: bool) -> Tuple[Tensor, Tensor]:
    count = 1 if offsets is None else max(offsets.shape[0] - 1, 0)
    h, final = _core.recurrence_with_states(a.contiguous(), b.contiguous(), h0 if h0 is not None else scalar, False,
                                            reverse, deterministic, offsets, True, count)
    return h, final.contiguous()


def _state_type(a: Tensor) -> torch.dtype:
    """The recurrence's state type: f32 for the half types."""
    return torch.float32 if a.dtype in (torch.float16, torch.bfloat16) else a.dtype


def _sequences_fake(a, b, offsets, h0, scalar, reverse, deterministic):
    count = 1 if offsets is None else max(offsets.shape[0] - 1, 0)
    return a.new_empty(a.shape), a.new_empty((count,), dtype=_state_type(a))


def _sequences_setup(ctx, inputs, output):
    a, b, offsets, h0, scalar, reverse, deterministic = inputs
    ctx.save_for_backward(a, output[0], offsets, h0)
    ctx.scalar, ctx.reverse, ctx.deterministic = scalar, reverse, deterministic


def _sequences_backward(ops, ctx, grad, grad_final):
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
    lam, grad_h0 = ops.sequences_adjoint(a, grad, offsets, grad_final, not ctx.reverse, ctx.deterministic)
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
    return grad_a, lam, None, (grad_h0.to(h0.dtype) if h0 is not None else None), None, None, None


def _sequences_adjoint(a: Tensor, g: Tensor, offsets: Optional[Tensor], u: Tensor, reverse: bool,
                       deterministic: bool) -> Tuple[Tensor, Tensor]:
    """The adjoint recurrence per sequence, sequence i started from u[i]: lam, and what
    each sequence's total passes on (a_first lam_first; u[i] when empty)."""
    a, g = a.contiguous(), g.contiguous()
    lam = torch.empty_like(a)
    # States (q, p, a, has): the carry in passes u, (0, u, 1, 1); a total passes a * p.
    ones = torch.ones_like(u)
    states_in = torch.stack([torch.zeros_like(u), u, ones, ones], -1)
    states_out = torch.empty_like(states_in)
    _scanrt.recipe_scan(recipe="linear_recurrence_adjoint", inputs=[describe(a), describe(g)],
                        outputs=[describe(lam)], reverse=reverse, deterministic=deterministic, stream=stream(a),
                        offsets=None if offsets is None else describe(offsets), carry_in=describe(states_in),
                        carry_out=describe(states_out))
    return lam, states_out[:, 1] * states_out[:, 2]


def _sequences_adjoint_fake(a, g, offsets, u, reverse, deterministic):
    return a.new_empty(a.shape), u.new_empty(u.shape)


def _no_gradient(ops, ctx, *grads):
    raise NotImplementedError("scanrt: sequences_adjoint has no gradient (use linear_recurrence_adjoint)")


define("sequences_recurrence", _sequences, _sequences_fake, _sequences_setup, _sequences_backward, data=())
define("sequences_adjoint", _sequences_adjoint, _sequences_adjoint_fake, lambda ctx, inputs, output: None,
       _no_gradient, data=())


def sequences_recurrence(a, b, initial, reverse, deterministic, offsets, return_final):
    array = initial is not None and hasattr(initial, "shape")
    h, final = ops().sequences_recurrence(a, b, offsets, initial if array else None,
                                          None if initial is None or array else float(initial), reverse,
                                          deterministic)
    return (h, final) if return_final else h


