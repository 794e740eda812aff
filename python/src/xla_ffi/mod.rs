//! scanrt's scans as XLA FFI handlers, so that JAX runs them inside `jax.jit` (and under
//! `vmap` and `grad`, which `scanrt/_jax.py` builds on them) on XLA's own stream, with no
//! host synchronisation: `scanrt_scan` (a built-in operator along an axis) and
//! `scanrt_recipe` (a recipe: cumulative extremes with their indices, logcumsumexp, the
//! linear recurrence and its adjoint, along an axis), `scanrt_operator` (a user-defined
//! operator), `scanrt_sort` (the radix sort of 1-D keys, with their values or indices)
//! and `scanrt_select` (selections, partitions, run-length encodings), each for CUDA (on
//! the GPU backend) and for XLA's CPU platform (on the host backend, host buffers). Python registers
//! their addresses (`xla_handlers`) with `jax.ffi.register_ffi_target`.
//!
//! A handler runs on XLA's thread without the GIL, so it reaches only the Rust crate (and
//! an operator's host functions on the CPU platform, which take the GIL themselves).
//! Every failure, a panic included, becomes an XLA error naming it; nothing unwinds into
//! XLA.

mod api;
mod operators;
mod primitives;

use std::collections::HashMap;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use scanrt::{ArrayView, Context, DType, ScanrtStatus, Stream};

use crate::arrays::shared_context;
use api::{Buffer, CallFrame, Error};
use operators::operator_scan;
use primitives::{builtin_scan, radix_sort, recipe_scan, select};

/// The handlers' addresses by platform (`"CUDA"`, `"cpu"`) and name, for
/// `jax.ffi.register_ffi_target`: one table, each row a custom call's name, what it
/// computes, and its two entry points.
#[pyfunction]
pub(crate) fn xla_handlers() -> HashMap<&'static str, HashMap<&'static str, usize>> {
    let mut platforms: HashMap<&'static str, HashMap<&'static str, usize>> = HashMap::new();
    for &(name, on_gpu, on_host) in HANDLERS {
        platforms.entry("CUDA").or_default().insert(name, on_gpu as usize);
        platforms.entry("cpu").or_default().insert(name, on_host as usize);
    }
    platforms
}

/// Defines the table of handlers: for each row, an `extern "C"` entry per platform
/// (XLA calls plain functions) that runs the row's body through [`handle`].
macro_rules! handlers {
    ($($name:literal => $body:path;)*) => {
        const HANDLERS: &[(&str, api::Handler, api::Handler)] = &[$(
            (
                $name,
                {
                    unsafe extern "C" fn on_gpu(frame: *mut CallFrame) -> *mut Error {
                        handle(frame, Platform::Gpu, $body)
                    }
                    on_gpu
                },
                {
                    unsafe extern "C" fn on_host(frame: *mut CallFrame) -> *mut Error {
                        handle(frame, Platform::Host, $body)
                    }
                    on_host
                },
            ),
        )*];
    };
}

handlers! {
    "scanrt_scan" => builtin_scan;
    "scanrt_recipe" => recipe_scan;
    "scanrt_sort" => radix_sort;
    "scanrt_select" => select;
    "scanrt_operator" => operator_scan;
}

/// Where XLA runs a call: on a GPU (device buffers, XLA's CUDA stream) or on its CPU
/// platform (host buffers, scanrt's host backend).
#[derive(Clone, Copy)]
enum Platform {
    Gpu,
    Host,
}

/// Why a call failed, as XLA's error code and message.
struct Failure {
    code: i32,
    message: String,
}

impl From<scanrt::Error> for Failure {
    fn from(e: scanrt::Error) -> Failure {
        let code = match e.status {
            ScanrtStatus::CudaError
            | ScanrtStatus::OutOfMemory
            | ScanrtStatus::WorkspaceFault
            | ScanrtStatus::Panic => api::ERROR_INTERNAL,
            _ => api::ERROR_INVALID_ARGUMENT,
        };
        Failure {
            code,
            message: format!("scanrt: {}: {}", e.status.c_name(), e.message),
        }
    }
}

fn invalid(message: String) -> Failure {
    Failure {
        code: api::ERROR_INVALID_ARGUMENT,
        message: format!("scanrt: {message}"),
    }
}

/// What every handler does around its work: answers XLA's metadata query (API version,
/// no traits: the handlers are not captured in XLA's command buffers), runs only at the
/// execute stage, and turns a failure or a panic into an XLA error.
///
/// # Safety
/// `frame` is XLA's call frame for this call (or its metadata query).
unsafe fn handle(frame: *mut CallFrame, platform: Platform, body: fn(&Call) -> Result<(), Failure>) -> *mut Error {
    // SAFETY: XLA passes a live frame; NULL is refused.
    let Some(frame) = (unsafe { frame.as_ref() }) else {
        return std::ptr::null_mut();
    };
    // The metadata query comes with the execute stage and, in some versions, no API: it
    // is recognised by its extension first and answered without the API.
    // SAFETY: an extension starts with `ExtensionBase`; the metadata one is
    // `MetadataExtension`, whose metadata XLA owns for the query.
    if let Some(extension) = unsafe { frame.extension_start.as_ref() } {
        if extension.kind == api::EXTENSION_METADATA {
            let extension = unsafe { &*(frame.extension_start as *const api::MetadataExtension) };
            if let Some(metadata) = unsafe { extension.metadata.as_mut() } {
                (metadata.api_version.major, metadata.api_version.minor) = api::API_VERSION;
                metadata.traits = 0;
            }
            return std::ptr::null_mut();
        }
    }
    if frame.stage != api::STAGE_EXECUTE || frame.struct_size < api::CALL_FRAME_SIZE || frame.api.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: checked non-NULL; XLA's API table outlives the call.
    let api = unsafe { &*frame.api };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&Call { frame, api, platform })));
    let failure = match outcome {
        Ok(Ok(())) => return std::ptr::null_mut(),
        Ok(Err(failure)) => failure,
        Err(_) => Failure {
            code: api::ERROR_INTERNAL,
            message: "scanrt: internal panic in an XLA handler (a bug in scanrt, please report it)".into(),
        },
    };
    let message = CString::new(failure.message.replace('\0', " ")).unwrap_or_default();
    let mut args = api::ErrorCreateArgs {
        struct_size: std::mem::size_of::<api::ErrorCreateArgs>(),
        extension_start: std::ptr::null_mut(),
        message: message.as_ptr(),
        errc: failure.code,
    };
    // SAFETY: the API's error constructor, on a filled struct; XLA copies the message and
    // owns the error it returns.
    unsafe { (api.error_create)(&mut args) }
}

/// An attribute's value.
#[derive(Debug, Clone, Copy)]
enum Attr<'a> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(&'a str),
}

/// One execute call: its buffers, attributes and stream.
struct Call<'a> {
    frame: &'a CallFrame,
    api: &'a api::Api,
    platform: Platform,
}

impl Call<'_> {
    fn buffers(list: &api::Buffers) -> &[*const Buffer] {
        if list.size <= 0 || list.buffers.is_null() {
            return &[];
        }
        // SAFETY: XLA's list of `size` buffer pointers, live during the call.
        unsafe { std::slice::from_raw_parts(list.buffers, list.size as usize) }
    }

    fn args(&self) -> Vec<&Buffer> {
        // SAFETY: the pointers XLA lists are its buffers, live during the call.
        Self::buffers(&self.frame.args)
            .iter()
            .map(|&b| unsafe { &*b })
            .collect()
    }

    fn rets(&self) -> Vec<&Buffer> {
        // SAFETY: as `args`.
        Self::buffers(&self.frame.rets)
            .iter()
            .map(|&b| unsafe { &*b })
            .collect()
    }

    /// The attribute `name`, if the call has it (scalars of the types JAX makes of Python
    /// numbers and booleans, and strings).
    fn attr(&self, name: &str) -> Result<Option<Attr<'_>>, Failure> {
        let attrs = &self.frame.attrs;
        for i in 0..attrs.size.max(0) as usize {
            // SAFETY: XLA's `size` names, types and values, live during the call; a name is
            // a byte span, a value the type its tag says.
            let (span, kind, value) = unsafe { (&**attrs.names.add(i), *attrs.types.add(i), *attrs.attrs.add(i)) };
            let key = unsafe { std::slice::from_raw_parts(span.ptr as *const u8, span.len) };
            if key != name.as_bytes() {
                continue;
            }
            let value = match kind {
                api::ATTR_STRING => {
                    let text = unsafe { &*(value as *const api::ByteSpan) };
                    let bytes = unsafe { std::slice::from_raw_parts(text.ptr as *const u8, text.len) };
                    Attr::Text(
                        std::str::from_utf8(bytes).map_err(|_| invalid(format!("attribute {name} is not UTF-8")))?,
                    )
                }
                api::ATTR_SCALAR => {
                    let scalar = unsafe { &*(value as *const api::Scalar) };
                    match scalar.dtype {
                        api::PRED => Attr::Bool(unsafe { *(scalar.value as *const u8) } != 0),
                        api::S32 => Attr::Int(unsafe { *(scalar.value as *const i32) } as i64),
                        api::S64 => Attr::Int(unsafe { *(scalar.value as *const i64) }),
                        api::U64 => Attr::Int(unsafe { *(scalar.value as *const u64) } as i64),
                        api::F32 => Attr::Float(unsafe { *(scalar.value as *const f32) } as f64),
                        api::F64 => Attr::Float(unsafe { *(scalar.value as *const f64) }),
                        other => return Err(invalid(format!("attribute {name} has XLA type {other}"))),
                    }
                }
                other => return Err(invalid(format!("attribute {name} has XLA kind {other}"))),
            };
            return Ok(Some(value));
        }
        Ok(None)
    }

    fn flag(&self, name: &str) -> Result<bool, Failure> {
        match self.attr(name)? {
            None => Ok(false),
            Some(Attr::Bool(b)) => Ok(b),
            Some(other) => Err(invalid(format!("attribute {name} is {other:?}, not a bool"))),
        }
    }

    fn int(&self, name: &str) -> Result<i64, Failure> {
        match self.attr(name)? {
            Some(Attr::Int(v)) => Ok(v),
            other => Err(invalid(format!("attribute {name} is {other:?}, not an integer"))),
        }
    }

    fn text(&self, name: &str) -> Result<&str, Failure> {
        match self.attr(name)? {
            Some(Attr::Text(t)) => Ok(t),
            other => Err(invalid(format!("attribute {name} is {other:?}, not a string"))),
        }
    }

    /// The device the call's first buffer with memory is on (-1: the host backend, on
    /// XLA's CPU platform, or where every array is empty and nothing is read or written),
    /// its context, and XLA's stream there (a host stream on the host).
    fn context_and_stream(&self) -> Result<(i64, Context, Stream), Failure> {
        let placed = self.args().into_iter().chain(self.rets()).find(|b| !b.data.is_null());
        let (Platform::Gpu, Some(placed)) = (self.platform, placed) else {
            let ctx = shared_context(-1)?;
            let stream = ctx.new_stream()?;
            return Ok((-1, ctx, stream));
        };
        let device = scanrt::device_of_pointer(placed.data as u64)?
            .ok_or_else(|| invalid("the arrays are not on one GPU".into()))?;
        let device = device as i64;
        let ctx = shared_context(device)?;
        let mut args = api::StreamGetArgs {
            struct_size: std::mem::size_of::<api::StreamGetArgs>(),
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            stream: std::ptr::null_mut(),
        };
        // SAFETY: the API's stream query on this call's context; an error it returns is
        // ours to report (XLA owns it once returned, which `handle` does not do: the
        // message here says what failed instead).
        let error = unsafe { (self.api.stream_get)(&mut args) };
        if !error.is_null() {
            return Err(Failure {
                code: api::ERROR_INTERNAL,
                message: "scanrt: XLA gave no CUDA stream for the call".into(),
            });
        }
        // SAFETY: XLA's stream of this device, live for the call; the context checks that
        // it belongs to the device.
        let stream = unsafe { ctx.borrow_stream(args.stream) }?;
        Ok((device, ctx, stream))
    }
}

/// A view of an XLA buffer: dense, row-major, its element type from the table.
///
/// # Safety
/// `b` is a buffer of the current call; the view must not outlive it.
unsafe fn view(b: &Buffer, writable: bool) -> Result<ArrayView<'static>, Failure> {
    let dtype = u8::try_from(b.dtype)
        .ok()
        .and_then(DType::of_xla)
        .ok_or_else(|| invalid(format!("XLA element type {} is not one scanrt scans", b.dtype)))?;
    let shape: Vec<u64> = if b.rank <= 0 {
        Vec::new()
    } else {
        // SAFETY: XLA's `rank` dimensions.
        unsafe { std::slice::from_raw_parts(b.dims, b.rank as usize) }
            .iter()
            .map(|&d| d as u64)
            .collect()
    };
    // SAFETY: XLA's dense buffer of `shape`, live for the call (the caller's promise).
    let v = unsafe { ArrayView::contiguous(b.data as u64, dtype, &shape) }?;
    Ok(if writable { v } else { v.read_only() })
}
