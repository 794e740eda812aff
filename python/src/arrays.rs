//! Arrays and streams as Python describes them (segment data too), and the contexts they
//! run on.
//!
//! `scanrt/_arrays.py` reads each array (PyTorch, CuPy, JAX, Numba: the CUDA array
//! interface or the library's own attributes; NumPy: the array interface) into a tuple
//! `(address, dtype name, shape, strides in elements, device)`, device -1 for host
//! memory. The array object itself stays referenced by the Python caller for the whole
//! call, which is what keeps the memory alive.

use std::collections::HashMap;

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use scanrt::{ArrayView, Backend, Context, DType, NumberKind, Segments, Stream};

use crate::errors::IntoPy;

/// One array, as `_arrays.describe` gives it.
pub(crate) struct ArrayArg {
    pub addr: u64,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub strides: Vec<i64>,
    pub device: i64,
}

impl<'py> FromPyObject<'py> for ArrayArg {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        let (addr, dtype, shape, strides, device) = ob.extract()?;
        Ok(ArrayArg {
            addr,
            dtype,
            shape,
            strides,
            device,
        })
    }
}

/// The element type of a NumPy-style dtype name (the crate's table: `DType::info`).
pub(crate) fn dtype_named(name: &str) -> PyResult<DType> {
    DType::named(name).ok_or_else(|| PyTypeError::new_err(format!("scanrt does not take {name} arrays yet")))
}

/// The element types as the Python package names them, with their bytes and kind
/// (`"u"`, `"i"` or `"f"`): the crate's one table of element types.
#[pyfunction]
pub(crate) fn dtypes() -> Vec<(&'static str, usize, &'static str)> {
    DType::ALL
        .into_iter()
        .map(|t| {
            let info = t.info();
            let kind = match info.kind {
                NumberKind::Unsigned => "u",
                NumberKind::Signed => "i",
                NumberKind::Float => "f",
            };
            (info.name, info.size, kind)
        })
        .collect()
}

impl ArrayArg {
    pub fn dtype(&self) -> PyResult<DType> {
        dtype_named(&self.dtype)
    }

    /// The view of the array. `writable` for outputs.
    ///
    /// # Safety
    /// The description is of a live array the caller keeps referenced during the call.
    pub unsafe fn view(&self, writable: bool) -> PyResult<ArrayView<'static>> {
        let view = ArrayView::strided(self.addr, self.dtype()?, &self.shape, &self.strides).py_err()?;
        Ok(if writable { view } else { view.read_only() })
    }

    /// Whether the array is C-contiguous: its elements one after another in row-major
    /// order (extent-1 dimensions take any stride, as NumPy and PyTorch leave them).
    pub fn is_c_contiguous(&self) -> bool {
        let mut expected = 1i64;
        for (&dim, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if dim > 1 && stride != expected {
                return false;
            }
            expected *= dim as i64;
        }
        true
    }

    /// The same memory as a flat uint8 array (a user-defined operator's whole states):
    /// the array must be contiguous.
    pub fn as_bytes(&self) -> PyResult<ArrayArg> {
        if !self.is_c_contiguous() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "an array of states must be contiguous",
            ));
        }
        Ok(ArrayArg {
            addr: self.addr,
            dtype: "uint8".into(),
            shape: vec![self.shape.iter().product::<u64>() * self.dtype()?.size() as u64],
            strides: vec![1],
            device: self.device,
        })
    }
}

/// The segment data a 1-D scan may take: byte flags (uint8 or bool), offsets, or keys
/// (each run of equal keys a segment). A `(flags, offsets)` pair converts into it for the
/// scans that take no keys.
pub(crate) struct SegmentData {
    pub flags: Option<ArrayArg>,
    pub offsets: Option<ArrayArg>,
    pub keys: Option<ArrayArg>,
}

impl From<(Option<ArrayArg>, Option<ArrayArg>)> for SegmentData {
    fn from((flags, offsets): (Option<ArrayArg>, Option<ArrayArg>)) -> Self {
        SegmentData {
            flags,
            offsets,
            keys: None,
        }
    }
}

/// The segment data given, if any, and its form.
pub(crate) fn segment_data(data: impl Into<SegmentData>) -> PyResult<Option<(ArrayArg, Segments)>> {
    let SegmentData { flags, offsets, keys } = data.into();
    if let Some(keys) = keys {
        let kind = Segments::Keys(keys.dtype()?);
        return Ok(Some((keys, kind)));
    }
    Ok(match (flags, offsets) {
        (Some(flags), _) => Some((flags, Segments::ByteFlags)),
        (None, Some(offsets)) => {
            let kind = Segments::Offsets {
                dtype: offsets.dtype()?,
                count: offsets.shape.iter().product(),
            };
            Some((offsets, kind))
        }
        (None, None) => None,
    })
}

/// Carry arrays of whole states (contiguous arrays of any type: their bytes are the
/// states) as `U8` views, the carry out writable.
///
/// # Safety
/// The descriptions are of live arrays the caller keeps referenced during the call.
pub(crate) unsafe fn state_carry_views(
    carry_in: Option<ArrayArg>,
    carry_out: Option<ArrayArg>,
) -> PyResult<[Option<ArrayView<'static>>; 2]> {
    Ok([
        carry_in.map(|c| c.as_bytes()?.view(false)).transpose()?,
        carry_out.map(|c| c.as_bytes()?.view(true)).transpose()?,
    ])
}

/// The context of a device (-1: the host backend), one per process and device.
pub(crate) fn context(device: i64) -> PyResult<Context> {
    shared_context(device).py_err()
}

/// [`context`] without the GIL (XLA's handlers).
pub(crate) fn shared_context(device: i64) -> scanrt::Result<Context> {
    static CONTEXTS: Lazy<Mutex<HashMap<i64, Context>>> = Lazy::new(|| Mutex::new(HashMap::new()));
    let mut all = CONTEXTS.lock();
    if let Some(c) = all.get(&device) {
        return Ok(c.clone());
    }
    let ctx = if device < 0 {
        Context::new(Backend::Host, 0)
    } else {
        Context::new(Backend::Gpu, device as usize)
    }?;
    all.insert(device, ctx.clone());
    Ok(ctx)
}

/// The device the arrays are on, which must be one.
pub(crate) fn device_of(arrays: &[&ArrayArg]) -> PyResult<i64> {
    let device = arrays[0].device;
    if arrays.iter().any(|a| a.device != device) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "the arrays of one call must be on one device",
        ));
    }
    Ok(device)
}

/// The caller's stream (a `CUstream` address; 0 the legacy default stream) on a device's
/// context; the host backend's stream for host memory.
pub(crate) fn stream(ctx: &Context, device: i64, raw: usize) -> PyResult<Stream> {
    if device < 0 {
        return ctx.new_stream().py_err();
    }
    // SAFETY: the caller's library owns the stream and keeps it alive during the call
    // (its current stream); the context checks that it belongs to the device.
    unsafe { ctx.borrow_stream(raw as *mut std::ffi::c_void) }.py_err()
}

/// Waits for the work queued on `stream` of `device` (for callers whose library has no
/// stream scanrt can join, such as JAX).
#[pyfunction]
pub(crate) fn synchronize(py: Python<'_>, device: i64, stream: usize) -> PyResult<()> {
    let ctx = context(device)?;
    let s = self::stream(&ctx, device, stream)?;
    py.allow_threads(|| s.synchronize()).py_err()
}
