//! Workspaces owned by captured graphs. A scan captured into a graph gets a workspace of
//! its own, which the graph keeps (with the kernel module, the fault mailbox and the CUDA
//! context) through a CUDA user object: the graph can be replayed on any stream, beside
//! plain calls, after `trim`, and after the scanrt context is gone. A launch that needs
//! no workspace (one tile, one cluster) has the graph keep the rest all the same.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};

use crate::error::{bail, Result};
use crate::runtime::driver::{self, check, CurrentContext, SharedContext};
use crate::runtime::faults::FaultMailbox;
use crate::runtime::workspace::{initialise, LOOKBACK_HEADER_BYTES};

/// Allocates and initialises a workspace now, outside any stream order (a private stream,
/// synchronised), for use inside a capture.
fn allocate_initialised_now(bytes: usize) -> Result<CUdeviceptr> {
    let mut ptr: CUdeviceptr = 0;
    // SAFETY: out-pointers to locals; the memsets run on a private stream that is
    // synchronised before the pointer is handed out, and everything is freed on error.
    unsafe {
        check(sys::cuMemAlloc_v2(&mut ptr, bytes), "cuMemAlloc")?;
        let mut s: CUstream = std::ptr::null_mut();
        let r = check(
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
            "cuStreamCreate",
        )
        .and_then(|_| {
            let r = initialise(ptr, bytes, s).and_then(|_| check(sys::cuStreamSynchronize(s), "cuStreamSynchronize"));
            sys::cuStreamDestroy_v2(s);
            r
        });
        if let Err(e) = r {
            sys::cuMemFree_v2(ptr);
            return Err(e);
        }
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
        let _ = driver::with_relaxed_capture(|| {
            let _current = CurrentContext::enter(self.ctx.cu_ctx())?;
            // SAFETY: the graph and its executions are done (CUDA released its user
            // object), or the graph never got it; allocated by allocate_initialised_now,
            // freed once.
            unsafe { sys::cuMemFree_v2(self.workspace) };
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
                let _ = driver::with_relaxed_capture(|| {
                    drop(std::mem::ManuallyDrop::into_inner(keep));
                    Ok(())
                });
            });
    });
}

/// A workspace of `bytes` for one scan being captured into `graph`, owned by the graph.
/// The caller has entered the device's context.
pub(crate) fn for_graph(
    graph: sys::CUgraph,
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
    let workspace = driver::with_relaxed_capture(|| allocate_initialised_now(bytes))?;
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
    graph: sys::CUgraph,
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

/// Hands `keep` to a CUDA user object that `graph` (and every executable graph made from
/// it) holds; released by `release_graph_resources` with the last of them. On failure
/// `keep` is released at once.
fn retain_in_graph(graph: sys::CUgraph, keep: GraphKeepAlive) -> Result<()> {
    let keep = Box::into_raw(Box::new(keep));
    let mut object: sys::CUuserObject = std::ptr::null_mut();
    // SAFETY: `keep` is a live Box that CUDA hands back to release_graph_resources once;
    // on failure here it is reclaimed instead. The graph is the one being captured.
    unsafe {
        let created = check(
            sys::cuUserObjectCreate(
                &mut object,
                keep as *mut c_void,
                Some(release_graph_resources),
                1,
                sys::CUuserObject_flags_enum::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as u32,
            ),
            "cuUserObjectCreate",
        );
        if let Err(e) = created {
            drop(Box::from_raw(keep));
            return Err(e);
        }
        // Moves our reference to the graph: the object lives as long as the graph and
        // every executable graph instantiated from it.
        check(
            sys::cuGraphRetainUserObject(
                graph,
                object,
                1,
                sys::CUuserObjectRetain_flags_enum::CU_GRAPH_USER_OBJECT_MOVE as u32,
            ),
            "cuGraphRetainUserObject",
        )
        .inspect_err(|_| {
            sys::cuUserObjectRelease(object, 1);
        })
    }
}
