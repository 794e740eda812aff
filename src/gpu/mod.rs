//! The CUDA backend: driver wrappers, JIT, tuning, device state and launches.
pub(crate) mod device;
pub(crate) mod driver;
pub(crate) mod jit;
pub(crate) mod kernel_cache;
pub(crate) mod launch;
pub(crate) mod tuning;
pub(crate) mod workspace;
