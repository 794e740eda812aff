//! Out-of-core scans: arrays in host memory scanned through the GPU in chunks.

use std::ffi::c_void;

use super::context::scanrt_context;
use super::scan::{desc_from_c, scanrt_scan_desc, scanrt_scan_info, InfoOut};
use super::support::{boundary, non_null};
use super::versioned::read_versioned;
use crate::scan::out_of_core::HostScanOptions;
use crate::scan::RawScan;
use crate::tables::ScanrtStatus;
use crate::types::DType;

/// Called after each chunk of an out-of-core scan reached host memory: the elements done
/// so far, the array's length, and the caller's `user_data`.
pub type scanrt_progress_fn = Option<unsafe extern "C" fn(done: u64, total: u64, user_data: *mut c_void)>;

/// Scans `n` elements of `input` (host memory, `input_dtype`) into `output` (host memory,
/// `output_dtype`; may be `input` itself) through the GPU, in chunks of `chunk` elements
/// (0: 2^26) whose upload, scan and download overlap, the running total carried on the
/// device: arrays larger than the GPU's memory, at the link's speed for page-locked
/// memory (`cudaHostAlloc`, `cudaHostRegister`). Returns when the results are in
/// `output`. Either array may instead be device memory of the context (a device array
/// scanned into host memory, or a host array into device memory): that side is read or
/// written in place, once the work queued on it has completed. `progress` (may be NULL) is called after each chunk. Unsegmented
/// scans; on the host backend, a host scan. `info` may be NULL.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_scan_host(
    ctx: *const scanrt_context,
    input: *const c_void,
    input_dtype: i32,
    output: *mut c_void,
    output_dtype: i32,
    n: u64,
    desc: *const scanrt_scan_desc,
    chunk: u64,
    progress: scanrt_progress_fn,
    user_data: *mut c_void,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let (input_dtype, output_dtype) = (DType::from_c(input_dtype)?, DType::from_c(output_dtype)?);
        let info = InfoOut::check(info)?;
        let desc = desc_from_c(&read_versioned(desc, "desc")?, output_dtype)?;
        let req = RawScan::new(input as u64, input_dtype, output as u64, output_dtype, n);
        let mut report = |done: u64, total: u64| {
            if let Some(f) = progress {
                // SAFETY: the caller's callback, with its own user data.
                unsafe { f(done, total, user_data) }
            }
        };
        let options = HostScanOptions {
            chunk,
            progress: Some(&mut report),
        };
        info.write(ctx.scan_host_raw(&req, &desc, options)?);
        Ok(())
    })
}
