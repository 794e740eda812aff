//! Strings and versions: names of status codes and choice reasons, the last error.

use std::ffi::{c_char, CStr};

use crate::error::{bail, Result};

use super::support::LAST_ERROR;
use crate::tables::{Algorithm, ChoiceReason, DType, LogLevel, Op, ScanrtStatus};

/// Major version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_MAJOR: u32 = 0;
/// Minor version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_MINOR: u32 = 4;
/// Patch version of the scanrt library this header belongs to.
pub const SCANRT_VERSION_PATCH: u32 = 0;

/// The library version as `major * 10000 + minor * 100 + patch`; compare with the
/// `SCANRT_VERSION_*` macros to detect a header/library mismatch.
#[no_mangle]
pub extern "C" fn scanrt_version() -> u32 {
    SCANRT_VERSION_MAJOR * 10000 + SCANRT_VERSION_MINOR * 100 + SCANRT_VERSION_PATCH
}

/// The table's text for a C value, or `unknown` (both NUL-terminated, static).
fn text<E>(value: crate::error::Result<E>, describe: fn(E) -> &'static [u8], unknown: &'static [u8]) -> *const c_char {
    value.map_or(unknown, describe).as_ptr() as *const c_char
}

/// A static, human-readable name for a status code ("unknown status" for other values).
#[no_mangle]
pub extern "C" fn scanrt_status_string(status: i32) -> *const c_char {
    text(
        ScanrtStatus::from_c(status),
        ScanrtStatus::describe_nul,
        b"unknown status\0",
    )
}

/// A static, human-readable explanation of a `scanrt_choice_reason` ("unknown reason"
/// for other values).
#[no_mangle]
pub extern "C" fn scanrt_choice_reason_string(reason: i32) -> *const c_char {
    text(
        ChoiceReason::from_c(reason),
        ChoiceReason::describe_nul,
        b"unknown reason\0",
    )
}

/// A static name for a `scanrt_algorithm` ("unknown algorithm" for other values).
#[no_mangle]
pub extern "C" fn scanrt_algorithm_string(algorithm: i32) -> *const c_char {
    text(
        Algorithm::from_c(algorithm),
        Algorithm::describe_nul,
        b"unknown algorithm\0",
    )
}

/// A static name for a `scanrt_dtype` ("u32", "f64", ...; "unknown dtype" for other values).
#[no_mangle]
pub extern "C" fn scanrt_dtype_string(dtype: i32) -> *const c_char {
    text(DType::from_c(dtype), DType::describe_nul, b"unknown dtype\0")
}

/// A static name for a `scanrt_op` ("unknown operator" for other values).
#[no_mangle]
pub extern "C" fn scanrt_op_string(op: i32) -> *const c_char {
    text(Op::from_c(op), Op::describe_nul, b"unknown operator\0")
}

/// A static name for a `scanrt_log_level` ("info", ...; "unknown log level" for other values).
#[no_mangle]
pub extern "C" fn scanrt_log_level_string(level: i32) -> *const c_char {
    text(LogLevel::from_c(level), LogLevel::describe_nul, b"unknown log level\0")
}

/// The message of the last failed call on this thread ("" after a successful call).
/// Valid until the next scanrt call on this thread.
#[no_mangle]
pub extern "C" fn scanrt_last_error_message() -> *const c_char {
    const EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|e| match e.try_borrow() {
            Ok(e) if !e.is_empty() => e.as_ptr() as *const c_char,
            _ => EMPTY.as_ptr() as *const c_char,
        })
        .unwrap_or(EMPTY.as_ptr() as *const c_char)
}

/// A required C string field.
pub(super) unsafe fn required_text(p: *const c_char, what: &str) -> Result<String> {
    optional_text(p, what)?
        .ok_or_else(|| crate::error::Error::new(ScanrtStatus::NullArgument, format!("{what} must not be NULL")))
}

/// An optional C string field (NULL: None).
pub(super) unsafe fn optional_text(p: *const c_char, what: &str) -> Result<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: a non-NULL string field is NUL-terminated (the struct's contract).
    match CStr::from_ptr(p).to_str() {
        Ok(s) => Ok(Some(s.to_owned())),
        Err(_) => bail!(InvalidArgument, "{what} is not UTF-8"),
    }
}
