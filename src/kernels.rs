//! The CUDA sources in `kernels/`, embedded by include name. build.rs lists the
//! directory, so a new header needs no entry here.

/// Every header under `kernels/`, as `(include name, text)`.
pub(crate) const KERNEL_HEADERS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_headers.rs"));
