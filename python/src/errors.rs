//! scanrt's statuses as Python exceptions: what a caller got wrong is a `TypeError`
//! (types and shapes scanrt does not take) or a `ValueError` (lengths, overlaps, bad
//! arguments); anything else (a CUDA error, a compile error, a workspace fault, no
//! device) is a `ScanrtError`, a `RuntimeError`. Every message names the status.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;
use scanrt::ScanrtStatus;

create_exception!(
    _scanrt,
    ScanrtError,
    PyRuntimeError,
    "A scanrt call failed on the device or the driver (the message names the status)."
);

/// The Python exception of a scanrt error.
pub(crate) fn to_py(e: scanrt::Error) -> PyErr {
    let mut message = format!("{} ({})", e.message, e.status.c_name());
    if e.status == ScanrtStatus::CompileError && e.message.contains("could not be loaded") {
        // scanrt/_nvrtc.py loaded none before the first compile.
        message += "; the package looked in pip's nvidia/cu13/lib and nvidia/cuda_nvrtc/lib on sys.path, \
                    on the library path and in $CUDA_HOME, /usr/local/cuda: pip install 'scanrt[jit]' \
                    installs one";
    }
    match e.status {
        ScanrtStatus::UnsupportedCombination => PyTypeError::new_err(message),
        ScanrtStatus::InvalidArgument
        | ScanrtStatus::NullArgument
        | ScanrtStatus::BufferTooSmall
        | ScanrtStatus::PartialOverlap
        | ScanrtStatus::LengthOverflow
        | ScanrtStatus::NotDeviceMemory
        | ScanrtStatus::ContextMismatch => PyValueError::new_err(message),
        _ => ScanrtError::new_err(message),
    }
}

/// `Result` with scanrt's errors, for `?` in the bindings.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for scanrt::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
