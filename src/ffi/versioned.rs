//! Versioned C structs: each begins with `struct_size` and only ever grows. Releases
//! append fields (with defaults), so the library reads and writes only as far as the
//! caller's size, and the `*_init` macros of the header pass `sizeof` as the caller
//! compiled it.

use super::support::non_null;
use crate::error::{bail, Result};

/// A versioned C struct.
pub(crate) trait Versioned: Default {
    /// The name in messages, and the macro that initialises it.
    const NAME: &'static str;
    const INIT: &'static str;
    /// The smallest `struct_size`: the struct's size in the first release that had it
    /// (64-bit targets).
    const V1_SIZE: usize;
    fn with_size(self, size: usize) -> Self;
}

/// The largest `struct_size` taken: far beyond any release's structs, it refuses sizes
/// that were never set (and bounds a list's stride, `array::views_of`).
pub(crate) const MAX_STRUCT_SIZE: usize = 4096;

/// Checks a `struct_size` (`what`, as messages name it): at least the first release's,
/// at most MAX_STRUCT_SIZE, and a whole number of the struct's alignment, as `sizeof`
/// always is (so no field is cut in two). Formats only on failure: the check runs on
/// every scan.
fn check_size<T: Versioned>(size: usize, what: std::fmt::Arguments) -> Result<()> {
    if size < T::V1_SIZE || size > MAX_STRUCT_SIZE || !size.is_multiple_of(std::mem::align_of::<T>()) {
        bail!(
            InvalidArgument,
            "{what} is {size}, not the size of any {} ({} to {MAX_STRUCT_SIZE} bytes, a multiple of {}); \
             initialise it with {}",
            T::NAME,
            T::V1_SIZE,
            std::mem::align_of::<T>(),
            T::INIT
        );
    }
    Ok(())
}

/// The caller's `struct_size`, checked. Only that first field is known to exist: an older
/// caller's struct may be shorter than this library's.
///
/// # Safety
/// `p` is NULL or points to a struct that starts with `struct_size`.
pub(crate) unsafe fn caller_size<T: Versioned>(p: *const T, what: &str) -> Result<usize> {
    // SAFETY: not NULL, and the struct starts with a `usize`.
    let size = *non_null(p as *const usize, what)?;
    check_size::<T>(size, format_args!("{what}->struct_size"))?;
    Ok(size)
}

/// Writes the first `size` bytes of `value` over `*out` (at most the whole struct).
///
/// # Safety
/// `out` points to at least `size` writable bytes.
pub(crate) unsafe fn write_prefix<T>(out: *mut T, value: &T, size: usize) {
    let len = size.min(std::mem::size_of::<T>());
    std::ptr::copy_nonoverlapping(value as *const T as *const u8, out as *mut u8, len);
}

/// Clears the first `size` bytes at `p` (a newer header's fields, which this library does
/// not know, read 0) and writes `T`'s defaults over them, with `struct_size = size`.
///
/// # Safety
/// `p` is NULL or points to at least `size` writable bytes.
pub(crate) unsafe fn init_sized<T: Versioned>(p: *mut T, size: usize, what: &str) -> Result<()> {
    non_null(p as *const usize, what)?;
    check_size::<T>(size, format_args!("size"))?;
    // SAFETY: the caller's struct holds `size` bytes.
    std::ptr::write_bytes(p as *mut u8, 0, size);
    write_prefix(p, &T::default().with_size(size), size);
    Ok(())
}

/// Reads the caller's struct: the bytes its `struct_size` covers, over the defaults.
///
/// # Safety
/// `p` is NULL or points to at least `struct_size` readable bytes, as the init macro
/// leaves it.
pub(crate) unsafe fn read_versioned<T: Versioned>(p: *const T, what: &str) -> Result<T> {
    let size = caller_size(p, what)?;
    let mut out = T::default();
    let len = size.min(std::mem::size_of::<T>());
    // SAFETY: the caller's struct holds `size >= len` bytes; `out` holds `len` as well.
    std::ptr::copy_nonoverlapping(p as *const u8, &mut out as *mut T as *mut u8, len);
    Ok(out.with_size(std::mem::size_of::<T>()))
}
