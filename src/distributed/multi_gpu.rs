//! The single-process form of a scan across GPUs: one part per GPU of this process, each
//! on its own scanrt context and stream, driven from one thread. Communicators are made
//! once (`ncclCommInitAll`) and kept; each scan groups the ranks' all-gathers.

use super::nccl::{group, Communicator};
use super::rank::{PartOperator, RankScan};
use crate::array::ArrayView;
use crate::context::Context;
use crate::error::{bail, Result};
use crate::operator::{Operator, OperatorDesc, OperatorScan};
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

/// One GPU's part of a scan across the GPUs of a [`MultiGpu`] with a user-defined
/// operator: the operator made on that GPU's context (the same definition on every GPU),
/// and the chunk's device arrays as [`Operator::scan_raw`] takes them, on a stream of that
/// context.
pub struct OperatorPart<'a> {
    /// The operator, made on this GPU's context.
    pub op: &'a Operator,
    /// A stream of this GPU's context.
    pub stream: &'a Stream,
    /// The chunk's input arrays (device addresses), as the operator reads them.
    pub inputs: &'a [u64],
    /// Its output arrays.
    pub outputs: &'a [u64],
    /// The chunk's length in elements.
    pub n: u64,
    /// The device address receiving the whole array's total state; 0: none.
    pub total: u64,
}

/// Whether two descriptions define the same operator (source, state and functions; the
/// names may differ), as every rank of one scan must.
fn same_definition(a: &OperatorDesc, b: &OperatorDesc) -> bool {
    a.source == b.source
        && (&a.state_type, a.state_size, a.state_align) == (&b.state_type, b.state_size, b.state_align)
        && (&a.combine, &a.identity) == (&b.combine, &b.identity)
        && (&a.load, &a.store) == (&b.load, &b.store)
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
        self.check_count(parts.len())?;
        // The ranks exchange their totals as states of one type.
        let accumulators: Vec<_> = parts
            .iter()
            .map(|p| desc.types(p.input.dtype(), p.output.dtype()).accumulator)
            .collect();
        if let Some(rank) = accumulators.iter().position(|&a| a != accumulators[0]) {
            bail!(
                InvalidArgument,
                "rank {rank} accumulates in {}, rank 0 in {}: one accumulator type on every GPU",
                accumulators[rank].c_name(),
                accumulators[0].c_name()
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
        // SAFETY: views are valid for their lengths, and checked with the driver in `run`.
        unsafe { self.run(&planned) }
    }

    /// [`MultiGpu::scan`] with a user-defined operator: `scan` as for one GPU (its initial
    /// state starts rank 0), `parts` one per GPU in rank order.
    ///
    /// # Safety
    /// As [`Operator::scan_raw`]: the driver checks every range, but the memory must stay
    /// allocated until the scan completes on each part's stream.
    pub unsafe fn scan_operator(&self, parts: &[OperatorPart], scan: &OperatorScan) -> Result<()> {
        self.check_count(parts.len())?;
        let first = parts[0].op.desc();
        for (rank, part) in parts.iter().enumerate() {
            let desc = part.op.desc();
            if !same_definition(desc, first) {
                bail!(
                    InvalidArgument,
                    "rank {rank}'s operator {} is not rank 0's {}: one definition on every GPU",
                    desc.name,
                    first.name
                );
            }
        }
        let ranks = self.ranks();
        let planned: Vec<RankScan> = parts
            .iter()
            .enumerate()
            .map(|(rank, part)| {
                let operator = PartOperator::User { op: part.op, scan };
                let ctx = part.op.context();
                RankScan::new(
                    ctx,
                    part.stream,
                    operator,
                    part.inputs,
                    part.outputs,
                    part.n,
                    part.total,
                    ranks,
                    rank,
                )
            })
            .collect::<Result<_>>()?;
        self.run(&planned)
    }

    fn check_count(&self, parts: usize) -> Result<()> {
        if parts != self.ranks() {
            bail!(
                InvalidArgument,
                "{parts} parts for {} GPUs: one part per GPU",
                self.ranks()
            );
        }
        Ok(())
    }

    /// Checks every planned part with the driver, then queues the parts' steps, the
    /// ranks' exchanges grouped.
    ///
    /// # Safety
    /// As [`crate::ScanPlan::execute`] for every part's arrays.
    unsafe fn run(&self, planned: &[RankScan]) -> Result<()> {
        for (part, comm) in planned.iter().zip(&self.comms) {
            part.check(comm)?;
        }
        for part in planned {
            part.begin()?;
        }
        group(&self.comms, || {
            for (part, comm) in planned.iter().zip(&self.comms) {
                part.exchange(comm)?;
            }
            Ok(())
        })?;
        for part in planned {
            part.finish()?;
        }
        Ok(())
    }
}
