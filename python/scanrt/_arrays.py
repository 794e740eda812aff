"""Arrays of the caller's library as scanrt sees them.

Each array becomes ``(address, dtype name, shape, strides in elements, device)``, device
-1 for host memory, read from the library's own attributes (PyTorch, CuPy, NumPy) or the
CUDA array interface (JAX, Numba, anything else that has it). Results are allocated by
the caller's library on the caller's device, and scanrt runs on that library's current
stream, so results need no copy and no synchronisation.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

from . import _scanrt

Description = Tuple[int, str, Tuple[int, ...], Tuple[int, ...], int]


# PyTorch's dtypes by name, filled on first use (a dict lookup beats str(dtype)), and its
# strided layout and functorch's test for its transforms' tensors.
TORCH_DTYPE_NAMES: dict = {}
TORCH_STRIDED: list = [None]
TORCH_WRAPPED: list = [lambda t: False]

# The element types (name: bytes, kind "u"/"i"/"f"), from the crate's one table of them.
DTYPES = {name: (size, kind) for name, size, kind in _scanrt.dtypes()}
# The float types, as NumPy names them.
FLOATS = tuple(name for name, (_, kind) in DTYPES.items() if kind == "f")


def _torch_names() -> None:
    import torch

    TORCH_STRIDED[0] = torch.strided
    TORCH_WRAPPED[0] = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", TORCH_WRAPPED[0])

    for name in ("bool",) + tuple(DTYPES):
        if hasattr(torch, name):
            TORCH_DTYPE_NAMES[getattr(torch, name)] = name


def library(x: Any) -> str:
    """The name of the library that owns ``x``."""
    module = type(x).__module__.split(".")[0]
    if module == "torch":
        if not TORCH_DTYPE_NAMES:
            _torch_names()
        _dense(x)
    if module in ("torch", "cupy", "numpy"):
        return module
    if module in ("jax", "jaxlib"):
        return "jax"
    if hasattr(x, "__cuda_array_interface__"):
        return "cuda_array_interface"
    if hasattr(x, "__array_interface__"):
        return "numpy_like"
    raise TypeError(f"scanrt takes PyTorch, CuPy, JAX, NumPy or CUDA-array-interface arrays, not {type(x).__name__}")


def _numpy_dtype_name(typestr: str) -> str:
    import numpy as np

    return np.dtype(typestr).name


def _byte_strides(strides, itemsize: int, shape) -> Tuple[int, ...]:
    if strides is None:  # C-contiguous
        out, step = [], 1
        for extent in reversed(shape):
            out.append(step)
            step *= extent
        return tuple(reversed(out))
    if any(s % itemsize for s in strides):
        raise ValueError("scanrt takes arrays whose strides are whole elements")
    return tuple(s // itemsize for s in strides)


def _native(native: bool, typestr: str) -> None:
    """Refuses elements in the other byte order, which scanrt would read as this one."""
    if not native:
        raise TypeError(f"scanrt reads elements in the machine's byte order, not {typestr!r}; convert with "
                        "astype(dtype.newbyteorder('='))")


def describe(x: Any) -> Description:
    """The array as scanrt's bindings take it."""
    lib = library(x)
    if lib == "torch":
        # Attributes that cost no Python objects: scans of small tensors feel every microsecond.
        if x.is_cuda:
            device = x.get_device()
        elif x.device.type == "cpu":
            device = -1
        else:
            raise TypeError(f"scanrt takes CUDA or CPU tensors, not {x.device.type} ones")
        name = TORCH_DTYPE_NAMES.get(x.dtype) or str(x.dtype).replace("torch.", "")
        return (x.data_ptr(), name, tuple(x.shape), x.stride(), device)
    if lib == "cupy":
        return (x.data.ptr, x.dtype.name, tuple(x.shape), _byte_strides(x.strides, x.itemsize, x.shape), x.device.id)
    if lib in ("numpy", "numpy_like"):
        import numpy as np

        a = np.asarray(x)
        _native(a.dtype.isnative, a.dtype.str)
        interface = a.__array_interface__
        return (interface["data"][0], a.dtype.name, tuple(a.shape), _byte_strides(a.strides, a.itemsize, a.shape), -1)
    interface = x.__cuda_array_interface__
    _native(interface["typestr"][0] in "<|=", interface["typestr"])
    shape = tuple(interface["shape"])
    name = _numpy_dtype_name(interface["typestr"])
    import numpy as np

    itemsize = np.dtype(interface["typestr"]).itemsize
    device = _device_of_cuda_array(x)
    return (interface["data"][0], name, shape, _byte_strides(interface.get("strides"), itemsize, shape), device)


def check_carry_out(x: Any, message: str) -> None:
    """Refuses what cannot receive a carry written in place: anything but an array
    (TypeError with ``message``: a scalar's temporary copy would be written after it is
    gone) or an array scanrt cannot write (``check_writable``)."""
    if not is_array(x):
        raise TypeError(message)
    check_writable(x)


def check_writable(x: Any) -> None:
    """Refuses an output scanrt cannot write: a read-only NumPy or array-interface array
    (ValueError, as NumPy's own ufuncs do), or a JAX array (immutable: TypeError)."""
    lib = library(x)
    if lib == "jax":
        raise TypeError("JAX arrays are immutable: leave out out= and take the result")
    if lib in ("numpy", "numpy_like"):
        import numpy as np

        if not np.asarray(x).flags.writeable:
            raise ValueError("the output array is read-only")
    elif lib not in ("torch", "cupy") and x.__cuda_array_interface__["data"][1]:
        raise ValueError("the output array is read-only")


def _device_of_cuda_array(x: Any) -> int:
    devices = getattr(x, "devices", None)
    if callable(devices):  # JAX
        (device,) = tuple(devices())
        return int(device.id)
    device = getattr(x, "device", None)
    index = getattr(device, "id", None)
    return int(index) if index is not None else 0


def stream_of(x: Any) -> int:
    """The stream scanrt runs on for ``x``: the library's current stream on its device
    (0, the legacy default stream, for libraries without one)."""
    lib = library(x)
    if lib == "torch":
        if not x.is_cuda:
            return 0
        import torch

        return torch._C._cuda_getCurrentRawStream(x.get_device())
    if lib == "cupy":
        import cupy

        with x.device:
            return cupy.cuda.get_current_stream().ptr
    if lib == "cuda_array_interface":
        stream = x.__cuda_array_interface__.get("stream")
        return 0 if stream in (None, 1) else int(stream)
    return 0


def prepare_inputs(arrays: Sequence[Any]) -> None:
    """Makes inputs whose library scanrt cannot join by stream (JAX) ready first."""
    for a in arrays:
        if library(a) == "jax":
            a.block_until_ready()


def needs_synchronize(x: Any) -> bool:
    """Whether results must be waited for before returning (JAX cannot wait for a
    stream scanrt queued on)."""
    return library(x) == "jax"


def empty(like: Any, shape: Sequence[int], dtype: str) -> Any:
    """A new array of ``like``'s library on its device."""
    lib = library(like)
    shape = tuple(int(s) for s in shape)
    if lib == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
    if lib == "cupy":
        import cupy

        with like.device:
            return cupy.empty(shape, dtype=dtype)
    if lib == "jax":
        import jax
        import jax.numpy as jnp

        (device,) = tuple(like.devices())
        out = jax.device_put(jnp.zeros(shape, dtype=dtype), device)
        return out.block_until_ready()
    import numpy as np

    if lib in ("numpy", "numpy_like"):
        return np.empty(shape, dtype=dtype)
    raise TypeError(f"scanrt cannot allocate results for {type(like).__name__} arrays; pass out=")


def describe_dtype(x: Any) -> str:
    """The name of ``x``'s element type, as NumPy spells it."""
    lib = library(x)
    if lib == "torch":
        return str(x.dtype).replace("torch.", "")
    if lib == "cuda_array_interface":
        return _numpy_dtype_name(x.__cuda_array_interface__["typestr"])
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


# NumPy's kinds in the order its same-kind rule casts up: bool, unsigned, signed, float.
_KIND_ORDER = {"bool": 0, "uint": 1, "int": 2, "float": 3, "bfloat": 3}


def copy_into(out: Any, result: Any) -> Any:
    """``result`` written into the caller's ``out``, an array of its shape whose type the
    result casts to by NumPy's same-kind rule (int into float, not float into int); else
    a ValueError or TypeError, and nothing written."""
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"out has shape {tuple(out.shape)}; the result is {tuple(result.shape)}")
    have, want = describe_dtype(result), describe_dtype(out)
    if _KIND_ORDER.get(have.rstrip("0123456789"), 4) > _KIND_ORDER.get(want.rstrip("0123456789"), 4):
        raise TypeError(f"a {have} result does not cast to the {want} out= array (NumPy's same-kind rule)")
    check_writable(out)
    out[...] = result
    return out


def normal_axis(x: Any, axis: int) -> int:
    """``axis`` counted from the front, or a ValueError (a TypeError for what is no array)."""
    library(x)
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError("scanrt scans arrays of at least one dimension")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def last_axis_contiguous(x: Any, axis: int) -> Tuple[Any, int]:
    """``x`` with ``axis`` moved last and made C-contiguous (a copy only where needed),
    and the normalised axis."""
    lib = library(x)
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError("scanrt scans arrays of at least one dimension")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for {ndim} dimensions")
    axis %= ndim
    if lib == "torch":
        moved = x.movedim(axis, -1) if axis != ndim - 1 else x
        return moved.contiguous(), axis
    if lib == "cupy":
        import cupy

        return cupy.ascontiguousarray(cupy.moveaxis(x, axis, -1)), axis
    if lib == "jax":
        import jax.numpy as jnp

        moved = jnp.moveaxis(x, axis, -1) if axis != ndim - 1 else x
        return moved, axis
    if lib in ("numpy", "numpy_like"):
        import numpy as np

        return np.ascontiguousarray(np.moveaxis(np.asarray(x), axis, -1)), axis
    if axis != ndim - 1:
        raise TypeError("scanrt scans CUDA-array-interface arrays along their last axis only")
    return x, axis


def contiguous(x: Any) -> Any:
    """``x`` made C-contiguous (a copy only where needed): what a scan over segments,
    which reads its arrays as 1-D runs of elements, takes."""
    return last_axis_contiguous(x, -1)[0]


def ones_beside(x: Any) -> Any:
    """``[1, x[i]]`` for each element of the 1-D ``x``: a new contiguous ``(len, 2)``
    array of ``x``'s library and type."""
    lib = library(x)
    if lib == "torch":
        import torch

        return torch.stack([torch.ones_like(x), x], -1)
    if lib == "cupy":
        import cupy

        return cupy.stack([cupy.ones_like(x), x], -1)
    if lib == "jax":
        import jax.numpy as jnp

        return jnp.stack([jnp.ones_like(x), x], -1)
    import numpy as np

    x = np.asarray(x)
    return np.stack([np.ones_like(x), x], -1)


def move_back(y: Any, axis: int) -> Any:
    """The inverse of ``last_axis_contiguous``'s move (a view)."""
    ndim = len(y.shape)
    if axis == ndim - 1:
        return y
    lib = library(y)
    if lib == "torch":
        return y.movedim(-1, axis)
    if lib == "cupy":
        import cupy

        return cupy.moveaxis(y, -1, axis)
    if lib == "jax":
        import jax.numpy as jnp

        return jnp.moveaxis(y, -1, axis)
    import numpy as np

    return np.moveaxis(y, -1, axis)


def is_torch(x: Any) -> bool:
    if type(x).__module__.split(".")[0] != "torch":
        return False
    if not TORCH_DTYPE_NAMES:
        _torch_names()
    _dense(x)
    return True


def torch_autograd(x: Any) -> bool:
    """Whether a tensor goes through scanrt's PyTorch operators: it requires gradients,
    torch.compile is tracing, or it is a torch.func transform's (vmap's batched tensors
    have no storage of their own to scan)."""
    if not is_torch(x):
        return False
    import torch

    return ((x.requires_grad and torch.is_grad_enabled()) or torch.compiler.is_compiling()
            or TORCH_WRAPPED[0](x))


def _dense(x: Any) -> None:
    """Refuses tensors whose elements are not laid out by strides (sparse, nested)."""
    if x.layout is not TORCH_STRIDED[0]:
        raise TypeError(f"scanrt takes dense tensors, not {str(x.layout).replace('torch.', '')} ones; "
                        "convert them with to_dense()")


def run(arrays: Any, call) -> None:
    """Runs a binding call on the first array's stream, after JAX inputs are ready."""
    first = arrays[0]
    prepare_inputs(arrays)
    stream = stream_of(first)
    call(stream)
    if needs_synchronize(first):
        _scanrt.synchronize(describe(first)[4], stream)


def mark_written(arrays: Any) -> None:
    """Bumps the autograd version of the torch tensors among ``arrays`` that scanrt wrote in
    place, so that autograd refuses a backward that saved their earlier values, as it does
    after torch's own in-place operations."""
    for a in arrays:
        if a is not None and is_torch(a) and not a.is_inference():  # inference tensors have no version
            import torch

            torch.autograd.graph.increment_version(a)


def is_array(v: Any) -> bool:
    """Whether ``v`` is an array (anything with a shape and a dtype), not a number (NumPy's
    scalars have both too)."""
    if v is None or not (hasattr(v, "shape") and hasattr(v, "dtype")):
        return False
    if type(v).__module__ == "numpy":
        import numpy

        return not isinstance(v, numpy.generic)
    return True


def size(a: Any) -> int:
    """The number of elements of ``a``."""
    n = 1
    for d in a.shape:
        n *= int(d)
    return n


def one_d(x: Any) -> None:
    """Refuses arrays of other than one dimension (ValueError)."""
    if len(x.shape) != 1:
        raise ValueError(f"this call takes 1-D arrays; this one has shape {tuple(x.shape)}")


def check_offsets(offsets: Any) -> None:
    """Refuses what is no 1-D array of integer offsets."""
    one_d(offsets)
    if describe_dtype(offsets) not in ("int32", "int64", "uint32", "uint64"):
        raise TypeError("offsets are a 1-D int32, int64, uint32 or uint64 array")


def segment_data(x: Any, segments: Any, offsets: Any, keys: Any) -> Any:
    """The segments of the 1-D ``x`` given as flags, offsets or keys (at most one of them,
    checked), or None."""
    given = [v for v in (segments, offsets, keys) if v is not None]
    if not given:
        return None
    one_d(x)
    if len(given) > 1:
        raise TypeError("give segments as flags, as offsets or as keys, one of them")
    if segments is not None:
        one_d(segments)
        if segments.shape[0] != x.shape[0] or describe_dtype(segments) not in ("bool", "uint8"):
            raise ValueError("segments are a bool or uint8 array as long as the data (nonzero starts a segment)")
    elif keys is not None:
        one_d(keys)
        if keys.shape[0] != x.shape[0]:
            raise ValueError(f"keys are one per element: {keys.shape[0]} for {x.shape[0]}")
    else:
        check_offsets(offsets)
    return given[0]


def astype(x: Any, dtype: str) -> Any:
    """``x`` converted to ``dtype`` (a new array of its library; ``x`` when it has that type)."""
    if describe_dtype(x) == dtype:
        return x
    lib = library(x)
    if lib == "torch":
        import torch

        return x.to(getattr(torch, dtype))
    if lib in ("cupy", "jax", "numpy", "numpy_like"):
        return x.astype(dtype)
    raise TypeError(f"scanrt cannot convert {type(x).__name__} arrays to {dtype}; convert them first")


def array_module(x: Any) -> Any:
    """NumPy, or CuPy for CuPy arrays (their functions take the same arguments)."""
    if library(x) == "cupy":
        import cupy

        return cupy
    import numpy

    return numpy


def torch_alike(first: Any, *others: Any) -> Tuple[list, int]:
    """The descriptions of CUDA tensors laid out as ``first`` (its type, shape, strides and
    device; results made with ``empty_like``), and its device's raw current stream: the
    fast paths' arguments, made with nothing a small scan would feel."""
    import torch

    name, device = TORCH_DTYPE_NAMES[first.dtype], first.get_device()
    shape, strides = tuple(first.shape), first.stride()
    descriptions = [(t.data_ptr(), name, shape, strides, device) for t in (first,) + others]
    return descriptions, torch._C._cuda_getCurrentRawStream(device)
