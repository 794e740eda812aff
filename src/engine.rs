//! The engine a context is a handle on: the host, or a GPU device (`runtime::device`:
//! its CUDA context, loaded modules, pooled workspaces, fault mailbox and call log) with
//! the per-device state of each algorithm. It knows no algorithm: `scan` (and later
//! `select`, `sort`) keep their loaded kernel sets here as [`AlgorithmState`] entries of
//! their own types.

use std::any::{Any, TypeId};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::runtime::device::{device_count, GpuDevice};
use crate::tables::Backend;

/// What a context runs on. One a context, so the GPU variant's size costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Engine {
    Host,
    Gpu(GpuEngine),
}

/// A GPU device and what each algorithm keeps on it.
pub(crate) struct GpuEngine {
    /// Declared before `device`, so it drops first: the algorithms' kernel sets let go of
    /// their modules before the device unloads them with its context entered.
    pub algorithms: AlgorithmState,
    pub device: GpuDevice,
}

/// Per-device state of each algorithm, one value per type, created on first use.
#[derive(Default)]
pub(crate) struct AlgorithmState {
    // A handful of entries (one per algorithm), so a scan of a short vector beats a map.
    entries: RwLock<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>,
}

impl AlgorithmState {
    /// The state of type `T`, created with `T::default()` on first use.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let id = TypeId::of::<T>();
        let find = |entries: &[(TypeId, Arc<dyn Any + Send + Sync>)]| {
            entries
                .iter()
                .find(|(t, _)| *t == id)
                .map(|(_, state)| state.clone().downcast::<T>().expect("entries are keyed by their type"))
        };
        if let Some(state) = find(&self.entries.read()) {
            return state;
        }
        let mut entries = self.entries.write();
        if let Some(state) = find(&entries) {
            return state;
        }
        let state = Arc::new(T::default());
        entries.push((id, state.clone()));
        state
    }
}

impl Engine {
    /// Opens the engine `backend` asks for on CUDA device `device`, and says why it is
    /// the one it is. `Auto` takes the GPU when a CUDA driver, a device and a source of
    /// kernels (a pack or NVRTC) are there, and the host when the driver, every device or
    /// every kernel source is missing; any other failure (a wrong ordinal, a broken
    /// driver) is returned, never hidden.
    pub fn open(backend: Backend, device: usize) -> Result<(Engine, String)> {
        let gpu = |device: GpuDevice| {
            Engine::Gpu(GpuEngine {
                algorithms: AlgorithmState::default(),
                device,
            })
        };
        Ok(match backend {
            Backend::Host => (Engine::Host, "the host backend was requested".to_string()),
            Backend::Gpu => {
                let d = GpuDevice::open(device)?;
                d.check_kernel_source()?;
                (gpu(d), format!("the GPU backend was requested: CUDA device {device}"))
            }
            Backend::Auto => {
                let host_because = |e: Error| (Engine::Host, format!("auto: the host, because {}", e.message));
                match device_count() {
                    Err(e) if matches!(e.status, ScanrtStatus::NoDriver | ScanrtStatus::NoDevice) => host_because(e),
                    Err(e) => return Err(e),
                    Ok(_) => {
                        let d = GpuDevice::open(device)?;
                        match d.check_kernel_source() {
                            Ok(()) => (gpu(d), format!("auto: CUDA device {device} and its kernels are usable")),
                            Err(e) => host_because(e),
                        }
                    }
                }
            }
        })
    }

    /// The GPU engine, or `WrongBackend`.
    pub fn gpu(&self) -> Result<&GpuEngine> {
        match self {
            Engine::Gpu(e) => Ok(e),
            Engine::Host => bail!(
                WrongBackend,
                "this operation needs a GPU context; the context runs on the host backend"
            ),
        }
    }

    /// The GPU device, where there is one.
    pub fn device(&self) -> Option<&GpuDevice> {
        match self {
            Engine::Gpu(e) => Some(&e.device),
            Engine::Host => None,
        }
    }
}
