//! One rank's part of a scan across GPUs, in the steps the module's top describes: its
//! plans (the chunk's reduction, the totals' exclusive scan where it is needed, the
//! chunk's scan from a carry), planned and checked before anything is queued, and the
//! temporary memory of the totals and carries (scanrt's stream-ordered pool).

use crate::runtime::cu::CUstream;

use super::nccl::Communicator;
use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::INIT_FOLD_MAX_STATES;
use crate::error::{bail, Result};
use crate::operator::{Operator, OperatorScan};
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::operator_model::Carries;
use crate::scan::plan::ScanPlan;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Direction};

/// Chunks of at most this many elements find their total by a scan into their output,
/// which `finish` scans again from the carry (one launch, against the reduction's three:
/// latency, not bandwidth, bounds them); larger ones, and scans in place, by the
/// reduction (n of memory traffic, against the scan's 2n).
const SCAN_TWICE_MAX: u64 = 1 << 20;

/// Whether a rank's carry comes from the totals' exclusive scan: with an initial value
/// (which the gathered totals do not hold), or more earlier ranks than the kernels' fold
/// takes. Otherwise the chunk's kernel folds the totals itself. The choice depends only
/// on what every rank shares, so the ranks' results do not depend on which of them ask
/// for the whole total (the deterministic mode's bits included).
fn carry_from_totals_scan(init: bool, ranks: usize) -> bool {
    init || ranks > INIT_FOLD_MAX_STATES as usize
}

/// Whether a chunk of `n` elements finds its total by the reduction.
fn reduced(n: u64, inputs: &[u64], outputs: &[u64]) -> bool {
    n > SCAN_TWICE_MAX || outputs.iter().any(|o| inputs.contains(o))
}

/// The operator a rank scans with.
pub(crate) enum PartOperator<'a> {
    /// A built-in operator from a descriptor, over these input and output types.
    Builtin {
        desc: &'a ScanDesc,
        input: crate::types::DType,
        output: crate::types::DType,
    },
    /// A user-defined operator.
    User { op: &'a Operator, scan: &'a OperatorScan },
}

impl PartOperator<'_> {
    /// The scan's direction, and whether it starts from an initial value.
    fn direction_and_init(&self) -> (Direction, bool) {
        match self {
            PartOperator::Builtin { desc, .. } => (desc.direction, desc.init.is_some()),
            PartOperator::User { scan, .. } => (scan.direction, scan.init.is_some()),
        }
    }
}

/// A rank's planned part: what `begin` and `finish` queue on its stream.
pub(crate) struct RankScan<'a> {
    stream: &'a Stream,
    ctx: &'a Context,
    /// The chunk's reduction; None: small chunks scan twice instead (see `begin`).
    reduce: Option<ScanPlan>,
    /// The totals' exclusive scan, for the carries (see `carry_from_totals_scan`) or the
    /// whole array's total.
    carries: Option<ScanPlan>,
    /// Whether the chunk's scan starts from the totals' scan, not the fold.
    carry_from_scan: bool,
    chunk: ScanPlan,
    direction: Direction,
    inputs: Vec<u64>,
    outputs: Vec<u64>,
    total: u64,
    rank: usize,
    ranks: usize,
    state: usize,
    /// Every rank's total, then every rank's carry in (device memory, freed in `finish`,
    /// or when the part is dropped unfinished after an error).
    temp: std::cell::Cell<u64>,
}

impl<'a> RankScan<'a> {
    /// Plans the part of rank `rank` of `ranks` over 1-D views.
    #[allow(clippy::too_many_arguments)]
    pub fn for_views(
        ctx: &'a Context,
        stream: &'a Stream,
        input: &ArrayView,
        output: &ArrayView,
        desc: &'a ScanDesc,
        total: Option<&ArrayView>,
        ranks: usize,
        rank: usize,
    ) -> Result<RankScan<'a>> {
        input.check_output(output)?;
        let n = input.flat_len("input of a scan across GPUs")?;
        output.flat_len("output of a scan across GPUs")?;
        let accumulator = desc.types(input.dtype(), output.dtype()).accumulator;
        let total = match total {
            None => 0,
            Some(t) if t.dtype() != accumulator => bail!(
                InvalidArgument,
                "the total is a {} array but the scan accumulates in {}",
                t.dtype().c_name(),
                accumulator.c_name()
            ),
            Some(t) => {
                if t.flat_len("total")? == 0 {
                    bail!(BufferTooSmall, "the total holds no element");
                }
                t.addr()
            }
        };
        let operator = PartOperator::Builtin {
            desc,
            input: input.dtype(),
            output: output.dtype(),
        };
        RankScan::new(
            ctx,
            stream,
            operator,
            &[input.addr()],
            &[output.addr()],
            n,
            total,
            ranks,
            rank,
        )
    }

    /// Plans the part of rank `rank` of `ranks`: `n` elements of `inputs` into `outputs`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &'a Context,
        stream: &'a Stream,
        operator: PartOperator,
        inputs: &[u64],
        outputs: &[u64],
        n: u64,
        total: u64,
        ranks: usize,
        rank: usize,
    ) -> Result<RankScan<'a>> {
        ctx.gpu()?; // the exchange is NCCL's
        if rank >= ranks {
            bail!(InvalidArgument, "rank {rank} of {ranks} ranks");
        }
        let (direction, has_init) = operator.direction_and_init();
        let carry_from_scan = carry_from_totals_scan(has_init, ranks);
        // The totals' scan gives the carries, or the whole array's total.
        let scan_totals = carry_from_scan || total != 0;
        let (reduce, carries, chunk) = match operator {
            PartOperator::Builtin { desc, input, output } => {
                if desc.segments != Segments::None {
                    bail!(UnsupportedCombination, "a scan across GPUs is unsegmented");
                }
                let types = desc.types(input, output);
                let local = ScanDesc { init: None, ..*desc };
                let reduce = ScanDesc {
                    inclusive: true,
                    algorithm: Algorithm::Matrix,
                    ..local
                };
                let totals = ScanDesc {
                    inclusive: false,
                    accumulator: None,
                    algorithm: Algorithm::Auto,
                    ..*desc
                };
                let acc = types.accumulator;
                (
                    reduced(n, inputs, outputs)
                        .then(|| ctx.plan(input, output, n, &reduce))
                        .transpose()?,
                    scan_totals
                        .then(|| ctx.plan(acc, acc, ranks as u64, &totals))
                        .transpose()?,
                    ctx.plan(input, output, n, &local)?,
                )
            }
            PartOperator::User { op, scan } => {
                if scan.segments != Segments::None {
                    bail!(UnsupportedCombination, "a scan across GPUs is unsegmented");
                }
                let local = OperatorScan {
                    init: None,
                    ..scan.clone()
                };
                let reduce = OperatorScan {
                    inclusive: true,
                    algorithm: Algorithm::Matrix,
                    ..local.clone()
                };
                let totals = OperatorScan {
                    inclusive: false,
                    algorithm: Algorithm::Auto,
                    ..scan.clone()
                };
                (
                    reduced(n, inputs, outputs).then(|| op.plan(n, &reduce)).transpose()?,
                    scan_totals
                        .then(|| op.states_only()?.plan(ranks as u64, &totals))
                        .transpose()?,
                    op.plan(n, &local)?,
                )
            }
        };
        let state = chunk.state_bytes();
        let part = RankScan {
            stream,
            ctx,
            reduce,
            carries,
            carry_from_scan,
            chunk,
            direction,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            total,
            rank,
            ranks,
            state,
            temp: Default::default(),
        };
        Ok(part)
    }

    /// Bytes of one state (the simulated exchange of the tests).
    #[cfg(test)]
    pub fn state_bytes(&self) -> usize {
        self.state
    }

    /// The device array of every rank's total (valid between `begin` and `finish`).
    pub fn totals(&self) -> u64 {
        self.temp.get()
    }

    /// Gathers every rank's total into this rank's array of totals, through `comm`.
    ///
    /// # Safety
    /// `begin` succeeded.
    pub unsafe fn exchange(&self, comm: &Communicator) -> Result<()> {
        comm.all_gather_in_place(self.totals(), self.state, self.stream.raw())
    }

    /// Checks the communicator's device and every array of the part, as the chunk's
    /// scan will (before any collective: a refused argument writes nothing).
    ///
    /// # Safety
    /// As [`ScanPlan::execute`].
    pub unsafe fn check(&self, comm: &Communicator) -> Result<()> {
        let dev = self.ctx.gpu()?;
        // A fault an earlier kernel left is reported here, not by `begin` after the checks.
        dev.take_fault()?;
        if dev.ordinal as i32 != comm.device() {
            bail!(
                ContextMismatch,
                "rank {} of the communicator is on device {}, the context on device {}",
                comm.rank(),
                comm.device(),
                dev.ordinal
            );
        }
        self.chunk.check_arrays(
            self.stream,
            &self.inputs,
            &self.outputs,
            Carries {
                carry_in: 0,
                carry_out: self.total,
            },
        )
    }

    /// Allocates the totals and carries and queues the reduction of the chunk into this
    /// rank's slot.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`]; `check` passed.
    pub unsafe fn begin(&self) -> Result<()> {
        let dev = self.ctx.gpu()?;
        let _current = dev.enter()?;
        let raw = self.stream.raw() as CUstream;
        let temp = dev.scratch.alloc(2 * self.ranks * self.state, raw)?;
        self.temp.set(temp);
        let slot = temp + (self.rank * self.state) as u64;
        match &self.reduce {
            Some(reduce) => reduce.reduce(self.stream, &self.inputs, slot),
            // A small chunk is scanned into its output from the identity for its total (one
            // launch, where the reduction takes three); `finish` scans it again.
            None => self
                .chunk
                .execute_known(
                    self.stream,
                    &self.inputs,
                    &self.outputs,
                    Carries {
                        carry_in: 0,
                        carry_out: slot,
                    },
                    0,
                )
                .map(|_| ()),
        }
    }

    /// After the exchange: the totals' exclusive scan where needed (the carries with an
    /// initial value, the whole array's total), then the chunk's scan from this rank's
    /// carry; frees the temporary memory.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`]; `begin` succeeded and the totals were gathered.
    pub unsafe fn finish(&self) -> Result<ScanInfo> {
        let info = self.scan_totals().and_then(|_| self.scan_chunk());
        self.release()?;
        info
    }

    /// Where the totals' exclusive scan writes every rank's carry.
    fn scanned_carries(&self) -> u64 {
        self.temp.get() + (self.ranks * self.state) as u64
    }

    /// The totals' exclusive scan from the initial value, if planned: every rank's carry,
    /// and the whole array's total.
    unsafe fn scan_totals(&self) -> Result<()> {
        let Some(plan) = &self.carries else { return Ok(()) };
        let carries = Carries {
            carry_in: 0,
            carry_out: self.total,
        };
        plan.execute_known(self.stream, &[self.temp.get()], &[self.scanned_carries()], carries, 0)
            .map(|_| ())
    }

    /// The chunk's scan from this rank's carry: the scanned one, or the fold of the earlier
    /// ranks' totals (earlier in the scan's traversal order), which its kernel reads itself.
    unsafe fn scan_chunk(&self) -> Result<ScanInfo> {
        let (rank, ranks) = (self.rank, self.ranks);
        let (carry_in, states) = if self.carry_from_scan {
            (self.scanned_carries() + (rank * self.state) as u64, 1)
        } else {
            let (first, count) = match self.direction {
                Direction::Forward => (0, rank),
                Direction::Backward => (rank + 1, ranks - rank - 1),
            };
            match count {
                0 => (0, 0), // the first rank starts from the identity
                _ => (self.temp.get() + (first * self.state) as u64, count as u32),
            }
        };
        let carries = Carries { carry_in, carry_out: 0 };
        self.chunk
            .execute_known(self.stream, &self.inputs, &self.outputs, carries, states)
    }

    /// Frees the temporary memory (after the work queued on the stream), if held.
    fn release(&self) -> Result<()> {
        let temp = self.temp.replace(0);
        if temp == 0 {
            return Ok(());
        }
        let dev = self.ctx.gpu()?;
        let _current = dev.enter()?;
        // SAFETY: `begin` allocated it on this stream; nothing queued later uses it.
        unsafe { dev.scratch.free(temp, self.stream.raw() as CUstream) }
    }
}

impl Drop for RankScan<'_> {
    /// A part that failed between `begin` and `finish` still frees its memory.
    fn drop(&mut self) {
        let _ = self.release();
    }
}
