//! A CUDA device as scanrt uses it: the device's primary context, its compiled kernels
//! and its per-stream look-back workspaces.
//!
//! Thread safety: a `GpuDevice` is shared by any number of threads. The module cache and
//! the workspace pool are behind short mutex sections; a kernel specialisation is
//! compiled exactly once even when threads ask for it at the same moment. Work on one
//! stream is ordered by the stream; each stream gets its own workspace, so scans on
//! different streams run concurrently.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use once_cell::sync::OnceCell;
use parking_lot::Mutex;

use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::gpu::driver::{self, check, CurrentContext};
use crate::gpu::jit::{self, Nvrtc, Specialization};
use crate::gpu::tuning::TileShape;
use crate::types::{DType, ScanDesc};

/// Every kernel of one specialisation, loaded in this device's context.
pub(crate) struct ScanModule {
    pub shape: TileShape,
    /// The register-staged single pass (every scan).
    pub single_pass: SinglePassKernel,
    /// The bulk-copy single pass, where the specialisation has one.
    pub single_pass_bulk: Option<SinglePassKernel>,
    /// The one-wave single pass (one block per tile), where the specialisation has one.
    pub single_pass_wave: Option<SinglePassKernel>,
    pub matrix_reduce: CudaFunction,
    pub matrix_scan_sums: CudaFunction,
    pub matrix_scan_tiles: CudaFunction,
    _module: Arc<CudaModule>,
}

/// A single-pass kernel and how it is launched.
pub(crate) struct SinglePassKernel {
    pub function: CudaFunction,
    /// Threads per block.
    pub block: u32,
    /// Blocks resident on the whole device at once: the persistent grid size.
    pub resident_blocks: u32,
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
}

/// A device allocation holding a look-back header and status slots (zero-filled once).
struct Workspace {
    ptr: CUdeviceptr,
    bytes: usize,
}

/// Size of the look-back header ([generation | ticket], finished blocks, reserved).
pub(crate) const LOOKBACK_HEADER_BYTES: usize = 16;
/// Workspaces are never smaller than this many status slots (2^28 4-byte elements).
const MIN_WORKSPACE_SLOTS: u64 = 1 << 16;

/// Bytes of look-back state for `slots` tiles with an accumulator of `acc_size` bytes
/// (see TileStatus in kernels/device/single_pass_scan.cuh).
pub(crate) fn lookback_bytes(acc_size: usize, slots: u64) -> usize {
    LOOKBACK_HEADER_BYTES + slots as usize * slot_bytes(acc_size)
}

/// A status slot packs the status word with the value: 8 bytes for 4-byte values, 16
/// (the status word twice) for 8-byte ones.
fn slot_bytes(acc_size: usize) -> usize {
    if acc_size == 4 {
        8
    } else {
        16
    }
}

/// How many status slots fit into a workspace of `bytes`.
pub(crate) fn lookback_slots(acc_size: usize, bytes: usize) -> u64 {
    (bytes.saturating_sub(LOOKBACK_HEADER_BYTES) / slot_bytes(acc_size)) as u64
}

pub(crate) struct GpuDevice {
    pub ctx: Arc<CudaContext>,
    pub ordinal: usize,
    pub arch: i32,
    pub sm_count: u32,
    nvrtc: OnceCell<Nvrtc>,
    modules: Mutex<HashMap<Specialization, Arc<OnceCell<Arc<ScanModule>>>>>,
    /// Keyed by (stream handle, accumulator size): the two status layouts never share memory.
    workspaces: Mutex<HashMap<(usize, usize), Workspace>>,
    /// Outgrown workspaces: freed with the device.
    retired: Mutex<Vec<CUdeviceptr>>,
}

impl GpuDevice {
    /// Opens device `ordinal` through its primary context, leaving the thread's current
    /// context as it was.
    pub fn open(ordinal: usize) -> Result<GpuDevice> {
        // SAFETY: only probes whether libcuda can be dlopen'ed.
        if !unsafe { sys::is_culib_present() } {
            bail!(NoDriver, "no CUDA driver library (libcuda.so) could be loaded");
        }
        // SAFETY: the library is present; cuInit is idempotent.
        let init = unsafe { sys::cuInit(0) };
        if init != sys::CUresult::CUDA_SUCCESS {
            bail!(NoDevice, "cuInit failed ({init:?}): no usable CUDA device");
        }
        let count = CudaContext::device_count().map_err(Error::from)?;
        if ordinal as i64 >= count as i64 {
            bail!(
                NoDevice,
                "CUDA device ordinal {ordinal} requested but {count} device(s) present"
            );
        }
        let mut previous: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::cuCtxGetCurrent(&mut previous) }, "cuCtxGetCurrent")?;
        let opened = CudaContext::new(ordinal);
        // CudaContext::new makes the primary context current; put the caller's back.
        // SAFETY: `previous` was current a moment ago (or NULL).
        unsafe { sys::cuCtxSetCurrent(previous) };
        let ctx = opened?;
        // SAFETY: scanrt orders its own work by streams and never relies on cudarc's
        // per-slice event tracking, which would add work to every call.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability()?;
        let sm_count = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        Ok(GpuDevice {
            ctx,
            ordinal,
            arch: major * 10 + minor,
            sm_count,
            nvrtc: OnceCell::new(),
            modules: Mutex::new(HashMap::new()),
            workspaces: Mutex::new(HashMap::new()),
            retired: Mutex::new(Vec::new()),
        })
    }

    pub fn enter(&self) -> Result<CurrentContext> {
        CurrentContext::enter(self.ctx.cu_ctx())
    }

    /// The module a scan of `n` elements runs.
    pub fn specialization(&self, input: DType, output: DType, desc: &ScanDesc, n: u64) -> Specialization {
        Specialization::for_scan(self.arch, input, output, desc, n)
    }

    pub fn module(&self, spec: Specialization) -> Result<Arc<ScanModule>> {
        let cell = self.modules.lock().entry(spec).or_default().clone();
        cell.get_or_try_init(|| self.build_module(spec)).cloned()
    }

    fn build_module(&self, spec: Specialization) -> Result<Arc<ScanModule>> {
        let nvrtc = self.nvrtc.get_or_try_init(Nvrtc::load)?;
        let target = nvrtc.target_for(self.arch)?;
        let image = nvrtc.compile_cached(&spec, target)?;
        let ptx = if target.cubin {
            cudarc::nvrtc::Ptx::from_binary(image)
        } else {
            cudarc::nvrtc::Ptx::from_src(String::from_utf8_lossy(&image).trim_end_matches('\0').to_string())
        };
        let module = self.ctx.load_module(ptx)?;
        let block = spec.shape.single_pass_block();
        let single_pass = self.single_pass_kernel(&module, jit::SINGLE_PASS, &spec, block, 0)?;
        let single_pass_bulk = if spec.has_bulk_kernel() {
            let shared_bytes = spec.shape.bulk_shared_bytes(spec.output.size());
            Some(self.single_pass_kernel(&module, jit::SINGLE_PASS_BULK, &spec, block, shared_bytes)?)
        } else {
            None
        };
        let single_pass_wave = if spec.has_wave_kernel() {
            Some(self.single_pass_kernel(&module, jit::SINGLE_PASS_WAVE, &spec, spec.shape.wave_threads, 0)?)
        } else {
            None
        };
        Ok(Arc::new(ScanModule {
            shape: spec.shape,
            single_pass,
            single_pass_bulk,
            single_pass_wave,
            matrix_reduce: module.load_function(jit::MATRIX_REDUCE)?,
            matrix_scan_sums: module.load_function(jit::MATRIX_SCAN_SUMS)?,
            matrix_scan_tiles: module.load_function(jit::MATRIX_SCAN_TILES)?,
            _module: module,
        }))
    }

    /// Loads a single-pass kernel of `block` threads with `shared_bytes` of dynamic shared
    /// memory and counts its resident blocks.
    fn single_pass_kernel(
        &self,
        module: &Arc<CudaModule>,
        name: &str,
        spec: &Specialization,
        block: u32,
        shared_bytes: u32,
    ) -> Result<SinglePassKernel> {
        let function = module.load_function(name)?;
        if shared_bytes > 0 {
            // Above 48 KiB a kernel must opt in to its dynamic shared memory.
            function.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )?;
        }
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(block, shared_bytes as usize, None)?;
        if per_sm == 0 {
            bail!(
                CudaError,
                "the single-pass kernel {name} for {spec:?} cannot be resident on sm_{}",
                self.arch
            );
        }
        Ok(SinglePassKernel {
            function,
            block,
            resident_blocks: per_sm * self.sm_count,
            shared_bytes,
        })
    }

    /// A zero-initialised look-back workspace for `stream` with at least `slots` status
    /// slots for accumulators of `acc_size` bytes; reused by every later call on the
    /// stream. The caller has entered this device's context.
    pub fn workspace(&self, stream: CUstream, acc_size: usize, slots: u64) -> Result<(CUdeviceptr, u64)> {
        let key = (stream as usize, acc_size);
        let mut pool = self.workspaces.lock();
        if let Some(ws) = pool.get(&key) {
            let capacity = lookback_slots(acc_size, ws.bytes);
            if capacity >= slots {
                return Ok((ws.ptr, capacity));
            }
        }
        let capacity = slots.max(MIN_WORKSPACE_SLOTS).next_power_of_two();
        let bytes = lookback_bytes(acc_size, capacity);
        let capturing = driver::is_capturing(stream)?;
        let ptr = if capturing {
            // Inside a capture, stream-ordered allocation would become part of the graph;
            // allocate outside it instead (the workspace outlives the capture).
            driver::with_relaxed_capture(|| self.alloc_zeroed_now(bytes))?
        } else {
            let mut ptr: CUdeviceptr = 0;
            // SAFETY: out-pointer to a local; `stream` belongs to this context (checked by the caller).
            unsafe {
                check(sys::cuMemAllocAsync(&mut ptr, bytes, stream), "cuMemAllocAsync")?;
                check(sys::cuMemsetD8Async(ptr, 0, bytes, stream), "cuMemsetD8Async")?;
            }
            ptr
        };
        if let Some(old) = pool.insert(key, Workspace { ptr, bytes }) {
            // Another thread may have taken the old workspace for a launch on this stream
            // that it has not enqueued yet, so it is not freed before the device is
            // dropped. Capacities double, so retired memory stays below the live size.
            self.retired.lock().push(old.ptr);
        }
        Ok((ptr, capacity))
    }

    fn alloc_zeroed_now(&self, bytes: usize) -> Result<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; the memset runs on a private stream that is
        // synchronised before the pointer is handed out.
        unsafe {
            check(sys::cuMemAlloc_v2(&mut ptr, bytes), "cuMemAlloc")?;
            let mut s: CUstream = std::ptr::null_mut();
            check(
                sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
                "cuStreamCreate",
            )?;
            let r = check(sys::cuMemsetD8Async(ptr, 0, bytes, s), "cuMemsetD8Async")
                .and_then(|_| check(sys::cuStreamSynchronize(s), "cuStreamSynchronize"));
            sys::cuStreamDestroy_v2(s);
            if let Err(e) = r {
                sys::cuMemFree_v2(ptr);
                return Err(e);
            }
        }
        Ok(ptr)
    }

    /// Checks that `[ptr, ptr + bytes)` is device memory of this device.
    pub fn check_device_range(&self, ptr: CUdeviceptr, bytes: u64, what: &str) -> Result<()> {
        let info = driver::pointer_info(ptr)?;
        let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
        if info.memory_type != device && info.memory_type != unified {
            bail!(
                NotDeviceMemory,
                "{what} pointer {ptr:#x} is not CUDA device memory (a host pointer?)"
            );
        }
        if info.device_ordinal >= 0 && info.device_ordinal as usize != self.ordinal {
            bail!(
                ContextMismatch,
                "{what} pointer {ptr:#x} belongs to device {} but the context uses device {}",
                info.device_ordinal,
                self.ordinal
            );
        }
        if info.range_size > 0 && ptr + bytes > info.range_start + info.range_size as u64 {
            let available = info.range_start + info.range_size as u64 - ptr;
            return Err(Error::new(
                ScanrtStatus::BufferTooSmall,
                format!(
                    "{what} needs {bytes} bytes at {ptr:#x} but its allocation has only {available} bytes from there"
                ),
            ));
        }
        Ok(())
    }

    pub fn check_stream(&self, stream: CUstream) -> Result<()> {
        let owner = driver::stream_context(stream)?;
        if owner != self.ctx.cu_ctx() {
            bail!(
                ContextMismatch,
                "the stream belongs to another CUDA context than the scanrt context's device {}",
                self.ordinal
            );
        }
        Ok(())
    }
}

impl Drop for GpuDevice {
    fn drop(&mut self) {
        let Ok(_current) = self.enter() else { return };
        // Outstanding scans may still use the workspaces; wait for them before freeing.
        let _ = self.ctx.synchronize();
        for ws in self.workspaces.lock().drain() {
            // SAFETY: the device is idle; each pointer was allocated by this device and is freed once.
            unsafe { sys::cuMemFree_v2(ws.1.ptr) };
        }
        for ptr in self.retired.lock().drain(..) {
            // SAFETY: as above.
            unsafe { sys::cuMemFree_v2(ptr) };
        }
    }
}
