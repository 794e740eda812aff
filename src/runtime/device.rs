//! A CUDA device as scanrt uses it: the device's primary context, NVRTC, the modules
//! loaded from compiled sources, the per-stream look-back workspaces and the fault
//! report. Knows nothing of what the kernels compute.
//!
//! Thread safety: a `GpuDevice` is shared by any number of threads. The module cache and
//! the workspace pool are behind short mutex sections; a source is compiled exactly once
//! even when threads ask for it at the same moment. Work on one stream is ordered by the
//! stream; each stream gets its own workspace, so scans on different streams run
//! concurrently.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use once_cell::sync::OnceCell;
use sha2::{Digest, Sha256};

use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::runtime::calls::CallLog;
use crate::runtime::cu::{
    self, CUdevice_attribute, CUdeviceptr, CUfunction_attribute, CUstream, CurrentContext, SharedContext,
};
use crate::runtime::faults::{fault_error, FaultMailbox};
use crate::runtime::kernel_pack;
use crate::runtime::launch_target::LaunchTarget;
use crate::runtime::nvrtc::{KernelSource, Nvrtc};
use crate::runtime::scratch::ScratchPool;
use crate::runtime::workspace::{self, Workspace, WorkspacePool};
use crate::runtime::Memo;

/// A kernel of a loaded module and how it is launched.
pub(crate) struct LoadedKernel {
    pub function: CudaFunction,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
    /// Blocks resident on the whole device at once (a persistent grid's size).
    pub resident_blocks: u32,
}

impl LoadedKernel {
    /// Launches the kernel on `grid` blocks with `params` as its parameter buffer: the
    /// kernel's parameters are `P`'s fields, which the driver lays out as `P`'s
    /// `#[repr(C)]` layout (it refuses a buffer of another size).
    ///
    /// # Safety
    /// `P` must be the parameter struct the kernel was compiled with, without padding (its
    /// bytes are read), and every address in it valid for what the kernel does with it.
    pub unsafe fn launch<P: Copy>(&self, grid: u32, stream: CUstream, params: &P) -> Result<()> {
        cu::launch_with_buffer(
            self.function.cu_function(),
            grid,
            self.block,
            self.shared_bytes,
            stream,
            std::slice::from_raw_parts(params as *const P as *const u8, std::mem::size_of::<P>()),
        )
    }

    /// [`LoadedKernel::launch`] of `blocks` blocks that form one thread-block cluster.
    ///
    /// # Safety
    /// As [`LoadedKernel::launch`]; the kernel forms clusters of `blocks` blocks
    /// ([`LoadedKernel::max_cluster_blocks`]).
    pub unsafe fn launch_cluster<P: Copy>(&self, blocks: u32, stream: CUstream, params: &P) -> Result<()> {
        cu::launch_cluster_with_buffer(
            self.function.cu_function(),
            blocks,
            self.block,
            self.shared_bytes,
            stream,
            std::slice::from_raw_parts(params as *const P as *const u8, std::mem::size_of::<P>()),
        )
    }

    /// The most blocks, up to `most`, of one cluster of this kernel the device can hold
    /// (0 before sm_90). The caller has entered the device's context.
    pub fn max_cluster_blocks(&self, most: u32) -> u32 {
        cu::max_cluster_blocks(self.function.cu_function(), self.block, self.shared_bytes, most)
    }
}

/// How many CUDA devices the driver sees: `NoDriver` without libcuda, `NoDevice` when it
/// sees none, `CudaError` when the driver is there but fails (never "no device").
pub(crate) fn device_count() -> Result<usize> {
    cu::init()?;
    let count = CudaContext::device_count().map_err(Error::from)?;
    if count <= 0 {
        bail!(NoDevice, "the CUDA driver found no device");
    }
    Ok(count as usize)
}

pub(crate) struct GpuDevice {
    pub ctx: SharedContext,
    pub ordinal: usize,
    pub arch: i32,
    pub sm_count: u32,
    /// Shared memory a block may take (opting in past 48 KiB).
    pub max_shared_per_block: u32,
    nvrtc: OnceCell<Nvrtc>,
    /// Modules by the SHA-256 of their source text: two sources under one name (two
    /// user operators of one name, or a recipe for two types) never share a module.
    modules: Memo<[u8; 32], Arc<CudaModule>>,
    /// One look-back workspace per stream (by the driver's stream id).
    pub workspaces: WorkspacePool,
    /// Where kernels report refused workspaces and expired look-backs.
    pub faults: Arc<FaultMailbox>,
    /// The recent launching calls, which a fault report names by serial.
    pub calls: CallLog,
    /// Temporary memory of single calls (a sort's second buffer).
    pub scratch: ScratchPool,
}

impl GpuDevice {
    /// Opens device `ordinal` through its primary context, leaving the thread's current
    /// context as it was.
    pub fn open(ordinal: usize) -> Result<GpuDevice> {
        let count = device_count()?;
        if ordinal >= count {
            bail!(
                NoDevice,
                "CUDA device ordinal {ordinal} requested but {count} device(s) present"
            );
        }
        let previous = cu::current_context()?;
        let opened = CudaContext::new(ordinal);
        // CudaContext::new makes the primary context current; put the caller's back.
        // SAFETY: `previous` was current a moment ago (or NULL).
        unsafe { cu::restore_context(previous) };
        let ctx = SharedContext::new(opened?);
        // SAFETY: scanrt orders its own work by streams and never relies on cudarc's
        // per-slice event tracking, which would add work to every call.
        unsafe { ctx.disable_event_tracking() };
        let (faults, scratch) = {
            let _current = CurrentContext::enter(ctx.cu_ctx())?;
            workspace::warm_memory_pool()?;
            (FaultMailbox::new(ctx.clone())?, ScratchPool::new(ordinal)?)
        };
        let (major, minor) = ctx.compute_capability()?;
        let sm_count = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let max_shared_per_block =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        Ok(GpuDevice {
            ctx,
            ordinal,
            arch: major * 10 + minor,
            sm_count,
            max_shared_per_block,
            nvrtc: OnceCell::new(),
            modules: Memo::default(),
            workspaces: WorkspacePool::new(),
            faults,
            calls: CallLog::new(),
            scratch,
        })
    }

    pub fn enter(&self) -> Result<CurrentContext> {
        CurrentContext::enter(self.ctx.cu_ctx())
    }

    /// NVRTC, loaded once (kernels no pack holds are compiled at run time).
    pub fn nvrtc(&self) -> Result<&Nvrtc> {
        self.nvrtc.get_or_try_init(Nvrtc::load)
    }

    /// Fails when this device can get no kernels: no kernel pack serves its architecture
    /// and NVRTC cannot be loaded. With a pack, NVRTC is needed only for what the pack
    /// lacks, and is not loaded before then.
    pub fn check_kernel_source(&self) -> Result<()> {
        if kernel_pack::serves(self.arch) {
            return Ok(());
        }
        self.nvrtc().map(|_| ()).map_err(|e| {
            Error::new(
                e.status,
                format!("{} (and no kernel pack for sm_{} was found)", e.message, self.arch),
            )
        })
    }

    /// The module compiled from `source` (from the disk cache when it holds it), loaded
    /// once. The caller has entered the device's context.
    pub fn module(&self, source: &KernelSource) -> Result<Arc<CudaModule>> {
        let key: [u8; 32] = Sha256::digest(source.text.as_bytes()).into();
        self.modules.get_or_try_init(&key, || {
            if let Some(image) = kernel_pack::image(source, self.arch) {
                log::debug!("kernel pack hit: {} ({} bytes)", source.name, image.len());
                let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(image))?;
                log::debug!("module loaded");
                return Ok(module);
            }
            let nvrtc = self.nvrtc()?;
            let target = nvrtc.target_for(self.arch)?;
            let image = nvrtc.compile_cached(source, target)?;
            let ptx = if target.cubin {
                cudarc::nvrtc::Ptx::from_binary(image)
            } else {
                cudarc::nvrtc::Ptx::from_src(String::from_utf8_lossy(&image).trim_end_matches('\0').to_string())
            };
            Ok(self.ctx.load_module(ptx)?)
        })
    }

    /// Kernel `name` of `module`, launched with `block` threads and `shared_bytes` of
    /// dynamic shared memory, with its count of resident blocks.
    pub fn kernel(&self, module: &Arc<CudaModule>, name: &str, block: u32, shared_bytes: u32) -> Result<LoadedKernel> {
        let function = module.load_function(name)?;
        if shared_bytes > 0 {
            // Above 48 KiB a kernel must opt in to its dynamic shared memory.
            function.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )?;
        }
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(block, shared_bytes as usize, None)?;
        if per_sm == 0 {
            bail!(CudaError, "kernel {name} cannot be resident on sm_{}", self.arch);
        }
        Ok(LoadedKernel {
            function,
            block,
            shared_bytes,
            resident_blocks: per_sm * self.sm_count,
        })
    }

    /// The start of every launching call: enters the device's context (the guard puts
    /// the caller's back), returns a fault an earlier kernel reported, checks a stream
    /// scanrt has not verified before (`verified`: a stream it made or checked), and asks
    /// the driver once what the call launches on.
    pub fn prepare_launch(&self, stream: CUstream, verified: bool) -> Result<(CurrentContext, LaunchTarget)> {
        let current = self.enter()?;
        self.take_fault()?;
        if !verified {
            self.check_stream(stream)?;
        }
        Ok((current, LaunchTarget::resolve(stream)?))
    }

    /// Returns the fault a kernel reported since the last call, as an error, and drops
    /// the pooled workspace it concerns (the stream gets a fresh one at its next scan).
    pub fn take_fault(&self) -> Result<()> {
        match self.faults.take() {
            None => Ok(()),
            Some(fault) => {
                let call = self.calls.describe(fault.call);
                let error = fault_error(fault, &call, self.workspaces.discard(fault.workspace));
                log::warn!("{}", error.message);
                Err(error)
            }
        }
    }

    /// The checks a caller's workspace passes before it is initialised or used: its
    /// layout (`workspace::check_layout`), and device memory of this device all the way.
    /// The caller has entered the device's context.
    pub fn check_workspace(&self, workspace: Workspace) -> Result<()> {
        workspace::check_layout(workspace)?;
        self.check_device_range(workspace.ptr, workspace.bytes as u64, "workspace")
    }

    /// Checks that kernels may write `[ptr, ptr + bytes)`: device memory of this device,
    /// or page-locked host memory mapped at the same address (a count the host reads
    /// without a copy).
    pub fn check_kernel_writable(&self, ptr: CUdeviceptr, bytes: u64, what: &str) -> Result<()> {
        if cu::is_mapped_host_memory(ptr)? {
            return Ok(());
        }
        self.check_device_range(ptr, bytes, what).map_err(|e| match e.status {
            ScanrtStatus::NotDeviceMemory => Error::new(
                e.status,
                format!("{what} pointer {ptr:#x} is neither device memory nor page-locked host memory (cudaMallocHost, cudaHostAlloc, cudaHostRegister)"),
            ),
            _ => e,
        })
    }

    /// Checks that `[ptr, ptr + bytes)` is device memory of this device.
    pub fn check_device_range(&self, ptr: CUdeviceptr, bytes: u64, what: &str) -> Result<()> {
        let info = cu::pointer_info(ptr)?;
        if !cu::is_device_memory_type(info.memory_type) {
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
        let range_end = info.range_start.saturating_add(info.range_size as u64);
        if info.range_size > 0 && ptr.checked_add(bytes).is_none_or(|end| end > range_end) {
            let available = range_end.saturating_sub(ptr);
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
        let owner = cu::stream_context(stream)?;
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
        self.workspaces.release_all();
        // Modules unload here, with the context entered (cudarc binds it and would not
        // restore the caller's); `ctx` and `faults` restore it themselves. Algorithms
        // that keep modules (kernel sets) let go of them before this runs.
        self.modules.clear();
    }
}
