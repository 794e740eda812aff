//! The fault mailbox: mapped pinned host memory through which kernels tell the host that
//! they refused a workspace (bad seal, size or fault word) or gave up a bounded wait, and
//! the error such a fault becomes at the next call on the context, naming the call whose
//! kernel reported it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::contract::{self, FaultReport};
use crate::error::{Error, Result, ScanrtStatus};
use crate::runtime::cu::{self, CUdeviceptr, CurrentContext, SharedContext};

// Every code, with the poison flag, fits the word's code bits.
const _: () = assert!(contract::FAULT_POISONED | contract::FAULT_LARGER < 1 << contract::FAULT_CODE_BITS);

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
    /// The low `contract::FAULT_CALL_BITS` bits of the serial of the call whose kernel
    /// reported (`runtime::calls`).
    pub call: u32,
}

impl FaultMailbox {
    /// The caller has entered `ctx`.
    pub fn new(ctx: SharedContext) -> Result<Arc<FaultMailbox>> {
        let (host, device) = cu::alloc_mapped_host(std::mem::size_of::<FaultReport>())?;
        // SAFETY: fresh host memory of the report's size, page-aligned.
        unsafe { std::ptr::write_volatile(host as *mut FaultReport, FaultReport::default()) };
        Ok(Arc::new(FaultMailbox {
            host: host as *mut FaultReport,
            device,
            ctx,
        }))
    }

    /// Takes the pending fault, if any: its word is swapped for 0 atomically, so two
    /// threads never both take one and a later fault is kept.
    pub fn take(&self) -> Option<Fault> {
        // SAFETY: `host` is live, aligned mapped memory of the right layout (see new),
        // accessed by the host only through this atomic.
        let word = unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*self.host).word)) };
        if word.load(Ordering::Relaxed) == 0 {
            return None;
        }
        Fault::from_word(word.swap(0, Ordering::Relaxed))
    }
}

impl Fault {
    /// The fault a `contract::fault_word` reports; None for 0.
    fn from_word(word: u64) -> Option<Fault> {
        const CODE_MASK: u64 = (1 << contract::FAULT_CODE_BITS) - 1;
        const CALL_MASK: u64 = (1 << contract::FAULT_CALL_BITS) - 1;
        const ADDRESS_SHIFT: u32 = contract::FAULT_CALL_BITS + contract::FAULT_CODE_BITS;
        (word != 0).then(|| Fault {
            workspace: (word >> ADDRESS_SHIFT) << 4,
            code: (word & CODE_MASK) as u32,
            call: ((word >> contract::FAULT_CODE_BITS) & CALL_MASK) as u32,
        })
    }
}

impl Drop for FaultMailbox {
    /// In relaxed capture mode: another thread's capture must not make the free fail.
    fn drop(&mut self) {
        let _ = cu::with_relaxed_capture(|| {
            let _current = CurrentContext::enter(self.ctx.cu_ctx())?;
            // SAFETY: allocated by alloc_mapped_host in `new`, freed once; nothing refers
            // to it any more (the device and every graph holding it are gone).
            unsafe { cu::free_mapped_host(self.host as *mut c_void) };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_word_round_trips_the_workspace_the_call_and_the_code() {
        let workspace = 0x7fff_dead_bee0;
        for (call, code) in [(1, contract::FAULT_WATCHDOG), (0x1_2345, contract::FAULT_POISONED | 4)] {
            let word = contract::fault_word(workspace, call, code);
            let fault = Fault::from_word(word).unwrap();
            assert_eq!(
                fault,
                Fault {
                    workspace,
                    code,
                    call: call & 0xffff
                }
            );
        }
        assert_eq!(Fault::from_word(0), None);
    }
}
