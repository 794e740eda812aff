//! Out-of-core scans: a 1-D array larger than the GPU scanned through it in chunks.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use scanrt::{HostScanOptions, RawScan};

use crate::arrays::{context, ArrayArg};
use crate::errors::IntoPy;
use crate::scan::builtin_desc;

/// Scans the contiguous 1-D `x` into `out` through GPU `device` with a built-in `op`:
/// each either host memory or memory of that GPU. `progress(done, total)` is called
/// after each chunk (with the GIL; an exception it raises is reported when the scan
/// ends).
#[pyfunction]
#[pyo3(signature = (*, x, out, op, inclusive=true, reverse=false, initial=None, device, chunk, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_out_of_core(
    py: Python<'_>,
    x: ArrayArg,
    out: ArrayArg,
    op: &str,
    inclusive: bool,
    reverse: bool,
    initial: Option<Bound<'_, PyAny>>,
    device: i64,
    chunk: u64,
    progress: Option<PyObject>,
) -> PyResult<()> {
    for (a, name) in [(&x, "x"), (&out, "out")] {
        if a.shape.len() != 1 || (a.shape[0] > 1 && a.strides[0] != 1) {
            return Err(PyValueError::new_err(format!("{name} must be a contiguous 1-D array")));
        }
        if a.device >= 0 && a.device != device {
            return Err(PyValueError::new_err(format!(
                "{name} is on GPU {} but the scan runs on GPU {device}",
                a.device
            )));
        }
    }
    if out.shape[0] < x.shape[0] {
        return Err(PyValueError::new_err("out is shorter than x"));
    }
    let ctx = context(device)?;
    let desc = builtin_desc(op, inclusive, reverse, initial, false, out.dtype()?)?;
    let req = RawScan::new(x.addr, x.dtype()?, out.addr, out.dtype()?, x.shape[0]);
    let mut failed: Option<PyErr> = None;
    py.allow_threads(|| {
        let mut report = |done: u64, total: u64| {
            if let (Some(f), None) = (&progress, &failed) {
                failed = Python::with_gil(|py| f.call1(py, (done, total)).err());
            }
        };
        let options = HostScanOptions {
            chunk,
            progress: Some(&mut report),
        };
        // SAFETY: the Python caller keeps both arrays referenced during the call, they
        // hold the described elements, and work queued on device ones has completed.
        unsafe { ctx.scan_host_raw(&req, &desc, options) }
    })
    .py_err()?;
    failed.map_or(Ok(()), Err)
}
