//! The one error type of scanrt and its stable status codes.

use std::fmt;

pub use crate::tables::ScanrtStatus;

/// An error: a status code plus a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, as the C ABI reports it.
    pub status: ScanrtStatus,
    /// The specifics: which argument, which value, what was expected.
    pub message: String,
}

impl Error {
    /// An error of `status` saying `message`.
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

/// The result of every fallible scanrt call.
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for `Err(Error::new(status, message))`.
macro_rules! bail {
    ($status:ident, $($fmt:tt)+) => {
        return Err($crate::error::Error::new($crate::error::ScanrtStatus::$status, format!($($fmt)+)))
    };
}
pub(crate) use bail;
