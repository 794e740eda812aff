//! The look-back workspace of one launch, whatever the algorithm: the caller's (checked
//! against the launch's tiles), one the CUDA graph being captured owns (so that replays
//! never share it with plain calls or with each other), or the stream's pooled one.

use std::any::Any;
use std::sync::Arc;

use crate::error::{bail, Result};
use crate::runtime::cu::CUdeviceptr;
use crate::runtime::device::GpuDevice;
use crate::runtime::graph_workspace;
use crate::runtime::launch_target::LaunchTarget;
use crate::runtime::workspace::{lookback_bytes, lookback_slots, StreamWorkspace, Workspace};

/// A workspace for one launch, holding `slots` status slots.
pub(crate) struct LaunchWorkspace {
    pub ptr: CUdeviceptr,
    pub slots: u64,
    /// Keeps a pooled workspace from being freed until the launch is queued.
    _pooled: Option<Arc<StreamWorkspace>>,
}

/// The workspace of a launch on `target` whose tiles carry `value_bytes`-byte values
/// in `slots` status slots: `caller`'s when given (refused with `BufferTooSmall`, before
/// anything is queued, when it holds fewer slots), else the captured graph's, else the
/// stream's pooled one. `keep_alive` is what a graph's workspace keeps alive with it (the
/// kernels the graph launches).
pub(crate) fn acquire(
    dev: &GpuDevice,
    target: &LaunchTarget,
    caller: Option<Workspace>,
    value_bytes: usize,
    slots: u64,
    keep_alive: Arc<dyn Any + Send + Sync>,
) -> Result<LaunchWorkspace> {
    let (ptr, held, pooled) = match caller {
        Some(ws) => {
            dev.check_workspace(ws)?;
            (ws.ptr, lookback_slots(value_bytes, ws.bytes), None)
        }
        None => match target.capture {
            Some(graph) => {
                let bytes = lookback_bytes(value_bytes, slots);
                let ptr = graph_workspace::for_graph(graph, bytes, keep_alive, dev.faults.clone(), dev.ctx.clone())?;
                (ptr, lookback_slots(value_bytes, bytes), None)
            }
            None => {
                let pooled = dev.workspaces.for_stream(target.stream, value_bytes, slots)?;
                (pooled.ptr, lookback_slots(value_bytes, pooled.bytes), Some(pooled))
            }
        },
    };
    if held < slots {
        // Only a caller's workspace can get here: scanrt sizes its own.
        bail!(
            BufferTooSmall,
            "workspace of {} bytes holds {held} tiles; this call needs {} bytes ({slots} tiles)",
            caller.map_or(0, |w| w.bytes),
            lookback_bytes(value_bytes, slots)
        );
    }
    Ok(LaunchWorkspace {
        ptr,
        slots: held,
        _pooled: pooled,
    })
}

/// Inside a stream capture, has the graph keep `keep_alive` (the kernels a launch without
/// a workspace runs), the fault mailbox and the context alive, as a graph's workspace
/// would: replays may outlive the scanrt context.
pub(crate) fn keep_alive_if_captured(
    dev: &GpuDevice,
    target: &LaunchTarget,
    keep_alive: Arc<dyn Any + Send + Sync>,
) -> Result<()> {
    match target.capture {
        Some(graph) => graph_workspace::keep_with_graph(graph, keep_alive, dev.faults.clone(), dev.ctx.clone()),
        None => Ok(()),
    }
}
