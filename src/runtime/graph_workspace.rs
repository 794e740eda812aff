//! Workspaces owned by captured graphs. A scan captured into a graph gets a workspace of
//! its own, which the graph keeps (with the kernel module, the fault mailbox and the CUDA
//! context) through a CUDA user object: the graph can be replayed on any stream, beside
//! plain calls, after `trim`, and after the scanrt context is gone. A launch that needs
//! no workspace (one tile, one cluster) has the graph keep the rest all the same.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use crate::error::{bail, Result};
use crate::runtime::cu::{self, CUdeviceptr, CUgraph, CurrentContext, PrivateStream, SharedContext};
use crate::runtime::faults::FaultMailbox;
use crate::runtime::workspace::{initialise, LOOKBACK_HEADER_BYTES};

/// Allocates and initialises a workspace now, outside any stream order (a private stream,
/// synchronised), for use inside a capture.
fn allocate_initialised_now(bytes: usize) -> Result<CUdeviceptr> {
    let ptr = cu::alloc(bytes)?;
    let initialised = PrivateStream::new().and_then(|s| {
        // SAFETY: fresh memory of `bytes` on a live stream of the current context, which
        // is synchronised before the pointer is handed out.
        unsafe { initialise(ptr, bytes, s.raw()) }?;
        s.synchronize()
    });
    if let Err(e) = initialised {
        // SAFETY: allocated above, used by nothing (the stream is synchronised or gone).
        unsafe { cu::free(ptr) };
        return Err(e);
    }
    Ok(ptr)
}

/// What a captured graph keeps alive for its launches: the workspace (0: none), the
/// kernels (any algorithm's loaded module set), the fault mailbox and the context,
/// released on a thread of scanrt's when the graph is destroyed.
struct GraphKeepAlive {
    workspace: CUdeviceptr,
    _kernels: Arc<dyn Any + Send + Sync>,
    _report: Arc<FaultMailbox>,
    ctx: SharedContext,
}

impl Drop for GraphKeepAlive {
    /// In relaxed capture mode: another thread's capture (or the capturing caller's own,
    /// on an error path) must not make the free fail or break that capture.
    fn drop(&mut self) {
        if self.workspace == 0 {
            return; // the rest releases itself
        }
        let _ = cu::with_relaxed_capture(|| {
            let _current = CurrentContext::enter(self.ctx.cu_ctx())?;
            // SAFETY: the graph and its executions are done (CUDA released its user
            // object), or the graph never got it; allocated by allocate_initialised_now,
            // freed once.
            unsafe { cu::free(self.workspace) };
            Ok(())
        });
    }
}

/// The user object's destructor. CUDA forbids driver calls in it, so the release runs on
/// a new thread; should none start, the resources are leaked rather than freed here.
unsafe extern "C" fn release_graph_resources(keep: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `keep` is the Box leaked in `for_graph`, handed to CUDA exactly once.
        // ManuallyDrop: a failed spawn drops the closure here, which must not free.
        let keep = std::mem::ManuallyDrop::new(unsafe { Box::from_raw(keep as *mut GraphKeepAlive) });
        let _ = std::thread::Builder::new()
            .name("scanrt-graph-release".into())
            .spawn(move || {
                // The module's unload too runs in relaxed capture mode.
                let _ = cu::with_relaxed_capture(|| {
                    drop(std::mem::ManuallyDrop::into_inner(keep));
                    Ok(())
                });
            });
    });
}

/// A workspace of `bytes` for one scan being captured into `graph`, owned by the graph.
/// The caller has entered the device's context.
pub(crate) fn for_graph(
    graph: CUgraph,
    bytes: usize,
    kernels: Arc<dyn Any + Send + Sync>,
    report: Arc<FaultMailbox>,
    ctx: SharedContext,
) -> Result<CUdeviceptr> {
    if bytes < LOOKBACK_HEADER_BYTES {
        bail!(
            InvalidArgument,
            "a graph workspace of {bytes} bytes has no room for its header"
        );
    }
    let workspace = cu::with_relaxed_capture(|| allocate_initialised_now(bytes))?;
    retain_in_graph(
        graph,
        GraphKeepAlive {
            workspace,
            _kernels: kernels,
            _report: report,
            ctx,
        },
    )?;
    Ok(workspace)
}

/// Has `graph`, being captured, keep `kernels`, the fault mailbox and the context alive
/// for a launch that needs no workspace. The caller has entered the device's context.
pub(crate) fn keep_with_graph(
    graph: CUgraph,
    kernels: Arc<dyn Any + Send + Sync>,
    report: Arc<FaultMailbox>,
    ctx: SharedContext,
) -> Result<()> {
    retain_in_graph(
        graph,
        GraphKeepAlive {
            workspace: 0,
            _kernels: kernels,
            _report: report,
            ctx,
        },
    )
}

/// Hands `keep` to a CUDA user object that `graph` holds; released by
/// `release_graph_resources` with the last of its graphs, or at once on failure.
fn retain_in_graph(graph: CUgraph, keep: GraphKeepAlive) -> Result<()> {
    // SAFETY: the graph is the one being captured; release_graph_resources takes the
    // pointer back as a Box<GraphKeepAlive> once.
    unsafe { cu::retain_in_graph(graph, Box::new(keep), release_graph_resources) }
}
