//! The one door to the CUDA driver. Every raw driver call scanrt makes is in this module,
//! in the manner of cudarc's `result` layer: thin functions and RAII handles, each call
//! checked into scanrt's `Error` by `check` (the call's name and the driver's code).
//! `scripts/module-graph.py` fails on a raw driver call anywhere else. cudarc's safe layer
//! (contexts, modules, functions) is used directly where it serves.
//!
//! - `context`: entering a context and restoring the caller's, relaxed capture mode,
//!   the driver's initialisation, synchronising the current context.
//! - `memory`: allocations (plain, stream-ordered, pooled, mapped host), memsets and
//!   copies, pointer queries.
//! - `stream`: a stream's context, id and capture state; private streams; events.
//! - `launch`: kernel launches (clusters too) and function attributes.
//! - `graph`: CUDA user objects a captured graph keeps.

mod check;
mod context;
mod graph;
mod launch;
mod memory;
mod stream;

pub(crate) use context::*;
pub(crate) use graph::*;
pub(crate) use launch::*;
pub(crate) use memory::*;
pub(crate) use stream::*;

/// The driver's handle types, named through this module by the rest of scanrt.
pub(crate) use cudarc::driver::sys::{CUdevice_attribute, CUdeviceptr, CUfunction_attribute, CUgraph, CUstream};
