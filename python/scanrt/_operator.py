"""User-defined scan operators from CUDA C++ source (``scanrt.Operator``)."""

from __future__ import annotations

import itertools
import sys
from typing import Any, Callable, Optional, Sequence, Tuple

from . import _arrays
from . import _scanrt

# Numbers the torch custom operators made for Operators (their names must be unique).
_TORCH_OPS = itertools.count()


def _traced(x: Any) -> bool:
    return _arrays.torch_autograd(x)


def _bytes_of(value: Any, size: int, what: str) -> bytes:
    """A state's bytes: bytes-like, or anything NumPy turns into ``size`` bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        import numpy as np

        data = np.ascontiguousarray(value).tobytes()
    if len(data) != size:
        raise ValueError(f"{what} is {len(data)} bytes; the state is {size}")
    return data


def _written(out: Any, wanted: list) -> list:
    """The output arrays ``out`` names (one, or a tuple or list of them), each writable and
    of the (shape, dtype) in ``wanted`` (the scan's length is read from the first)."""
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(wanted):
        raise TypeError(f"out takes {len(wanted)} arrays, not {len(outs)}")
    for o, (shape, dtype) in zip(outs, wanted):
        have = (tuple(o.shape), _arrays.describe_dtype(o))
        if have != (tuple(shape), dtype):
            raise ValueError(f"out arrays here are {dtype} of shape {tuple(shape)}; one is {have[1]} of shape "
                             f"{have[0]}")
        _arrays.check_writable(o)
    return outs


class Operator:
    """A scan operator written in CUDA C++, compiled with NVRTC for each GPU at its first
    scan there (and kept in scanrt's disk cache).

    ``source`` defines the state type ``state`` (``state_size`` bytes, alignment
    ``state_align``) and ``__device__ State combine(State earlier, State later)``, which
    must be associative. ``identity`` is the state's identity, as bytes (or a NumPy value
    of that size). ``load=("make", ["float32", ...])``: ``__device__ State make(int64_t i,
    float x0, ...)`` builds element i's state from up to four input arrays of those
    types; without it, inputs are uint8 arrays of whole states. ``store=("write",
    ["float32", ...])``: ``__device__ void write(const State& s, float& y0, ...)`` writes
    each result to up to two output arrays; without it, results are whole states (a
    uint8 array).

    Scans run on GPU arrays (PyTorch, CuPy, JAX, Numba) and, given host functions, on
    NumPy arrays with the host backend: ``host_combine(first: bytes, then: bytes) ->
    bytes``, ``host_load(i, x0, ...) -> bytes`` (elements as Python numbers) and
    ``host_store(state: bytes) -> value`` (a tuple for two outputs), one call per element
    and combine (``struct`` or ``numpy.frombuffer`` unpack the states). An exception they
    raise ends the scan and is raised by it. On torch tensors each Operator is also a
    torch custom operator (``torch.library``), which ``torch.compile`` graphs run; eager
    calls scan directly (captured CUDA graphs take both). It has no gradient: tensors
    that require one go through the custom operator, whose backward says so.

    >>> affine = scanrt.Operator(
    ...     "affine", SOURCE, "Affine", 8, 4, "combine",
    ...     identity=np.array([1, 0], np.float32),
    ...     load=("make", ["float32", "float32"]), store=("write", ["float32"]))
    >>> h = affine(a, b)            # h[t] = a[t] * h[t-1] + b[t]
    """

    def __init__(self, name: str, source: str, state: str, state_size: int, state_align: int, combine: str,
                 identity: Any, *, load: Optional[Tuple[str, Sequence[str]]] = None,
                 store: Optional[Tuple[str, Sequence[str]]] = None,
                 host_combine: Optional[Callable[[bytes, bytes], bytes]] = None,
                 host_load: Optional[Callable[..., bytes]] = None,
                 host_store: Optional[Callable[[bytes], Any]] = None) -> None:
        self.state_size = int(state_size)
        self.load = None if load is None else (load[0], [str(t) for t in load[1]])
        self.store = None if store is None else (store[0], [str(t) for t in store[1]])
        if host_combine is None and (host_load is not None or host_store is not None):
            raise TypeError(f"operator {name}: host_load and host_store come with a host_combine")
        host = None if host_combine is None else (host_combine, host_load, host_store)
        self._op = _scanrt.Operator(name=name, source=source, state=state, state_size=self.state_size,
                                    state_align=int(state_align), combine=combine,
                                    identity=_bytes_of(identity, self.state_size, "identity"), load=self.load,
                                    store=self.store, host=host)
        self._torch_op: Any = None
        if "torch" in sys.modules:
            # Made now, not at a first call that torch.compile might be tracing (it cannot
            # trace a registration).
            self._torch()

    @property
    def name(self) -> str:
        return self._op.name

    def __call__(self, *inputs: Any, exclusive: bool = False, reverse: bool = False, initial: Any = None,
                 deterministic: bool = False, out: Any = None, segments: Any = None, offsets: Any = None,
                 carry_in: Any = None, carry_out: Any = None, axis: Optional[int] = None, keys: Any = None) -> Any:
        """Scans the 1-D ``inputs`` (one per load type, or one uint8 array of states) and
        returns the results: one array per store type (a tuple when there are two), or a
        uint8 array of states. ``initial``: a state (bytes or a NumPy value) every
        result starts from. ``segments`` (bool or uint8 flags) or ``offsets`` (CSR) as
        for :func:`scanrt.cumsum`; ``out``: the output array (or a tuple of them).
        ``carry_in`` (instead of ``initial``) and ``carry_out``: contiguous arrays of whole
        states on the inputs' device (any element type: their bytes are the states), one
        state, or with ``offsets`` one per segment: each segment starts from its state in
        ``carry_in`` and its total state goes to ``carry_out`` (a batch of variable-length
        sequences with an initial and a final state each). Scans with carries run
        outside torch's custom operators (not inside ``torch.compile`` graphs).

        ``keys``: an array as long as the inputs; each run of equal consecutive keys is a
        segment (as a scan by key).

        ``axis``: N-D inputs (one shape; the inputs laid out alike) are scanned along
        that axis where they lie, each sequence on its own (columns, pitched rows, any
        axis), into new contiguous outputs (or ``out``); the load's index is the
        element's index along the axis; ``carry_in`` and ``carry_out`` then hold one state
        per sequence (``carry_in`` may hold one for all)."""
        if not inputs:
            raise TypeError(f"operator {self.name} takes its input arrays")
        if carry_out is not None:
            _arrays.check_carry_out(carry_out, "carry_out is an array that receives the total state")
        if (out is not None or carry_in is not None or carry_out is not None or axis is not None) and any(
                _needs_grad(x) for x in inputs):
            raise TypeError(f"operator {self.name} has no gradient with out=, carries or an axis; detach the inputs")
        if axis is not None:
            if any(v is not None for v in (segments, offsets, keys)):
                raise TypeError("a scan along an axis restarts at each sequence; segments, offsets and keys are for "
                                "1-D scans")
            if self.load is None or self.store is None:
                raise TypeError(f"operator {self.name} scans along an axis through a load and a store")
        if _arrays.library(inputs[0]) == "jax":
            from . import _jax

            if _jax.takes(out, carry_in, carry_out):
                init = None if initial is None else _bytes_of(initial, self.state_size, "initial")
                data, kind = _jax.segments_of(segments, offsets, keys)
                return _jax.operator_scan(self, list(inputs), exclusive, reverse, init, deterministic, data, kind, axis)
        if axis is not None:
            return self._along(list(inputs), axis, exclusive, reverse, initial, deterministic, out, carry_in, carry_out)
        for x in inputs:
            if len(x.shape) != 1:
                raise ValueError(f"operator scans take 1-D arrays (or an axis); one has shape {tuple(x.shape)}")
        init = None if initial is None else _bytes_of(initial, self.state_size, "initial")
        carries = (carry_in, carry_out)
        if out is None and carries == (None, None) and any(_traced(x) for x in inputs):
            # Inputs that require gradients (the operator has none: backward says so), or
            # of torch.compile and torch.func: the custom operator. Other eager calls run
            # directly, without its dispatch.
            import torch

            state = None if init is None else torch.frombuffer(bytearray(init), dtype=torch.uint8)
            outs = self._torch()(list(inputs), exclusive, reverse, deterministic, state, segments, offsets, keys)
            return outs[0] if len(outs) == 1 else tuple(outs)
        n = self._length(inputs[0])
        if out is not None:
            outs = _written(out, self._outputs(n))
        else:
            outs = [_arrays.empty(inputs[0], shape, t) for shape, t in self._outputs(n)]
        self._scan(list(inputs), outs, exclusive, reverse, init, deterministic, segments, offsets, carries, keys)
        _arrays.mark_written([carry_out] + (outs if out is not None else []))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _along(self, inputs, axis, exclusive, reverse, initial, deterministic, out, carry_in, carry_out) -> Any:
        assert self.store is not None, "checked by __call__"
        shape = tuple(inputs[0].shape)
        if out is not None:
            outs = _written(out, [(shape, t) for t in self.store[1]])
        else:
            outs = [_arrays.empty(inputs[0], shape, t) for t in self.store[1]]
        init = None if initial is None else _bytes_of(initial, self.state_size, "initial")
        ins, results = [_arrays.describe(x) for x in inputs], [_arrays.describe(y) for y in outs]
        c_in, c_out = (None if c is None else _arrays.describe(c) for c in (carry_in, carry_out))
        _arrays.run(inputs, lambda s: self._op.scan(
            inputs=ins, outputs=results, inclusive=not exclusive, reverse=reverse, initial=init,
            deterministic=deterministic, stream=s, carry_in=c_in, carry_out=c_out, axis=axis))
        _arrays.mark_written([carry_out] + (outs if out is not None else []))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _length(self, first: Any) -> int:
        return int(first.shape[0]) if self.load else int(first.shape[0]) // self.state_size

    def xla_handle(self) -> int:
        """The handle by which XLA's custom calls name this operator (JAX, inside jit)."""
        return int(self._op.xla_handle())

    def _outputs(self, n: int) -> list:
        """The (shape, dtype) of each output of a scan of n elements."""
        if self.store is not None:
            return [((n,), t) for t in self.store[1]]
        return [((n * self.state_size,), "uint8")]

    def _scan(self, inputs, outs, exclusive, reverse, init, deterministic, segments, offsets,
              carries=(None, None), keys=None) -> None:
        flags = None if segments is None else _arrays.describe(segments)
        starts = None if offsets is None else _arrays.describe(offsets)
        ins, results = [_arrays.describe(x) for x in inputs], [_arrays.describe(y) for y in outs]
        carry_in, carry_out = (None if c is None else _arrays.describe(c) for c in carries)
        _arrays.run(list(inputs), lambda s: self._op.scan(
            inputs=ins, outputs=results, inclusive=not exclusive, reverse=reverse, initial=init,
            deterministic=deterministic, stream=s, segments=flags, offsets=starts, carry_in=carry_in,
            carry_out=carry_out, keys=None if keys is None else _arrays.describe(keys)))

    def _torch(self) -> Any:
        """This operator as a torch custom operator, made at its first scan of tensors."""
        if self._torch_op is None:
            import torch

            schema = ("(Tensor[] inputs, bool exclusive, bool reverse, bool deterministic, Tensor? initial, "
                      "Tensor? segments, Tensor? offsets, Tensor? keys) -> Tensor[]")

            def scan(inputs, exclusive, reverse, deterministic, initial, segments, offsets, keys):
                n = self._length(inputs[0])
                outs = [torch.empty(shape, dtype=getattr(torch, t), device=inputs[0].device)
                        for shape, t in self._outputs(n)]
                init = None if initial is None else initial.numpy().tobytes()
                self._scan(inputs, outs, exclusive, reverse, init, deterministic, segments, offsets, keys=keys)
                return outs

            op = torch.library.custom_op(f"scanrt::operator_{next(_TORCH_OPS)}", scan, mutates_args=(), schema=schema)

            @op.register_fake
            def _(inputs, exclusive, reverse, deterministic, initial, segments, offsets, keys):
                n = self._length(inputs[0])
                return [inputs[0].new_empty(shape, dtype=getattr(torch, t)) for shape, t in self._outputs(n)]

            self._torch_op = op
        return self._torch_op


def _needs_grad(x: Any) -> bool:
    """Whether a torch tensor asks autograd for a gradient here."""
    if not _arrays.is_torch(x):
        return False
    import torch

    return bool(x.requires_grad and torch.is_grad_enabled())
