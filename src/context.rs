//! The context: a cloneable handle on an engine (`crate::engine`: the host, or a GPU
//! device), made once and shared. Streams (`crate::stream`), buffers (`crate::buffer`),
//! scans (`crate::scan::api`) and operators (`crate::operator`) add their entry points to
//! it from their own modules.
//!
//! What is thread-safe: a [`Context`] is `Send + Sync` and may be shared by any number
//! of threads; so are [`Stream`](crate::Stream) and [`Buffer`](crate::Buffer) handles.
//! Calls on *different* streams run concurrently. Calls on the *same* stream from several
//! threads are safe but ordered only by whichever call reaches the stream first, exactly
//! as with CUDA.

use std::sync::Arc;

use crate::engine::{Engine, GpuEngine};
use crate::error::Result;
use crate::runtime::device::GpuDevice;
pub use crate::tables::Backend;

/// A scanrt context: a CUDA device (through its primary context, so it shares memory
/// and streams with CUDA runtime code in the same process) or the host backend.
#[derive(Clone)]
pub struct Context {
    engine: Arc<Engine>,
    backend_reason: Arc<str>,
}

impl Context {
    /// Opens a context on CUDA device `device` or on the host. `Auto` takes the GPU when
    /// a CUDA driver, a device and NVRTC are there, and the host when the driver or every
    /// device or NVRTC is missing; any other failure (a wrong ordinal, a broken driver)
    /// is returned, never hidden. [`Context::backend_reason`] says why it chose what it
    /// chose.
    pub fn new(backend: Backend, device: usize) -> Result<Context> {
        let (engine, reason) = Engine::open(backend, device)?;
        if backend == Backend::Auto && matches!(engine, Engine::Host) {
            log::warn!("context: {reason}");
        } else {
            log::info!("context: {reason}");
        }
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
            Engine::Gpu(GpuEngine { device: d, .. }) => format!(
                "{} (sm_{}, {} SMs)",
                d.ctx.name().unwrap_or_else(|_| "CUDA device".into()),
                d.arch,
                d.sm_count
            ),
        }
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The GPU device, or `WrongBackend` on the host backend.
    pub(crate) fn gpu(&self) -> Result<&GpuDevice> {
        Ok(&self.engine.gpu()?.device)
    }

    /// The GPU engine, or `WrongBackend` on the host backend.
    pub(crate) fn gpu_engine(&self) -> Result<&GpuEngine> {
        self.engine.gpu()
    }

    pub(crate) fn same(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.engine, &other.engine)
    }

    /// An identity of the context's engine, equal for every handle on it (array views of
    /// its buffers record it).
    pub(crate) fn id(&self) -> usize {
        Arc::as_ptr(&self.engine) as usize
    }

    /// The underlying cudarc context (GPU contexts only), for Rust users mixing APIs.
    pub fn cuda_context(&self) -> Result<&Arc<cudarc::driver::CudaContext>> {
        Ok(&*self.gpu()?.ctx)
    }

    /// Releases the look-back workspaces of the per-stream pool that no call is using,
    /// and those of destroyed streams (which waits for the device when there are any),
    /// and the temporary memory sorts keep for their next call.
    /// Graphs keep their own workspaces. A no-op on the host backend.
    pub fn trim(&self) -> Result<()> {
        if let Some(d) = self.engine.device() {
            let _current = d.enter()?;
            d.workspaces.trim()?;
            d.scratch.trim()?;
        }
        Ok(())
    }

    /// The number of streams whose look-back workspace the pool holds (0 on the host).
    pub fn pooled_workspaces(&self) -> usize {
        self.engine.device().map_or(0, |d| d.workspaces.len())
    }

    /// Returns, as an error, a fault a kernel of this context reported since the last
    /// call (a refused workspace or an expired look-back: `WorkspaceFault`). Scan calls
    /// check this first; call it to learn of a fault without scanning.
    pub fn check_faults(&self) -> Result<()> {
        match self.engine.device() {
            None => Ok(()),
            Some(d) => {
                let _current = d.enter()?;
                d.take_fault()
            }
        }
    }
}
