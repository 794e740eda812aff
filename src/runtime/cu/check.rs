//! The one error conversion of driver calls.

use cudarc::driver::sys::CUresult;

use crate::error::{Error, Result, ScanrtStatus};

/// A driver call's result as scanrt's: `CudaError` naming the call and the code.
pub(crate) fn check(r: CUresult, call: &str) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::new(ScanrtStatus::CudaError, format!("{call} failed: {r:?}")))
    }
}
