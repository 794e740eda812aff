//! The single-process form of a scan across GPUs: one part per GPU of this process, each
//! on its own scanrt context and stream, driven from one thread. Communicators are made
//! once (`ncclCommInitAll`) and kept; each scan groups the ranks' all-gathers.

use super::nccl::{group, Communicator};
use super::rank::RankScan;
use crate::array::ArrayView;
use crate::context::Context;
use crate::error::{bail, Result};
use crate::scan::desc::ScanDesc;
use crate::stream::Stream;

/// The GPUs of this process as the ranks of scans across them, in the order of the
/// contexts given (rank 0 holds the start of the logical array).
pub struct MultiGpu {
    contexts: Vec<Context>,
    comms: Vec<Communicator>,
}

/// One GPU's part of a scan across the GPUs of a [`MultiGpu`]: its consecutive chunk of
/// the logical array and where the chunk of the result goes, on a stream of that GPU's
/// context.
pub struct GpuPart<'a> {
    /// A stream of this GPU's context.
    pub stream: &'a Stream,
    /// The GPU's chunk of the logical array (1-D).
    pub input: ArrayView<'a>,
    /// Receives the chunk of the result (the input's length).
    pub output: ArrayView<'a>,
    /// Receives the whole array's total (one element of the accumulator type), if given.
    pub total: Option<ArrayView<'a>>,
}

impl MultiGpu {
    /// Ranks over `contexts`, GPU contexts of distinct devices (NCCL communicators are
    /// made for them now: this takes a while, so keep the object).
    pub fn new(contexts: &[Context]) -> Result<MultiGpu> {
        let mut devices = Vec::with_capacity(contexts.len());
        for ctx in contexts {
            let ordinal = ctx.gpu()?.ordinal as i32;
            if devices.contains(&ordinal) {
                bail!(InvalidArgument, "device {ordinal} is given twice: one context per GPU");
            }
            devices.push(ordinal);
        }
        if devices.is_empty() {
            bail!(InvalidArgument, "no contexts given");
        }
        Ok(MultiGpu {
            contexts: contexts.to_vec(),
            comms: Communicator::for_devices(&devices)?,
        })
    }

    /// The number of GPUs (ranks).
    pub fn ranks(&self) -> usize {
        self.contexts.len()
    }

    /// The contexts, in rank order.
    pub fn contexts(&self) -> &[Context] {
        &self.contexts
    }

    /// The communicators, in rank order: for the rank form of the scan
    /// ([`Context::scan_across`], [`Operator::scan_across_raw`](crate::Operator::scan_across_raw)),
    /// one thread per rank (NCCL needs a group, or a thread per rank, to drive several
    /// ranks' collectives).
    pub fn communicators(&self) -> &[Communicator] {
        &self.comms
    }

    /// Scans the logical array made of `parts` (one per GPU, in rank order) with `desc`,
    /// asynchronously on each part's stream. Every part is planned and checked before
    /// anything is queued, so a refused argument leaves every output unwritten.
    pub fn scan(&self, parts: &[GpuPart], desc: &ScanDesc) -> Result<()> {
        if parts.len() != self.ranks() {
            bail!(
                InvalidArgument,
                "{} parts for {} GPUs: one part per GPU",
                parts.len(),
                self.ranks()
            );
        }
        let ranks = self.ranks();
        let planned: Vec<RankScan> = parts
            .iter()
            .zip(&self.contexts)
            .enumerate()
            .map(|(rank, (part, ctx))| {
                RankScan::for_views(
                    ctx,
                    part.stream,
                    &part.input,
                    &part.output,
                    desc,
                    part.total.as_ref(),
                    ranks,
                    rank,
                )
            })
            .collect::<Result<_>>()?;
        // SAFETY: views are valid for their lengths; each part is checked with the driver
        // in `begin` (all before the first reduction is queued).
        unsafe {
            for (part, comm) in planned.iter().zip(&self.comms) {
                part.check(comm)?;
            }
            for part in &planned {
                part.begin()?;
            }
            group(|| {
                for ((part, comm), p) in planned.iter().zip(&self.comms).zip(parts) {
                    comm.all_gather_in_place(part.totals(), part.state_bytes(), p.stream.raw())?;
                }
                Ok(())
            })?;
            for part in &planned {
                part.finish()?;
            }
        }
        Ok(())
    }
}
