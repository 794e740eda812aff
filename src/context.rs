//! The public Rust API: contexts, streams and buffers, and the scan entry points.
//!
//! What is thread-safe: a [`Context`] is `Send + Sync` and may be shared by any number
//! of threads; so are [`Stream`] and [`Buffer`] handles. Calls on *different* streams
//! run concurrently. Calls on the *same* stream from several threads are safe but
//! ordered only by whichever call reaches the stream first, exactly as with CUDA.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUstream};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::gpu::device::{GpuDevice, SinglePassKernel};
use crate::gpu::driver::check;
use crate::gpu::jit::Specialization;
use crate::gpu::launch::{self, Workspace};
use crate::scan::{validate, RawScan};
use crate::types::{check_types, Algorithm, ChoiceReason, DType, Op, Scalar, ScanDesc, Segments};

/// Where a context runs scans. Discriminants are the C ABI values.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The GPU when a CUDA driver and device are usable, else the host.
    Auto = 0,
    /// A CUDA device (fails with `SCANRT_STATUS_NO_DRIVER` / `SCANRT_STATUS_NO_DEVICE`
    /// when there is none).
    Gpu = 1,
    /// The CPU.
    Host = 2,
}

enum Engine {
    Host,
    Gpu(GpuDevice),
}

/// A scanrt context: a CUDA device (through its primary context, so it shares memory
/// and streams with CUDA runtime code in the same process) or the host backend.
#[derive(Clone)]
pub struct Context {
    engine: Arc<Engine>,
    backend_reason: Arc<str>,
}

/// What a scan call did: where it ran, which algorithm, and why that one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanInfo {
    /// Where the scan ran.
    pub backend: Backend,
    /// The algorithm that ran.
    pub algorithm: Algorithm,
    /// Why that algorithm.
    pub reason: ChoiceReason,
}

impl Context {
    /// Opens a context on CUDA device `device` or on the host. `Auto` takes the GPU when
    /// a CUDA driver, a device and NVRTC are there, and the host when the driver or every
    /// device or NVRTC is missing; any other failure (a wrong ordinal, a broken driver)
    /// is returned, never hidden. [`Context::backend_reason`] says why it chose what it
    /// chose.
    pub fn new(backend: Backend, device: usize) -> Result<Context> {
        let (engine, reason) = match backend {
            Backend::Host => (Engine::Host, "the host backend was requested".to_string()),
            Backend::Gpu => {
                let d = GpuDevice::open(device)?;
                d.nvrtc()?;
                let reason = format!("the GPU backend was requested: CUDA device {device}");
                (Engine::Gpu(d), reason)
            }
            // Only a missing driver, device or NVRTC sends Auto to the host; an ordinal
            // out of range or a failing driver is the caller's to see.
            Backend::Auto => {
                let host_because = |e: Error| (Engine::Host, format!("auto: the host, because {}", e.message));
                match crate::gpu::device::device_count() {
                    Err(e) if matches!(e.status, ScanrtStatus::NoDriver | ScanrtStatus::NoDevice) => host_because(e),
                    Err(e) => return Err(e),
                    Ok(_) => {
                        let d = GpuDevice::open(device)?;
                        match d.nvrtc() {
                            Ok(_) => (
                                Engine::Gpu(d),
                                format!("auto: CUDA device {device} and NVRTC are usable"),
                            ),
                            Err(e) => host_because(e),
                        }
                    }
                }
            }
        };
        Ok(Context {
            engine: Arc::new(engine),
            backend_reason: reason.into(),
        })
    }

    /// Why the context runs where it runs (for `Auto`: what it found).
    pub fn backend_reason(&self) -> &str {
        &self.backend_reason
    }

    /// Where the context runs scans.
    pub fn backend(&self) -> Backend {
        match *self.engine {
            Engine::Host => Backend::Host,
            Engine::Gpu(_) => Backend::Gpu,
        }
    }

    /// A one-line description: the device name and architecture, or "host".
    pub fn describe(&self) -> String {
        match &*self.engine {
            Engine::Host => format!(
                "host ({} threads)",
                std::thread::available_parallelism().map_or(1, |p| p.get())
            ),
            Engine::Gpu(d) => format!(
                "{} (sm_{}, {} SMs)",
                d.ctx.name().unwrap_or_else(|_| "CUDA device".into()),
                d.arch,
                d.sm_count
            ),
        }
    }

    pub(crate) fn gpu(&self) -> Result<&GpuDevice> {
        match &*self.engine {
            Engine::Gpu(d) => Ok(d),
            Engine::Host => bail!(
                WrongBackend,
                "this operation needs a GPU context; the context runs on the host backend"
            ),
        }
    }

    fn same(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.engine, &other.engine)
    }

    /// The underlying cudarc context (GPU contexts only), for Rust users mixing APIs.
    pub fn cuda_context(&self) -> Result<&Arc<cudarc::driver::CudaContext>> {
        Ok(&*self.gpu()?.ctx)
    }

    /// A new stream owned by scanrt (a no-op stream on the host backend).
    pub fn new_stream(&self) -> Result<Stream> {
        let cuda = match &*self.engine {
            Engine::Host => None,
            Engine::Gpu(d) => {
                let _current = d.enter()?;
                Some(d.ctx.new_stream()?)
            }
        };
        Ok(Stream {
            ctx: self.clone(),
            raw: cuda.as_ref().map_or(std::ptr::null_mut(), |s| s.cu_stream()),
            _owned: cuda,
        })
    }

    /// Adopts an application's `CUstream` / `cudaStream_t` (NULL = the legacy default
    /// stream) without taking ownership: scanrt never destroys it.
    ///
    /// # Safety
    /// The stream must stay valid while the returned `Stream` is used.
    pub unsafe fn borrow_stream(&self, raw: *mut c_void) -> Result<Stream> {
        let d = self.gpu()?;
        let _current = d.enter()?;
        d.check_stream(raw as CUstream)?;
        Ok(Stream {
            ctx: self.clone(),
            raw: raw as CUstream,
            _owned: None,
        })
    }

    /// Compiles (or loads from the disk cache) the kernels for a type pair and operator
    /// ahead of the first scan. A no-op on the host backend.
    pub fn prepare(&self, input: DType, output: DType, op: Op) -> Result<()> {
        check_types(input, output, op)?;
        if let Engine::Gpu(d) = &*self.engine {
            let _current = d.enter()?;
            let (regular, small) = Specialization::all_for(d.arch, input, output, &ScanDesc::inclusive(op));
            for spec in std::iter::once(regular).chain(small) {
                d.module(spec)?;
            }
        }
        Ok(())
    }

    /// A one-line description of the kernels a type pair and operator use on this
    /// context (tile shape, persistent grid size), compiling them if needed.
    pub fn kernel_report(&self, input: DType, output: DType, op: Op) -> Result<String> {
        check_types(input, output, op)?;
        let d = self.gpu()?;
        let _current = d.enter()?;
        let (regular, _) = Specialization::all_for(d.arch, input, output, &ScanDesc::inclusive(op));
        let m = d.module(regular)?;
        let s = m.shape;
        let describe = |k: &SinglePassKernel| -> Result<String> {
            let f = &k.function;
            Ok(format!(
                "{} resident blocks, {} registers, {} B local (spills), {} B static + {} B dynamic shared",
                k.resident_blocks,
                f.num_regs()?,
                f.local_size_bytes()?,
                f.shared_size_bytes()?,
                k.shared_bytes
            ))
        };
        let bulk = match &m.single_pass_bulk {
            Some(k) => format!(
                "; bulk-copy single pass from {} tiles ({} buffers of {} items): {}",
                s.bulk_min_tiles,
                s.bulk_buffers,
                s.bulk_tile_elems(),
                describe(k)?
            ),
            None => String::new(),
        };
        let wave = match &m.single_pass_wave {
            Some(k) => format!(
                "; one-wave single pass ({} per tile, look-back {} slots per lane): {}",
                s.wave_tile_elems(),
                s.wave_lookback_slots_per_lane,
                describe(k)?
            ),
            None => String::new(),
        };
        Ok(format!(
            "{}x{} items ({} per tile), look-back {} slots per lane, spin {} then sleep {} ns, min blocks/SM {}, \
             persistent {}; single pass: {}{bulk}{wave}",
            s.threads,
            s.items,
            s.tile_elems(),
            s.lookback_slots_per_lane,
            s.spin_before_sleep,
            s.sleep_ns,
            s.min_blocks_per_sm,
            s.persistent,
            describe(&m.single_pass)?
        ))
    }

    /// Bytes of workspace [`Context::scan_raw`] needs for `req` when given one (0 = none).
    pub fn workspace_size(&self, req: &RawScan, desc: &ScanDesc) -> Result<usize> {
        validate(req, desc)?;
        Ok(match &*self.engine {
            Engine::Host => 0,
            Engine::Gpu(d) => launch::workspace_bytes(d, req, desc),
        })
    }

    /// Initialises a caller-provided workspace on `stream` (zero-fills it and writes its
    /// sealed header). Required before its first use, and again after a `WorkspaceFault`
    /// names it; a kernel refuses a workspace that was not initialised, or was
    /// initialised for fewer tiles than its scan needs.
    pub fn init_workspace(&self, stream: &Stream, workspace: Workspace) -> Result<()> {
        let d = self.gpu()?;
        self.check_stream_owner(stream)?;
        let _current = d.enter()?;
        crate::gpu::workspace::check_caller(d, workspace)?;
        // SAFETY: the range was just checked to be device memory of this device, aligned
        // and long enough for the header.
        unsafe { crate::gpu::workspace::initialise(workspace.ptr, workspace.bytes, stream.raw) }
    }

    /// Releases the look-back workspaces of the per-stream pool that no call is using,
    /// and those of destroyed streams (which waits for the device when there are any).
    /// Graphs keep their own workspaces. A no-op on the host backend.
    pub fn trim(&self) -> Result<()> {
        if let Engine::Gpu(d) = &*self.engine {
            let _current = d.enter()?;
            d.workspaces.trim()?;
        }
        Ok(())
    }

    /// The number of streams whose look-back workspace the pool holds (0 on the host).
    pub fn pooled_workspaces(&self) -> usize {
        match &*self.engine {
            Engine::Host => 0,
            Engine::Gpu(d) => d.workspaces.len(),
        }
    }

    /// Returns, as an error, a fault a kernel of this context reported since the last
    /// call (a refused workspace or an expired look-back: `WorkspaceFault`). Scan calls
    /// check this first; call it to learn of a fault without scanning.
    pub fn check_faults(&self) -> Result<()> {
        match &*self.engine {
            Engine::Host => Ok(()),
            Engine::Gpu(d) => d.take_fault(),
        }
    }

    fn check_stream_owner(&self, stream: &Stream) -> Result<()> {
        if !self.same(&stream.ctx) {
            bail!(ContextMismatch, "the stream was created by another scanrt context");
        }
        Ok(())
    }

    /// The scan over raw addresses: device pointers on a GPU context, host pointers on
    /// the host backend. Asynchronous on `stream` for the GPU. Bad input returns an
    /// error before anything is written.
    ///
    /// # Safety
    /// On the host backend the pointers must be valid for `n` elements. On a GPU the
    /// driver checks that they are device memory large enough, but they must stay
    /// allocated until the scan completes on the stream.
    pub unsafe fn scan_raw(
        &self,
        stream: &Stream,
        req: &RawScan,
        desc: &ScanDesc,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        self.check_stream_owner(stream)?;
        validate(req, desc)?;
        match &*self.engine {
            Engine::Host => {
                crate::scan::check_overlaps(req, desc)?;
                crate::host::scan(req, desc)?;
                Ok(ScanInfo {
                    backend: Backend::Host,
                    algorithm: Algorithm::Host,
                    reason: ChoiceReason::HostBackend,
                })
            }
            Engine::Gpu(d) => {
                let _current = d.enter()?;
                let (algorithm, reason) = launch::scan(d, stream.raw, req, desc, workspace)?;
                Ok(ScanInfo {
                    backend: Backend::Gpu,
                    algorithm,
                    reason,
                })
            }
        }
    }

    /// Scans `input` into `output` (scanrt buffers of this context; pass the same buffer
    /// twice to scan in place). The output is written through a shared reference because
    /// its memory is device memory ordered by the stream, not Rust-owned data.
    pub fn scan(&self, stream: &Stream, input: &Buffer, output: &Buffer, desc: &ScanDesc) -> Result<ScanInfo> {
        let req = self.buffer_request(input, output, 0)?;
        // SAFETY: both buffers are live allocations of this context of the checked lengths.
        unsafe { self.scan_raw(stream, &req, desc, None) }
    }

    /// A segmented scan (`desc.segments` says how `segments` is read): byte flags in a
    /// `U8` buffer, bit flags in a `U32` buffer, keys in a buffer of the key type.
    pub fn scan_segmented(
        &self,
        stream: &Stream,
        input: &Buffer,
        segments: &Buffer,
        output: &Buffer,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        self.check_buffer_owner(segments)?;
        let (want, needed) = match desc.segments {
            Segments::None => bail!(
                InvalidArgument,
                "scan_segmented needs a descriptor with segments (ByteFlags, BitFlags or Keys)"
            ),
            Segments::ByteFlags => (DType::U8, input.len),
            Segments::BitFlags => (DType::U32, input.len.div_ceil(32)),
            Segments::Keys(k) => (k, input.len),
        };
        if segments.dtype != want {
            bail!(
                InvalidArgument,
                "{} segments need a {} buffer, not {}",
                desc.segments.c_name(),
                want.c_name(),
                segments.dtype.c_name()
            );
        }
        if segments.len < needed {
            bail!(
                BufferTooSmall,
                "{} for {} elements need {needed} entries but the buffer holds {}",
                desc.segments.c_name(),
                input.len,
                segments.len
            );
        }
        let req = self.buffer_request(input, output, segments.addr())?;
        // SAFETY: all three buffers are live allocations of this context of checked lengths.
        unsafe { self.scan_raw(stream, &req, desc, None) }
    }

    pub(crate) fn buffer_request(&self, input: &Buffer, output: &Buffer, segments: u64) -> Result<RawScan> {
        self.check_buffer_owner(input)?;
        self.check_buffer_owner(output)?;
        if output.len < input.len {
            bail!(
                BufferTooSmall,
                "output holds {} elements but the input has {}",
                output.len,
                input.len
            );
        }
        Ok(RawScan {
            segments,
            ..RawScan::new(input.addr(), input.dtype, output.addr(), output.dtype, input.len)
        })
    }

    /// Scans cudarc slices directly (GPU contexts). The slices must live on this
    /// context's device. The scan runs on `stream`; order it after the slices' own
    /// cudarc stream yourself (for example by passing that stream to `borrow_stream`).
    pub fn scan_cuda<I: Scalar + cudarc::driver::DeviceRepr, O: Scalar + cudarc::driver::DeviceRepr>(
        &self,
        stream: &Stream,
        input: &CudaSlice<I>,
        output: &mut CudaSlice<O>,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        if output.len() < input.len() {
            bail!(
                BufferTooSmall,
                "output holds {} elements, input {}",
                output.len(),
                input.len()
            );
        }
        let cuda_stream = input.stream().clone();
        let (in_ptr, _r) = input.device_ptr(&cuda_stream);
        let (out_ptr, _w) = output.device_ptr_mut(&cuda_stream);
        let req = RawScan {
            input: in_ptr,
            input_dtype: I::DTYPE,
            output: out_ptr,
            output_dtype: O::DTYPE,
            n: input.len() as u64,
            segments: 0,
        };
        // SAFETY: the slices are live allocations (range-checked by the driver query).
        unsafe { self.scan_raw(stream, &req, desc, None) }
    }

    pub(crate) fn check_buffer_owner(&self, buffer: &Buffer) -> Result<()> {
        if !self.same(&buffer.ctx) {
            bail!(ContextMismatch, "a buffer was created by another scanrt context");
        }
        Ok(())
    }
}

/// A stream: owned by scanrt, or borrowed from the application.
pub struct Stream {
    ctx: Context,
    raw: CUstream,
    _owned: Option<Arc<CudaStream>>,
}

// SAFETY: a CUstream handle may be used from any thread; the owned wrapper is Send+Sync.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Drop for Stream {
    /// Destroys an owned stream (work queued on it still completes) and leaves the
    /// thread's current context as it was (cudarc's drop binds the stream's context).
    fn drop(&mut self) {
        if let Some(owned) = self._owned.take() {
            let _restore = crate::gpu::driver::PreserveCurrent::new();
            drop(owned);
        }
    }
}

impl Stream {
    /// A borrowed stream without the ownership check; the scan path checks the stream
    /// with the driver itself, so the raw-pointer C entry points skip a second query.
    pub(crate) fn borrowed(ctx: &Context, raw: *mut c_void) -> Result<Stream> {
        ctx.gpu()?;
        Ok(Stream {
            ctx: ctx.clone(),
            raw: raw as CUstream,
            _owned: None,
        })
    }

    /// The raw `CUstream` (NULL on the host backend).
    pub fn raw(&self) -> *mut c_void {
        self.raw as *mut c_void
    }

    /// Waits until all work queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        if let Ok(d) = self.ctx.gpu() {
            let _current = d.enter()?;
            // SAFETY: the stream belongs to this context (checked when it was made).
            check(unsafe { sys::cuStreamSynchronize(self.raw) }, "cuStreamSynchronize")?;
        }
        Ok(())
    }
}

enum Storage {
    Host(Vec<u64>),
    Device { ptr: u64, owned: bool },
}

/// A dtype-tagged array: host memory on the host backend, device memory on a GPU;
/// owned by scanrt or a borrowed view of an application's device pointer.
pub struct Buffer {
    ctx: Context,
    dtype: DType,
    len: u64,
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
        let storage = match &*ctx.engine {
            Engine::Host => {
                let words = usize::try_from(bytes.div_ceil(8))
                    .map_err(|_| Error::new(crate::ScanrtStatus::LengthOverflow, "buffer too large"))?;
                let mut v: Vec<u64> = Vec::new();
                v.try_reserve_exact(words).map_err(|_| {
                    Error::new(
                        crate::ScanrtStatus::OutOfMemory,
                        format!("host allocation of {bytes} bytes failed"),
                    )
                })?;
                v.resize(words, 0);
                Storage::Host(v)
            }
            Engine::Gpu(d) => {
                let _current = d.enter()?;
                let mut ptr = 0;
                // SAFETY: out-pointer to a local; size checked above. Zero bytes allocate nothing.
                if bytes > 0 {
                    check(unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes as usize) }, "cuMemAlloc")?;
                }
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

    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn len(&self) -> u64 {
        self.len
    }
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
                    if to_buffer {
                        check(
                            sys::cuMemcpyHtoDAsync_v2(*ptr, host, bytes, stream.raw),
                            "cuMemcpyHtoDAsync",
                        )?;
                    } else {
                        check(
                            sys::cuMemcpyDtoHAsync_v2(host, *ptr, bytes, stream.raw),
                            "cuMemcpyDtoHAsync",
                        )?;
                    }
                    check(sys::cuStreamSynchronize(stream.raw), "cuStreamSynchronize")
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
                    unsafe { sys::cuMemFree_v2(*ptr) };
                }
            }
        }
    }
}
