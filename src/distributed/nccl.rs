//! NCCL, loaded at run time through cudarc: a communicator (the application's, or ones
//! scanrt made for the GPUs of this process), the in-place all-gather of the ranks'
//! totals, and group calls. The only NCCL calls of the crate.

use std::ffi::{c_void, CStr};

use cudarc::nccl::sys;
use parking_lot::Mutex;

use crate::error::{bail, Error, Result};
use crate::tables::ScanrtStatus;

/// Fails with `NoNccl` unless an NCCL library can be loaded.
fn require_nccl() -> Result<()> {
    // SAFETY: only tries to open the library.
    #[cfg(feature = "dynamic-loading")]
    if !unsafe { sys::is_culib_present() } {
        bail!(
            NoNccl,
            "scans across GPUs need NCCL, and no libnccl.so could be loaded (put the directory \
             holding libnccl.so, a link to libnccl.so.2 will do, on LD_LIBRARY_PATH)"
        );
    }
    Ok(())
}

/// Waits out `ncclInProgress` (a non-blocking communicator's call still being queued:
/// NCCL's rule is to poll `ncclCommGetAsyncError` until the result is final) on each of
/// `comms`, then checks the result of `call`.
///
/// # Safety
/// `comms` are live communicators.
unsafe fn settle(r: sys::ncclResult_t, comms: &[sys::ncclComm_t], call: &str) -> Result<()> {
    if r != sys::ncclResult_t::ncclInProgress {
        return check(r, call);
    }
    for &comm in comms {
        loop {
            let mut state = sys::ncclResult_t::ncclSuccess;
            check(sys::ncclCommGetAsyncError(comm, &mut state), "ncclCommGetAsyncError")?;
            if state != sys::ncclResult_t::ncclInProgress {
                check(state, call)?;
                break;
            }
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// An NCCL result as a scanrt error naming `call`.
fn check(r: sys::ncclResult_t, call: &str) -> Result<()> {
    if r == sys::ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: NCCL returns a static string for every result code.
    let text = unsafe { CStr::from_ptr(sys::ncclGetErrorString(r)) }.to_string_lossy();
    Err(Error::new(
        ScanrtStatus::NcclError,
        format!("{call} failed: {text} ({r:?})"),
    ))
}

/// A rank of an NCCL communicator: the application's (`from_raw`, never destroyed by
/// scanrt) or one of the communicators [`MultiGpu`](crate::MultiGpu) made (destroyed
/// with it). Ranks in communicator order form the logical array of a scan across GPUs.
pub struct Communicator {
    comm: sys::ncclComm_t,
    rank: usize,
    ranks: usize,
    device: i32,
    owned: bool,
    /// Held while a call is queued on the communicator: NCCL takes one at a time.
    enqueue: Mutex<()>,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time, which
// `enqueue` enforces for the calls scanrt makes on it.
unsafe impl Send for Communicator {}
unsafe impl Sync for Communicator {}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Communicator(rank {} of {}, device {})",
            self.rank, self.ranks, self.device
        )
    }
}

impl Communicator {
    /// Wraps the application's `ncclComm_t` (its rank, size and device are asked of NCCL).
    ///
    /// # Safety
    /// `comm` is a live, initialised communicator that outlives the wrapper.
    pub unsafe fn from_raw(comm: *mut c_void) -> Result<Communicator> {
        require_nccl()?;
        if comm.is_null() {
            bail!(NullArgument, "the NCCL communicator is NULL");
        }
        Self::describe(comm as sys::ncclComm_t, false)
    }

    unsafe fn describe(comm: sys::ncclComm_t, owned: bool) -> Result<Communicator> {
        let (mut rank, mut ranks, mut device) = (0, 0, 0);
        check(sys::ncclCommUserRank(comm, &mut rank), "ncclCommUserRank")?;
        check(sys::ncclCommCount(comm, &mut ranks), "ncclCommCount")?;
        check(sys::ncclCommCuDevice(comm, &mut device), "ncclCommCuDevice")?;
        Ok(Communicator {
            comm,
            rank: rank as usize,
            ranks: ranks as usize,
            device,
            owned,
            enqueue: Mutex::new(()),
        })
    }

    /// One communicator per device ordinal of `devices`, in that order (ranks 0, 1, ...).
    pub(crate) fn for_devices(devices: &[i32]) -> Result<Vec<Communicator>> {
        require_nccl()?;
        let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: one out-slot per device; the list outlives the call.
        unsafe {
            check(
                sys::ncclCommInitAll(comms.as_mut_ptr(), devices.len() as i32, devices.as_ptr()),
                "ncclCommInitAll",
            )?;
            comms.into_iter().map(|c| Self::describe(c, true)).collect()
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The CUDA device ordinal of this rank.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The `ncclComm_t`.
    pub fn raw(&self) -> *mut c_void {
        self.comm as *mut c_void
    }

    /// Gathers every rank's `bytes` at `rank * bytes` of `buffer` into the whole of
    /// `buffer` on every rank, in place, on `stream`.
    ///
    /// # Safety
    /// `buffer` is device memory of `ranks * bytes` bytes on this rank's device, `stream`
    /// a live stream there.
    pub(crate) unsafe fn all_gather_in_place(&self, buffer: u64, bytes: usize, stream: *mut c_void) -> Result<()> {
        let _one_at_a_time = self.enqueue.lock();
        let send = (buffer + (self.rank * bytes) as u64) as *const c_void;
        settle(
            sys::ncclAllGather(
                send,
                buffer as *mut c_void,
                bytes,
                sys::ncclDataType_t::ncclUint8,
                self.comm,
                stream as sys::cudaStream_t,
            ),
            &[self.comm],
            "ncclAllGather",
        )
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: scanrt made it and nothing uses it any more.
            unsafe {
                sys::ncclCommDestroy(self.comm);
            }
        }
    }
}

/// Held while one thread queues a group of collectives over several communicators: two
/// such groups queued at once could reach the devices in different orders, pairing one
/// call's all-gather on one GPU with the other call's on another.
static GROUPS: Mutex<()> = Mutex::new(());

/// Runs `f` between `ncclGroupStart` and `ncclGroupEnd` (one thread driving the
/// collectives of `comms`, each rank's), one group of the process at a time.
pub(crate) fn group<T>(comms: &[Communicator], f: impl FnOnce() -> Result<T>) -> Result<T> {
    let _one_group_at_a_time = GROUPS.lock();
    // SAFETY: group calls nest and take no arguments; `comms` are live.
    unsafe {
        check(sys::ncclGroupStart(), "ncclGroupStart")?;
        let result = f();
        let raw: Vec<sys::ncclComm_t> = comms.iter().map(|c| c.comm).collect();
        let ended = settle(sys::ncclGroupEnd(), &raw, "ncclGroupEnd");
        let value = result?;
        ended.map(|_| value)
    }
}
