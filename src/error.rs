//! The one error type of scanrt and its stable status codes.

use std::fmt;

/// Status codes of the C ABI; `SCANRT_STATUS_OK` is 0 and every error has its own value.
/// Values are stable across releases: new codes are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanrtStatus {
    /// Success.
    Ok = 0,
    /// A required pointer or handle argument was NULL.
    NullArgument = 1,
    /// An argument is out of range or malformed (unknown enum value, bad length, ...).
    InvalidArgument = 2,
    /// The operator cannot be applied to the element type (for example xor on floats),
    /// or the input type cannot be accumulated in the output type.
    UnsupportedCombination = 3,
    /// The output (or a workspace) holds fewer elements or bytes than the call needs.
    BufferTooSmall = 4,
    /// Input and output overlap without being exactly the same range.
    PartialOverlap = 5,
    /// A pointer is not device memory of the context's device (for example a host pointer).
    NotDeviceMemory = 6,
    /// A buffer or stream belongs to another context than the one given.
    ContextMismatch = 7,
    /// No CUDA driver library could be loaded.
    NoDriver = 8,
    /// The driver loaded but no usable CUDA device exists (or the ordinal is out of range).
    NoDevice = 9,
    /// NVRTC could not be loaded, or failed to compile a kernel; the message carries its log.
    CompileError = 10,
    /// A CUDA driver call failed; the message names the call and the CUDA error.
    CudaError = 11,
    /// The length (times the element size) overflows the address space or a kernel limit.
    LengthOverflow = 12,
    /// The operation needs a GPU context but the context runs on the host backend (or vice versa).
    WrongBackend = 13,
    /// An internal error (a panic inside scanrt) was caught at the C boundary: a bug in
    /// scanrt, please report it.
    Panic = 14,
    /// Memory for a buffer could not be allocated.
    OutOfMemory = 15,
    /// A kernel refused a look-back workspace (never initialised, initialised for a
    /// smaller scan, or poisoned by an earlier fault; it wrote no output), or a
    /// look-back gave up waiting after 1 s (a workspace used by two scans at once or
    /// corrupted; that scan's output is undefined). Returned by the context's next call;
    /// the message names the workspace.
    WorkspaceFault = 16,
}

impl ScanrtStatus {
    pub(crate) fn from_raw(v: i32) -> Option<ScanrtStatus> {
        use ScanrtStatus::*;
        [
            Ok,
            NullArgument,
            InvalidArgument,
            UnsupportedCombination,
            BufferTooSmall,
            PartialOverlap,
            NotDeviceMemory,
            ContextMismatch,
            NoDriver,
            NoDevice,
            CompileError,
            CudaError,
            LengthOverflow,
            WrongBackend,
            Panic,
            OutOfMemory,
            WorkspaceFault,
        ]
        .into_iter()
        .find(|s| *s as i32 == v)
    }
}

/// An error: a status code plus a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: ScanrtStatus,
    pub message: String,
}

impl Error {
    pub fn new(status: ScanrtStatus, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::new(ScanrtStatus::CudaError, format!("CUDA driver error: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for `Err(Error::new(status, message))`.
macro_rules! bail {
    ($status:ident, $($fmt:tt)+) => {
        return Err($crate::error::Error::new($crate::error::ScanrtStatus::$status, format!($($fmt)+)))
    };
}
pub(crate) use bail;
