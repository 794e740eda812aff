//! What every entry point of the C ABI uses: the one panic boundary, the thread-local
//! last error, and the casts from C handles and out-parameters.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result, ScanrtStatus};

thread_local! {
    /// The last failed call's message, NUL-terminated, or empty after a success. Cleared
    /// in place, so a successful call allocates nothing.
    pub(crate) static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Records `message` for `scanrt_last_error_message` ("" clears it). Does nothing on a
/// thread whose thread-locals are being destroyed (a call from a TLS destructor).
pub(crate) fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            e.clear();
            if !message.is_empty() {
                e.extend(message.bytes().map(|b| if b == 0 { b' ' } else { b }));
                e.push(0);
            }
        }
    });
}

/// The panic boundary and error translation shared by every entry point.
pub(crate) fn boundary(f: impl FnOnce() -> Result<()>) -> ScanrtStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_last_error("");
            ScanrtStatus::Ok
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(_) => {
            set_last_error("internal error: a panic was caught at the scanrt C boundary");
            ScanrtStatus::Panic
        }
    }
}

pub(crate) fn non_null<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: non-NULL pointers from C are trusted to point at a live object of the
    // documented type; that is the contract of every entry point.
    unsafe { p.as_ref() }.ok_or_else(|| Error::new(ScanrtStatus::NullArgument, format!("{what} must not be NULL")))
}

pub(crate) fn non_null_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: as in non_null.
    unsafe { p.as_mut() }.ok_or_else(|| Error::new(ScanrtStatus::NullArgument, format!("{what} must not be NULL")))
}

/// The `count` entries at `p` (NULL only when `count` is 0).
///
/// # Safety
/// A non-NULL `p` points at `count` entries (the caller's contract).
pub(crate) unsafe fn slice_of<'a, T>(p: *const T, count: usize, what: &str) -> Result<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    non_null(p, what)?;
    Ok(std::slice::from_raw_parts(p, count))
}

/// Makes a handle for `*out`: `*out` is NULL unless `make` succeeds.
pub(crate) fn put<T>(out: *mut *mut T, make: impl FnOnce() -> Result<T>) -> Result<()> {
    let out = non_null_mut(out, "out")?;
    *out = std::ptr::null_mut();
    *out = Box::into_raw(Box::new(make()?));
    Ok(())
}

/// Destroys a handle made by `put` (NULL is a no-op); a panic in a destructor stays here.
pub(crate) unsafe fn destroy<T>(handle: *mut T) {
    if !handle.is_null() {
        // SAFETY: a live handle from `put` (the caller's contract), destroyed once.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(handle))));
    }
}
