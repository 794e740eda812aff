//! Scans across GPUs: one logical array split over ranks, each rank holding a
//! consecutive chunk (ranks in communicator order), like `MPI_Scan`. Each rank
//!
//! 1. finds its chunk's total, into its slot of a small array of every rank's total:
//!    chunks of up to 2^20 elements by a scan into the output (one launch), larger ones
//!    by the matrix scan's reduction (one read, a fixed association order);
//! 2. gathers every rank's total (NCCL's all-gather of one state per rank, in place;
//!    sends and receives between every pair of ranks measured slower on 2 GPUs);
//! 3. scans its chunk from its carry, which the chunk's kernel folds from the earlier
//!    ranks' totals itself; with an initial value the carry comes from an exclusive scan
//!    of the totals (one tile) instead, which also gives the whole array's total to a
//!    rank that asks for it.
//!
//! About 3n of memory traffic per GPU (n to reduce, 2n to scan) and one exchange of a
//! state per rank, with no host round trip: everything is queued on the rank's stream.
//! A backward scan runs the ranks from the last. The deterministic mode gives the same
//! bits for the same data and number of ranks: the reduction, the fold and the totals'
//! scan have a fixed order, and the chunk's scan is the deterministic single pass.
//!
//! Two forms: `Context::scan_across` / `Operator::scan_across_raw`, one rank of an NCCL
//! application's communicator (ranks may sit on several hosts); and [`MultiGpu`], the GPUs
//! of one process driven from one thread (communicators made with `ncclCommInitAll`,
//! collectives grouped).
//!
//! A rank whose arguments are refused (or whose device reports a fault of an earlier
//! kernel) returns its error before any collective; the other ranks' all-gathers then wait
//! for it, as with any NCCL collective a rank skips. So does a rank that cannot allocate
//! its few bytes of totals. Non-blocking communicators are waited out where NCCL answers
//! `ncclInProgress`.

mod multi_gpu;
mod nccl;
mod rank;
#[cfg(test)]
mod tests;

pub use multi_gpu::{GpuPart, MultiGpu, OperatorPart};
pub use nccl::Communicator;

use crate::array::ArrayView;
use crate::context::Context;
use crate::error::Result;
use crate::operator::{Operator, OperatorScan};
use crate::scan::desc::ScanDesc;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use rank::{PartOperator, RankScan};

impl Context {
    /// This rank's part of a scan across the ranks of `comm`: `input` is the rank's
    /// chunk of the logical array (1-D), `output` receives the chunk of the result, as if
    /// the whole array had been scanned with `desc` (its initial value starts rank 0, or
    /// the last rank backward). `total`, if given (one element of the accumulator type),
    /// receives the whole array's total on every rank. Every rank of `comm` must call it
    /// with the same descriptor and accumulator type, on a stream of the communicator's
    /// device; asynchronous. A rank that returns an error does so before any collective
    /// and the others wait for it (module docs): abort the communicator to go on. Not
    /// inside an NCCL group (`ncclGroupStart`): the chunk's scan is queued after the
    /// all-gather, which a group holds back until its end; drive several ranks from one
    /// thread with [`MultiGpu`].
    pub fn scan_across(
        &self,
        comm: &Communicator,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        desc: &ScanDesc,
        total: Option<&ArrayView>,
    ) -> Result<ScanInfo> {
        let part = RankScan::for_views(self, stream, input, output, desc, total, comm.ranks(), comm.rank())?;
        // SAFETY: the views are valid for their lengths (checked when planned and again
        // by the driver before anything is queued).
        unsafe {
            part.check(comm)?;
            part.begin()?;
            part.exchange(comm)?;
            part.finish()
        }
    }
}

impl Operator {
    /// This rank's part of a scan across the ranks of `comm` with this operator:
    /// `inputs`/`outputs` as [`Operator::scan_raw`] takes them (device pointers, `n`
    /// elements: the rank's chunk), `scan` as for one GPU (its initial state starts
    /// rank 0), `total` a device address receiving the whole array's total state (0:
    /// none). Unsegmented scans only.
    ///
    /// # Safety
    /// As [`Operator::scan_raw`]: the driver checks every range, but the memory must stay
    /// allocated until the scan completes on `stream`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn scan_across_raw(
        &self,
        comm: &Communicator,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        n: u64,
        scan: &OperatorScan,
        total: u64,
    ) -> Result<ScanInfo> {
        let operator = PartOperator::User { op: self, scan };
        let part = RankScan::new(
            self.context(),
            stream,
            operator,
            inputs,
            outputs,
            n,
            total,
            comm.ranks(),
            comm.rank(),
        )?;
        part.check(comm)?;
        part.begin()?;
        part.exchange(comm)?;
        part.finish()
    }
}
