//! Look-back workspaces: their layout (a `contract::LookbackHeader` and status slots, as
//! kernels/device/lookback.cuh uses them), the per-stream pool, the workspaces that
//! captured graphs own, and the fault mailbox through which kernels tell the host that
//! they refused a workspace or gave up a wait.
//!
//! Why each piece exists:
//! - A workspace holds the tile tickets of the scans queued on one stream, so two streams
//!   must never share one. The pool is keyed by the driver's unique stream id
//!   (`cuStreamGetId`), not by the handle: per-thread default streams share the handle
//!   value 0x2, and a destroyed stream's handle is handed out again while its scans may
//!   still be queued.
//! - The pool is bounded (`POOL_STREAMS` entries, least recently used evicted) and
//!   `trim` empties it. An outgrown workspace is freed stream-ordered on the calling
//!   thread's stream. Any other workspace let go of (evicted, trimmed, faulty) may still
//!   serve scans queued on a stream that may have been destroyed (the driver must never
//!   see a destroyed handle), so it waits in the graveyard until the device is
//!   synchronised: at `trim`, once `GRAVEYARD_LIMIT` wait, and at drop.
//! - A scan captured into a graph gets a workspace of its own, which the graph keeps,
//!   with the kernel module and the CUDA context, through a CUDA user object: the graph
//!   can be replayed on any stream, beside plain calls, after `trim`, and after the
//!   scanrt context is gone.
//! - Every workspace starts with a sealed header; kernels refuse one whose seal, size or
//!   fault word is wrong, and bound every look-back wait. Either way they write the
//!   workspace address and a code to the mapped `FaultReport`, which the next call on the
//!   context returns as `WorkspaceFault`.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::sys::{self, CUdeviceptr, CUstream};
use parking_lot::Mutex;

use crate::contract::{self, FaultReport, LookbackHeader};
use crate::error::{bail, Error, Result, ScanrtStatus};
use crate::runtime::device::GpuDevice;
use crate::runtime::driver::{self, check, CurrentContext, SharedContext};

/// A caller-provided workspace: 16-byte aligned, initialised by `Context::init_workspace`
/// before its first use, used by one scan at a time.
#[derive(Debug, Clone, Copy)]
pub struct Workspace {
    /// Device address, 16-byte aligned.
    pub ptr: u64,
    /// Its size in bytes.
    pub bytes: usize,
}

/// Bytes of the header before the status slots.
pub(crate) const LOOKBACK_HEADER_BYTES: usize = std::mem::size_of::<LookbackHeader>();
/// Byte offset of the header's `area_bytes` word (`seal` follows it).
const AREA_OFFSET: u64 = std::mem::offset_of!(LookbackHeader, area_bytes) as u64;
const _: () = assert!(std::mem::offset_of!(LookbackHeader, seal) as u64 == AREA_OFFSET + 8);
/// Pooled workspaces hold at least this many 16-byte slots, so that a stream's workspace
/// rarely has to grow.
const MIN_POOLED_SLOTS: u64 = 1 << 14;
/// Streams whose workspaces the pool keeps; the least recently used one goes first.
///
/// cbindgen:ignore
/// Evicting costs a device synchronisation per `GRAVEYARD_LIMIT` evictions, so this is
/// far above the number of streams an application keeps busy at once.
pub const POOL_STREAMS: usize = 256;
/// Workspaces let go of that wait for a device synchronisation before they are freed.
const GRAVEYARD_LIMIT: usize = 32;

/// Bytes of workspace for `slots` tiles with accumulators of `acc_size` bytes.
pub(crate) fn lookback_bytes(acc_size: usize, slots: u64) -> usize {
    LOOKBACK_HEADER_BYTES + slots as usize * contract::status_slot_bytes(acc_size)
}

/// Bytes of a pooled workspace for `slots` tiles of `acc_size`-byte values: slots for
/// values of at least 16 bytes, which serve every narrower value too (slot sizes grow
/// with the value's), so a stream's scans of any built-in type share one workspace; a
/// power of two of them, at least `MIN_POOLED_SLOTS`, so it rarely grows.
fn pooled_bytes(acc_size: usize, slots: u64) -> usize {
    lookback_bytes(acc_size.max(16), slots.max(MIN_POOLED_SLOTS).next_power_of_two())
}

/// How many status slots fit into a workspace of `bytes`.
pub(crate) fn lookback_slots(acc_size: usize, bytes: usize) -> u64 {
    (bytes.saturating_sub(LOOKBACK_HEADER_BYTES) / contract::status_slot_bytes(acc_size)) as u64
}

/// Zero-fills `[ptr, ptr + bytes)` and writes a sealed header, stream-ordered on
/// `stream` (memsets only, so it may be captured too).
///
/// # Safety
/// The range must be device memory of the current context, 16-byte aligned, at least
/// `LOOKBACK_HEADER_BYTES` long, and not in use by a queued scan.
pub(crate) unsafe fn initialise(ptr: CUdeviceptr, bytes: usize, stream: CUstream) -> Result<()> {
    // Kernels count the slots of their own size in it (a workspace sized for 4-byte
    // accumulators may hold an odd number of 8-byte slots).
    let area = (bytes - LOOKBACK_HEADER_BYTES) as u64;
    let sealed = contract::seal(area);
    check(sys::cuMemsetD8Async(ptr, 0, bytes, stream), "cuMemsetD8Async")?;
    for (i, word) in [area as u32, (area >> 32) as u32, sealed as u32, (sealed >> 32) as u32]
        .into_iter()
        .enumerate()
    {
        check(
            sys::cuMemsetD32Async(ptr + AREA_OFFSET + 4 * i as u64, word, 1, stream),
            "cuMemsetD32Async",
        )?;
    }
    Ok(())
}

/// The checks a caller's workspace passes before it is initialised or used: 16-byte
/// aligned (slots are read as 16-byte words), room for the header, and device memory of
/// this device all the way (checked arithmetic). The caller has entered the device's
/// context.
pub(crate) fn check_caller(dev: &GpuDevice, workspace: Workspace) -> Result<()> {
    if workspace.ptr % 16 != 0 {
        bail!(
            InvalidArgument,
            "the workspace must be 16-byte aligned (status slots are read as 16-byte words)"
        );
    }
    if workspace.bytes < LOOKBACK_HEADER_BYTES {
        bail!(
            BufferTooSmall,
            "a workspace of {} bytes has no room for its {LOOKBACK_HEADER_BYTES}-byte header",
            workspace.bytes
        );
    }
    dev.check_device_range(workspace.ptr, workspace.bytes as u64, "workspace")
}

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

/// Sets up the device's memory pool with one small stream-ordered allocation on a
/// private stream, freed and synchronised at once. The first stream-ordered allocation
/// of a process sets the pool up: on an H100 that took 10 ms, which would otherwise fall
/// on the first scan (its workspace). The caller has entered the device's context.
pub(crate) fn warm_memory_pool() -> Result<()> {
    // SAFETY: out-pointers to locals; the allocation is freed on the private stream,
    // which is synchronised and destroyed before returning.
    unsafe {
        let mut s: CUstream = std::ptr::null_mut();
        check(
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32),
            "cuStreamCreate",
        )?;
        let mut ptr: CUdeviceptr = 0;
        let r = check(sys::cuMemAllocAsync(&mut ptr, 1 << 16, s), "cuMemAllocAsync")
            .and_then(|_| check(sys::cuMemFreeAsync(ptr, s), "cuMemFreeAsync"))
            .and_then(|_| check(sys::cuStreamSynchronize(s), "cuStreamSynchronize"));
        sys::cuStreamDestroy_v2(s);
        r
    }
}

/// Mapped pinned host memory holding the `contract::FaultReport` kernels write to.
/// Shared by the device and by every graph that captured a scan, so a replay after the
/// context is gone still writes to live memory.
pub(crate) struct FaultMailbox {
    host: *mut FaultReport,
    /// The same memory as the kernels address it.
    pub device: CUdeviceptr,
    ctx: SharedContext,
}

// SAFETY: the host words are only read and written with volatile accesses; the pointer
// stays valid until drop.
unsafe impl Send for FaultMailbox {}
unsafe impl Sync for FaultMailbox {}

/// A fault a kernel reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    pub workspace: CUdeviceptr,
    pub code: u32,
    /// The serial of the call whose kernel reported (`runtime::calls`).
    pub call: u32,
}

impl FaultMailbox {
    /// The caller has entered `ctx`.
    pub fn new(ctx: SharedContext) -> Result<Arc<FaultMailbox>> {
        let mut host: *mut c_void = std::ptr::null_mut();
        let mut device: CUdeviceptr = 0;
        // SAFETY: out-pointers to locals; the allocation is freed if the second call fails.
        unsafe {
            check(
                sys::cuMemHostAlloc(
                    &mut host,
                    std::mem::size_of::<FaultReport>(),
                    sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
                ),
                "cuMemHostAlloc",
            )?;
            std::ptr::write_volatile(host as *mut FaultReport, FaultReport::default());
            if let Err(e) = check(
                sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0),
                "cuMemHostGetDevicePointer",
            ) {
                sys::cuMemFreeHost(host);
                return Err(e);
            }
        }
        Ok(Arc::new(FaultMailbox {
            host: host as *mut FaultReport,
            device,
            ctx,
        }))
    }

    /// Takes the pending fault, if any: the code (written last by the kernel) is swapped
    /// for 0 atomically, so two threads never both take one and a later fault is kept.
    pub fn take(&self) -> Option<Fault> {
        // SAFETY: `host` is live, aligned mapped memory of the right layout (see new),
        // accessed by the host only through these atomics.
        let (code, workspace, call) = unsafe {
            (
                AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.host).code)),
                AtomicU64::from_ptr(std::ptr::addr_of_mut!((*self.host).workspace)),
                AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.host).call)),
            )
        };
        if code.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let code = code.swap(0, Ordering::Acquire);
        (code != 0).then(|| Fault {
            workspace: workspace.load(Ordering::Acquire),
            code,
            call: call.load(Ordering::Acquire),
        })
    }
}

impl Drop for FaultMailbox {
    /// In relaxed capture mode: another thread's capture must not make the free fail.
    fn drop(&mut self) {
        let _ = driver::with_relaxed_capture(|| {
            let _current = CurrentContext::enter(self.ctx.cu_ctx())?;
            // SAFETY: allocated by cuMemHostAlloc in `new`, freed once; nothing refers to
            // it any more (the device and every graph holding it are gone).
            unsafe { sys::cuMemFreeHost(self.host as *mut c_void) };
            Ok(())
        });
    }
}

/// The error a reported fault becomes; `call` names the call whose kernel reported it.
pub(crate) fn fault_error(fault: Fault, call: &str, pooled: bool) -> Error {
    let Fault { workspace, code, .. } = fault;
    let what = if pooled {
        format!("{call} found its stream's pooled workspace")
    } else {
        format!("{call} found the workspace")
    };
    let after = if pooled {
        "scanrt replaced the stream's workspace"
    } else {
        "initialise it again with scanrt_workspace_init before reusing it"
    };
    let cause = |code: u32| match code {
        contract::FAULT_UNINITIALISED => "uninitialised (never initialised, or overwritten)".to_string(),
        contract::FAULT_TOO_SMALL => "initialised for fewer tiles than the scan needed".to_string(),
        contract::FAULT_LARGER => {
            "initialised for more bytes than the call passed (pass the size it was initialised with)".to_string()
        }
        contract::FAULT_WATCHDOG => format!(
            "broken: a look-back waited more than {} s for a predecessor tile and gave up (two scans running on \
             one workspace at once, or a corrupted one), so that scan's output is undefined",
            contract::WATCHDOG_NS / 1_000_000_000
        ),
        c => format!("faulty (code {c})"),
    };
    let message = if code & contract::FAULT_POISONED != 0 {
        format!(
            "{what} at {workspace:#x} poisoned by an earlier fault (it was {}) and wrote no output; {after}",
            cause(code & (contract::FAULT_POISONED - 1))
        )
    } else if code == contract::FAULT_WATCHDOG {
        format!("{what} at {workspace:#x} {}; {after}", cause(code))
    } else {
        format!("{what} at {workspace:#x} {} and wrote no output; {after}", cause(code))
    };
    Error::new(ScanrtStatus::WorkspaceFault, message)
}

/// The unique id the driver gives a stream (also the legacy and per-thread default
/// streams, and per thread for the latter).
pub(crate) fn stream_id(stream: CUstream) -> Result<u64> {
    let mut id: std::ffi::c_ulonglong = 0;
    // SAFETY: out-pointer to a local; an invalid handle yields an error code.
    check(unsafe { sys::cuStreamGetId(stream, &mut id) }, "cuStreamGetId")?;
    Ok(id)
}

/// A pooled workspace, owned by one stream (by id).
pub(crate) struct StreamWorkspace {
    pub ptr: CUdeviceptr,
    pub bytes: usize,
    stream: usize,
    graveyard: Arc<Mutex<Vec<CUdeviceptr>>>,
}

impl StreamWorkspace {
    /// Frees the workspace after the work queued on its stream. Only for the calling
    /// thread's own stream, which is alive while the call runs: the handle of another
    /// stream may belong to a destroyed stream, and the driver must never see it.
    fn free_on_own_stream(mut self) {
        // SAFETY: every use of the workspace was queued on this live stream before.
        if unsafe { sys::cuMemFreeAsync(self.ptr, self.stream as CUstream) } == sys::CUresult::CUDA_SUCCESS {
            self.ptr = 0;
        }
    }
}

impl Drop for StreamWorkspace {
    /// A workspace let go of anywhere else (evicted, trimmed, found faulty) may still be
    /// in use by scans queued on a stream scanrt cannot ask about, so the graveyard keeps
    /// it until the device is synchronised.
    fn drop(&mut self) {
        if self.ptr != 0 {
            self.graveyard.lock().push(self.ptr);
        }
    }
}

struct PoolEntry {
    workspace: Arc<StreamWorkspace>,
    last_use: u64,
}

/// The per-stream workspaces of one device.
pub(crate) struct WorkspacePool {
    entries: Mutex<(HashMap<u64, PoolEntry>, u64)>,
    graveyard: Arc<Mutex<Vec<CUdeviceptr>>>,
}

impl WorkspacePool {
    pub fn new() -> WorkspacePool {
        WorkspacePool {
            entries: Mutex::new((HashMap::new(), 0)),
            graveyard: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The workspace of `stream` (not capturing), with at least `slots` slots for
    /// `acc_size`-byte accumulators, created or grown stream-ordered on the stream. The
    /// caller has entered the device's context and keeps the returned handle until its
    /// launch is queued.
    pub fn for_stream(&self, stream: CUstream, acc_size: usize, slots: u64) -> Result<Arc<StreamWorkspace>> {
        let id = stream_id(stream)?;
        let mut evicted = Vec::new();
        let workspace = {
            let mut guard = self.entries.lock();
            let (entries, clock) = &mut *guard;
            *clock += 1;
            if let Some(entry) = entries.get_mut(&id) {
                if lookback_slots(acc_size, entry.workspace.bytes) >= slots {
                    entry.last_use = *clock;
                    return Ok(entry.workspace.clone());
                }
            }
            let bytes = pooled_bytes(acc_size, slots);
            log::debug!("workspace of {bytes} bytes for stream {id}");
            let mut ptr: CUdeviceptr = 0;
            // SAFETY: out-pointer to a local; the stream belongs to the current context
            // (checked by the caller); the new memory is initialised before any scan on
            // the stream can use it.
            unsafe {
                check(sys::cuMemAllocAsync(&mut ptr, bytes, stream), "cuMemAllocAsync")?;
                if let Err(e) = initialise(ptr, bytes, stream) {
                    sys::cuMemFreeAsync(ptr, stream);
                    return Err(e);
                }
            }
            let workspace = Arc::new(StreamWorkspace {
                ptr,
                bytes,
                stream: stream as usize,
                graveyard: self.graveyard.clone(),
            });
            let entry = PoolEntry {
                workspace: workspace.clone(),
                last_use: *clock,
            };
            // An outgrown workspace is freed on its (this) stream, unless a launch of
            // another thread on the stream still holds it: then the graveyard takes it.
            if let Some(outgrown) = entries.insert(id, entry) {
                match Arc::try_unwrap(outgrown.workspace) {
                    Ok(alone) => alone.free_on_own_stream(),
                    Err(shared) => evicted.push(shared),
                }
            }
            while entries.len() > POOL_STREAMS {
                let Some(victim) = entries
                    .iter()
                    .filter(|(k, e)| **k != id && Arc::strong_count(&e.workspace) == 1)
                    .min_by_key(|(_, e)| e.last_use)
                    .map(|(k, _)| *k)
                else {
                    break;
                };
                evicted.extend(entries.remove(&victim).map(|e| e.workspace));
            }
            workspace
        };
        drop(evicted);
        if self.graveyard.lock().len() >= GRAVEYARD_LIMIT {
            // Best effort: this call's scan does not depend on it (a failed burial keeps
            // the graveyard for the next try).
            let _ = self.bury();
        }
        Ok(workspace)
    }

    /// Forgets the pooled workspace at `ptr` (a kernel reported it faulty); true when
    /// there was one.
    pub fn discard(&self, ptr: CUdeviceptr) -> bool {
        let removed = {
            let mut guard = self.entries.lock();
            let id = guard.0.iter().find(|(_, e)| e.workspace.ptr == ptr).map(|(k, _)| *k);
            id.and_then(|id| guard.0.remove(&id))
        };
        removed.is_some()
    }

    /// Frees every pooled workspace no call is using right now, then the graveyard
    /// (which synchronises the device when it holds anything). The caller has entered the
    /// device's context.
    pub fn trim(&self) -> Result<()> {
        let released: Vec<_> = {
            let mut guard = self.entries.lock();
            let idle: Vec<u64> = guard
                .0
                .iter()
                .filter(|(_, e)| Arc::strong_count(&e.workspace) == 1)
                .map(|(k, _)| *k)
                .collect();
            idle.into_iter().filter_map(|k| guard.0.remove(&k)).collect()
        };
        drop(released);
        self.bury()
    }

    /// The number of streams with a pooled workspace.
    pub fn len(&self) -> usize {
        self.entries.lock().0.len()
    }

    /// Frees the graveyard: workspaces whose last scans are known to be done only once
    /// the whole device is.
    fn bury(&self) -> Result<()> {
        let dead: Vec<CUdeviceptr> = std::mem::take(&mut *self.graveyard.lock());
        if dead.is_empty() {
            return Ok(());
        }
        driver::with_relaxed_capture(|| {
            // SAFETY: once the context is synchronised no queued scan uses these; each
            // pointer was allocated by this pool and is freed once.
            unsafe {
                let synced = check(sys::cuCtxSynchronize(), "cuCtxSynchronize");
                if synced.is_err() {
                    self.graveyard.lock().extend(&dead);
                    return synced;
                }
                for ptr in dead {
                    sys::cuMemFree_v2(ptr);
                }
            }
            Ok(())
        })
    }

    /// Frees everything; the device is idle (the caller synchronised it).
    pub fn release_all(&self) {
        let all: Vec<_> = self.entries.lock().0.drain().collect();
        drop(all);
        let _ = self.bury();
    }
}

/// What a captured graph keeps alive for its launches: the workspace, the kernels (any
/// algorithm's loaded module set), the fault mailbox and the context, released on a
/// thread of scanrt's when the graph is destroyed.
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
    let keep = Box::into_raw(Box::new(GraphKeepAlive {
        workspace,
        _kernels: kernels,
        _report: report,
        ctx,
    }));
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
        })?;
    }
    Ok(workspace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_follows_the_contract() {
        assert_eq!(LOOKBACK_HEADER_BYTES, 32);
        assert_eq!(contract::seal(0), contract::WORKSPACE_MAGIC);
        assert_eq!(lookback_slots(4, lookback_bytes(4, 100)), 100);
        assert_eq!(lookback_slots(8, lookback_bytes(8, 100)), 100);
        assert_eq!(lookback_bytes(8, 1) - LOOKBACK_HEADER_BYTES, 16);
    }

    /// A pooled workspace holds the slots it was asked for, for its value size and every
    /// narrower one, for every state size an operator may have (4 to 64 bytes; a pool
    /// sized for 16-byte values once faulted on 40-byte states from 2^20 elements).
    #[test]
    fn pooled_workspaces_hold_every_value_size() {
        for acc_size in (4..=contract::MAX_STATE_BYTES as usize).step_by(4) {
            for slots in [
                1,
                2,
                1000,
                MIN_POOLED_SLOTS - 1,
                MIN_POOLED_SLOTS + 1,
                8193,
                1 << 17,
                (1 << 24) + 3,
            ] {
                let bytes = pooled_bytes(acc_size, slots);
                for narrower in (4..=acc_size).step_by(4) {
                    assert!(
                        lookback_slots(narrower, bytes) >= slots,
                        "{slots} slots of {acc_size}-byte values: {bytes} bytes hold {} of {narrower} bytes",
                        lookback_slots(narrower, bytes)
                    );
                }
            }
        }
    }
}
