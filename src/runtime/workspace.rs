//! Look-back workspaces: their layout (a `contract::LookbackHeader` and status slots, as
//! kernels/device/lookback.cuh uses them), the checks a caller's workspace passes, and
//! the per-stream pool. Graph-owned workspaces are in `graph_workspace`, the fault
//! mailbox kernels report to in `faults`.
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
//! - Every workspace starts with a sealed header; kernels refuse one whose seal, size or
//!   fault word is wrong, and bound every look-back wait. Either way they write the
//!   workspace address and a code to the mapped `FaultReport`, which the next call on the
//!   context returns as `WorkspaceFault`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::contract::{self, LookbackHeader};
use crate::error::{bail, Result};
use crate::runtime::cu::{self, CUdeviceptr, CUstream, PrivateStream};

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

/// Bytes of a pooled workspace for `slots` tiles of `acc_size`-byte values: a power of
/// two, at least what `MIN_POOLED_SLOTS` slots of 16-byte values take, so a stream's
/// scans of any built-in type share one workspace and it rarely grows. (Rounding the
/// slot count instead would give a sort's 256 slots per tile of 4-byte counts six times
/// the memory they need.) Slot sizes grow with the value's, so it also holds `slots`
/// slots of every narrower value.
fn pooled_bytes(acc_size: usize, slots: u64) -> usize {
    lookback_bytes(acc_size, slots)
        .max(lookback_bytes(16, MIN_POOLED_SLOTS))
        .next_power_of_two()
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
    cu::zero_async(ptr, bytes, stream)?;
    let header: Vec<u8> = [area as u32, (area >> 32) as u32, sealed as u32, (sealed >> 32) as u32]
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    cu::fill_async(ptr + AREA_OFFSET, &header, stream)?;
    Ok(())
}

/// The layout checks a caller's workspace passes before it is initialised or used:
/// 16-byte aligned (slots are read as 16-byte words) and room for the header.
/// `GpuDevice::check_workspace` adds that it is device memory of the device.
pub(crate) fn check_layout(workspace: Workspace) -> Result<()> {
    if !workspace.ptr.is_multiple_of(16) {
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
    Ok(())
}

/// Sets up the device's memory pool with one small stream-ordered allocation on a
/// private stream, freed and synchronised at once. The first stream-ordered allocation
/// of a process sets the pool up: on an H100 that took 10 ms, which would otherwise fall
/// on the first scan (its workspace). The caller has entered the device's context.
pub(crate) fn warm_memory_pool() -> Result<()> {
    let s = PrivateStream::new()?;
    // SAFETY: a live stream of the current context; the allocation is freed on it, and
    // the stream synchronised before it is destroyed.
    unsafe {
        let ptr = cu::alloc_async(1 << 16, s.raw())?;
        cu::free_async(ptr, s.raw())?;
    }
    s.synchronize()
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
        if unsafe { cu::free_async(self.ptr, self.stream as CUstream) }.is_ok() {
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

    /// The workspace of `stream` (not capturing: the driver gives a capturing stream no
    /// id), with at least `slots` slots for `acc_size`-byte accumulators, created or grown
    /// stream-ordered on the stream. The caller has entered the device's context and keeps
    /// the returned handle until its launch is queued.
    pub fn for_stream(&self, stream: CUstream, acc_size: usize, slots: u64) -> Result<Arc<StreamWorkspace>> {
        let id = cu::stream_id(stream)?;
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
            // SAFETY: the stream belongs to the current context (checked by the caller);
            // the new memory is initialised before any scan on the stream can use it.
            let ptr = unsafe {
                let ptr = cu::alloc_async(bytes, stream)?;
                if let Err(e) = initialise(ptr, bytes, stream) {
                    let _ = cu::free_async(ptr, stream);
                    return Err(e);
                }
                ptr
            };
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
        // Logged with no lock held: the application's log callback may take locks of its
        // own, or call scanrt.
        log::debug!("workspace of {} bytes for stream {id}", workspace.bytes);
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
        cu::with_relaxed_capture(|| {
            if let Err(e) = cu::synchronize_current_context() {
                self.graveyard.lock().extend(&dead);
                return Err(e);
            }
            for ptr in dead {
                // SAFETY: the context is synchronised, so no queued scan uses it; each
                // pointer was allocated by this pool and is freed once.
                unsafe { cu::free(ptr) };
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
