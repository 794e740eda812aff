//! Buffers: dtype-tagged arrays in host memory (host backend) or device memory.

use std::ffi::c_void;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::{bail, Error, Result};
use crate::runtime::cu;
use crate::scalar::Scalar;
use crate::stream::Stream;
use crate::types::DType;

enum Storage {
    Host(Vec<u64>),
    Device { ptr: u64, owned: bool },
}

/// A dtype-tagged array: host memory on the host backend, device memory on a GPU;
/// owned by scanrt or a borrowed view of an application's device pointer.
pub struct Buffer {
    pub(crate) ctx: Context,
    pub(crate) dtype: DType,
    pub(crate) len: u64,
    storage: Storage,
}

// SAFETY: the buffer owns or borrows plain memory; access is ordered by streams.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Allocates `len` elements of `dtype` (contents unspecified).
    pub fn new(ctx: &Context, dtype: DType, len: u64) -> Result<Buffer> {
        let bytes = len.checked_mul(dtype.size() as u64).filter(|&b| b <= isize::MAX as u64);
        let Some(bytes) = bytes else {
            bail!(
                LengthOverflow,
                "{len} elements of {} overflow the address space",
                dtype.c_name()
            )
        };
        let storage = match ctx.engine() {
            Engine::Host => {
                let words = usize::try_from(bytes.div_ceil(8))
                    .map_err(|_| Error::new(crate::error::ScanrtStatus::LengthOverflow, "buffer too large"))?;
                let mut v: Vec<u64> = Vec::new();
                v.try_reserve_exact(words).map_err(|_| {
                    Error::new(
                        crate::error::ScanrtStatus::OutOfMemory,
                        format!("host allocation of {bytes} bytes failed"),
                    )
                })?;
                v.resize(words, 0);
                Storage::Host(v)
            }
            Engine::Gpu(engine) => {
                let _current = engine.device.enter()?;
                // Size checked above; zero bytes allocate nothing.
                let ptr = cu::alloc(bytes as usize)?;
                Storage::Device { ptr, owned: true }
            }
        };
        Ok(Buffer {
            ctx: ctx.clone(),
            dtype,
            len,
            storage,
        })
    }

    /// A view of an application's device allocation (never freed by scanrt).
    ///
    /// # Safety
    /// `ptr` must stay valid for `len` elements of `dtype` while the view is used.
    pub unsafe fn wrap_device(ctx: &Context, ptr: *mut c_void, dtype: DType, len: u64) -> Result<Buffer> {
        let d = ctx.gpu()?;
        if ptr.is_null() && len > 0 {
            bail!(NullArgument, "device pointer is NULL");
        }
        let Some(bytes) = len.checked_mul(dtype.size() as u64) else {
            bail!(LengthOverflow, "{len} elements overflow")
        };
        if len > 0 {
            let _current = d.enter()?;
            d.check_device_range(ptr as u64, bytes, "wrapped buffer")?;
        }
        Ok(Buffer {
            ctx: ctx.clone(),
            dtype,
            len,
            storage: Storage::Device {
                ptr: ptr as u64,
                owned: false,
            },
        })
    }

    /// A new buffer holding a copy of `data`.
    pub fn from_slice<T: Scalar>(ctx: &Context, stream: &Stream, data: &[T]) -> Result<Buffer> {
        let mut b = Buffer::new(ctx, T::DTYPE, data.len() as u64)?;
        b.upload(stream, data)?;
        Ok(b)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element address: a device pointer on a GPU, a host pointer on the host.
    pub fn addr(&self) -> u64 {
        match &self.storage {
            Storage::Host(v) => v.as_ptr() as u64,
            Storage::Device { ptr, .. } => *ptr,
        }
    }

    fn check_host_len<T: Scalar>(&self, n: usize) -> Result<()> {
        if T::DTYPE != self.dtype {
            bail!(
                InvalidArgument,
                "buffer holds {}, not {}",
                self.dtype.c_name(),
                T::DTYPE.c_name()
            );
        }
        if n as u64 > self.len {
            bail!(BufferTooSmall, "{n} elements do not fit a buffer of {}", self.len);
        }
        Ok(())
    }

    /// Copies `data` into the start of the buffer, then waits for the copy.
    pub fn upload<T: Scalar>(&mut self, stream: &Stream, data: &[T]) -> Result<()> {
        self.check_host_len::<T>(data.len())?;
        self.copy_bytes(stream, data.as_ptr() as *mut c_void, std::mem::size_of_val(data), true)
    }

    /// Copies the first `n` elements out of the buffer (waits for queued work first).
    pub fn download<T: Scalar>(&self, stream: &Stream, n: usize) -> Result<Vec<T>> {
        self.check_host_len::<T>(n)?;
        let mut out = Vec::<T>::with_capacity(n);
        self.copy_bytes(
            stream,
            out.as_mut_ptr() as *mut c_void,
            n * std::mem::size_of::<T>(),
            false,
        )?;
        // SAFETY: copy_bytes filled all n elements.
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Raw byte copy between `host` and the buffer's start, synchronous on `stream`.
    pub(crate) fn copy_bytes(&self, stream: &Stream, host: *mut c_void, bytes: usize, to_buffer: bool) -> Result<()> {
        self.ctx.check_stream_owner(stream)?;
        match &self.storage {
            Storage::Host(v) => {
                let buf = v.as_ptr() as *mut u8;
                // SAFETY: bytes <= buffer size (checked by callers); host is valid for bytes.
                // The caller's memory may overlap the buffer (it may be the buffer): a
                // memmove, never a copy that assumes disjoint ranges.
                unsafe {
                    if to_buffer {
                        std::ptr::copy(host as *const u8, buf, bytes)
                    } else {
                        std::ptr::copy(buf as *const u8, host as *mut u8, bytes)
                    }
                }
                Ok(())
            }
            Storage::Device { ptr, .. } => {
                let d = self.ctx.gpu()?;
                let _current = d.enter()?;
                // SAFETY: the device range holds at least `bytes`; the host range is
                // valid for `bytes` and we wait for the copy before returning.
                unsafe {
                    let raw = stream.raw() as cu::CUstream;
                    cu::copy_host_async(host, *ptr, bytes, !to_buffer, raw)?;
                    cu::synchronize_stream(raw)
                }
            }
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let (Storage::Device { ptr, owned: true }, Ok(d)) = (&self.storage, self.ctx.gpu()) {
            if *ptr != 0 {
                if let Ok(_current) = d.enter() {
                    // SAFETY: allocated by Buffer::new with cuMemAlloc; freed once. cuMemFree
                    // waits for outstanding work that uses it.
                    unsafe { cu::free(*ptr) };
                }
            }
        }
    }
}

impl Context {
    /// `ContextMismatch` unless `buffer` was allocated by this context.
    pub(crate) fn check_buffer_owner(&self, buffer: &Buffer) -> Result<()> {
        if !self.same(&buffer.ctx) {
            bail!(ContextMismatch, "a buffer was created by another scanrt context");
        }
        Ok(())
    }
}
