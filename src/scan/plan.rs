//! A scan's plan: validated once, with its algorithm, kernel set, tile count and
//! workspace chosen once; then executed any number of times on any addresses of the
//! planned shape. Every scan entry point, built-in or user-defined operator, Rust or C,
//! is a plan and an execution: the operator describes itself through one model
//! (`scan::operator_model`), the launch is `scan::launch`.

mod device_arrays;
mod flags;
mod host_segments;
#[cfg(feature = "nccl")]
mod reduce;
mod segment_offsets;

use std::sync::Arc;

use crate::context::Context;
use crate::contract::{self, OperatorLaunch, OperatorParams, ScanParams, StateBytes};
use crate::engine::{Engine, GpuEngine};
use crate::error::Result;
use crate::runtime::cu::CUstream;
use crate::runtime::device::GpuDevice;
use crate::runtime::launch_target::LaunchTarget;
use crate::runtime::launch_workspace;
use crate::runtime::workspace::Workspace;
use crate::scan::checks::{check_overlaps, validate_addresses, validate_shape};
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::kernels::ScanKernels;
use crate::scan::launch::{bulk_takes, launch_kernels, KernelLaunch, TileCounts};
use crate::scan::operator_model::{BuiltinOperator, Carries, OperatorModel, RowPitches, ScanArrays};
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Backend, ChoiceReason};
use device_arrays::{carry_empty_scan, carry_flags, check_device_arrays};
use flags::address_flags;
pub(crate) use flags::{choose_algorithm, per_segment_carries, segment_param, shape_flags};
use segment_offsets::{OffsetHeads, SegmentCarryParams};

/// The addresses one execution of a plan scans: device pointers on a GPU context, host
/// pointers on the host backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanIo {
    /// Address of the input elements.
    pub input: u64,
    /// Address of the output elements (may equal `input`).
    pub output: u64,
    /// The segment flags or keys of a segmented scan; 0 otherwise.
    pub segments: u64,
    /// Input and output are scanrt buffers of the plan's context, of checked lengths, so
    /// the driver need not be asked about them again.
    pub(crate) known_buffers: bool,
    /// Likewise the segment data.
    pub(crate) known_segments: bool,
    /// The initial state and the total in device memory (unsegmented scans).
    pub carries: Carries,
    /// Rows with a pitch (`strided::scan` asks for them where the plan takes them).
    pub(crate) pitches: RowPitches,
}

impl ScanIo {
    /// Input and output addresses, unsegmented.
    pub fn new(input: u64, output: u64) -> ScanIo {
        ScanIo {
            input,
            output,
            ..Default::default()
        }
    }
    /// With the segment flags or keys at `segments`.
    pub fn with_segments(self, segments: u64) -> ScanIo {
        ScanIo { segments, ..self }
    }
    /// With the initial state read from, and the total written to, memory.
    pub fn with_carries(self, carries: Carries) -> ScanIo {
        ScanIo { carries, ..self }
    }
}

/// A validated scan of `n` elements with one operator (built-in or user-defined), bound
/// to the context that made it ([`Context::plan`], `Operator::plan`).
pub struct ScanPlan {
    operator: PlanOperator,
    n: u64,
    shape: ScanShape,
    algorithm: Algorithm,
    reason: ChoiceReason,
    gpu: Option<GpuPlan>,
    /// Last, so it drops last: while the context lives its device holds the plan's
    /// modules too, and unloads them itself with its context entered (a module unloaded
    /// by the plan's drop would leave the caller's thread on scanrt's context).
    ctx: Context,
}

/// The operator a plan scans with. Built-in operators are held by value, so that a
/// plan (one per call of the plain entry points) allocates nothing.
pub(crate) enum PlanOperator {
    Builtin(BuiltinOperator),
    User(Arc<dyn OperatorModel>),
}

impl PlanOperator {
    fn model(&self) -> &dyn OperatorModel {
        match self {
            PlanOperator::Builtin(op) => op,
            PlanOperator::User(op) => &**op,
        }
    }
}

/// What a GPU plan chose.
struct GpuPlan {
    kernels: Arc<ScanKernels>,
    /// Tiles of each kernel of the set, and the workspace that serves all of them.
    tiles: TileCounts,
    /// Launch flags that do not depend on the addresses.
    flags: u32,
}

impl ScanPlan {
    /// Validates the shape, chooses the algorithm and, on a GPU, loads the kernel set
    /// (compiling it unless a cache holds it) and sizes the workspace.
    pub(crate) fn new(ctx: &Context, operator: PlanOperator, n: u64, shape: ScanShape) -> Result<ScanPlan> {
        let model = operator.model();
        validate_shape(model, n, &shape)?;
        let (algorithm, reason, gpu) = match ctx.engine() {
            Engine::Host => (Algorithm::Host, ChoiceReason::HostBackend, None),
            Engine::Gpu(engine) => {
                let (algorithm, reason) =
                    choose_algorithm(shape.algorithm, shape.deterministic, model.order_sensitive());
                let kernels = model.kernels(engine, &shape, algorithm, n)?;
                // The fixed-order algorithms' association order may depend on n alone.
                let fixed_order = algorithm != Algorithm::SinglePass;
                let plan = GpuPlan {
                    tiles: TileCounts::new(&kernels, n, model.state_bytes(), fixed_order)?,
                    kernels,
                    flags: shape_flags(&shape, algorithm),
                };
                (algorithm, reason, Some(plan))
            }
        };
        Ok(ScanPlan {
            ctx: ctx.clone(),
            operator,
            n,
            shape,
            algorithm,
            reason,
            gpu,
        })
    }

    /// Bytes of workspace an execution with a caller's workspace needs (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.gpu.as_ref().map_or(0, |g| g.tiles.workspace_bytes())
    }

    /// Where the plan runs, which algorithm, and why.
    pub fn info(&self) -> ScanInfo {
        ScanInfo {
            backend: if self.gpu.is_some() {
                Backend::Gpu
            } else {
                Backend::Host
            },
            algorithm: self.algorithm,
            reason: self.reason,
        }
    }

    /// Runs the plan on `io`'s addresses, asynchronously on `stream` for the GPU. Scratch
    /// comes from `workspace` when given (see [`Context::init_workspace`]), else from the
    /// context's per-stream pool (or, inside a stream capture, from the graph). Bad
    /// addresses return an error before anything is written. A plan of an operator with
    /// several arrays runs with [`ScanPlan::execute_arrays`].
    ///
    /// # Safety
    /// On the host backend the addresses must be valid for `n` elements (and the segment
    /// data). On a GPU the driver checks that they are device memory large enough, but
    /// they must stay allocated until the scan completes on the stream.
    pub unsafe fn execute(&self, stream: &Stream, io: &ScanIo, workspace: Option<Workspace>) -> Result<ScanInfo> {
        let (inputs, outputs) = ([io.input], [io.output]);
        let arrays = ScanArrays {
            segments: io.segments,
            known_arrays: io.known_buffers,
            known_segments: io.known_segments,
            pitches: io.pitches,
            ..ScanArrays::new(&inputs, &outputs, io.carries)
        };
        self.run(stream, &arrays, workspace)
    }

    /// Runs the plan of a user-defined operator (`Operator::plan`) on its arrays: `inputs`
    /// are the load's input arrays in order (one array of states without a load),
    /// `outputs` the store's (one array of states without a store), `segments` the
    /// segment data of a segmented scan (0 otherwise), as `Operator::scan_raw` takes them.
    /// A plan made once runs on any arrays of its length.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`].
    pub unsafe fn execute_arrays(
        &self,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        segments: u64,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        self.execute_carried(stream, inputs, outputs, segments, Carries::default(), workspace)
    }

    /// [`ScanPlan::execute_arrays`] with the initial state read from, and the total
    /// written to, device memory (`carries`; host memory on the host backend).
    ///
    /// # Safety
    /// As [`ScanPlan::execute`]; the carries must stay allocated until the scan completes.
    pub unsafe fn execute_carried(
        &self,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        segments: u64,
        carries: Carries,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        let arrays = ScanArrays {
            segments,
            ..ScanArrays::new(inputs, outputs, carries)
        };
        self.run(stream, &arrays, workspace)
    }

    /// [`ScanPlan::execute_carried`] on arrays and carries whose ranges were checked for
    /// this plan ([`ScanPlan::check_arrays`]) or that scanrt allocated: the driver is not
    /// asked about them again (a scan across GPUs runs several plans on the same arrays).
    /// The carry in is the fold of `carry_in_states` states (`ScanArrays::carry_in_states`).
    ///
    /// # Safety
    /// As [`ScanPlan::execute`], and the arrays hold the plan's `n` elements.
    #[cfg(feature = "nccl")]
    pub(crate) unsafe fn execute_known(
        &self,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        carries: Carries,
        carry_in_states: u32,
    ) -> Result<ScanInfo> {
        // A scan of nothing copies its carry in to its total; a fold has no such copy.
        debug_assert!(carry_in_states <= 1 || carries.carry_out == 0);
        let arrays = ScanArrays {
            known_arrays: true,
            known_carries: true,
            carry_in_states,
            ..ScanArrays::new(inputs, outputs, carries)
        };
        self.run(stream, &arrays, None)
    }

    /// [`ScanPlan::execute`] on any number of arrays.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`].
    pub(crate) unsafe fn run(
        &self,
        stream: &Stream,
        arrays: &ScanArrays,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        self.ctx.check_stream_owner(stream)?;
        let model = self.operator.model();
        validate_addresses(model, arrays, self.n, &self.shape)?;
        match (self.ctx.engine(), &self.gpu) {
            (Engine::Gpu(engine), Some(plan)) => self.run_gpu(engine, plan, stream, arrays, workspace)?,
            _ => {
                check_overlaps(model, arrays, self.n, &self.shape)?;
                if per_segment_carries(&self.shape, arrays.carries) {
                    host_segments::scan_segments(model, arrays, self.n, &self.shape)?;
                    return Ok(self.info());
                }
                let Carries { carry_in, carry_out } = arrays.carries;
                debug_assert!(arrays.carry_in_states <= 1, "folded carries are GPU-only");
                let mut shape = self.shape;
                if carry_in != 0 {
                    // SAFETY: the caller's contract: host addresses valid for one state.
                    let bytes = std::slice::from_raw_parts(carry_in as *const u8, model.state_bytes());
                    shape.init = Some(StateBytes::from_bytes(bytes));
                }
                let total = model.scan_on_host(arrays, self.n, &shape)?;
                if carry_out != 0 {
                    // SAFETY: as above; checked not to overlap the arrays.
                    let bytes = total.bytes();
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), carry_out as *mut u8, model.state_bytes());
                }
            }
        }
        Ok(self.info())
    }

    unsafe fn run_gpu(
        &self,
        engine: &GpuEngine,
        plan: &GpuPlan,
        stream: &Stream,
        arrays: &ScanArrays,
        workspace: Option<Workspace>,
    ) -> Result<()> {
        let (model, n, shape) = (self.operator.model(), self.n, &self.shape);
        let dev = &engine.device;
        let (_current, target) = dev.prepare_launch(stream.raw() as CUstream, stream.verified())?;
        if n == 0 && !arrays.carries.any() {
            return Ok(());
        }
        check_device_arrays(dev, model, arrays, n, shape)?;
        if n == 0 && !per_segment_carries(shape, arrays.carries) {
            return carry_empty_scan(model, shape, arrays.carries, target.stream);
        }
        self.launch_checked(dev, plan, &target, arrays, workspace)
    }

    /// Whether the plan's kernels read rows with a pitch: a built-in scan of rows, single
    /// pass, on the GPU, that the bulk-copy kernel runs (the only one that reads them).
    /// Deterministic scans keep one kernel, the strided one, whatever the alignment.
    pub(crate) fn takes_pitched_rows(&self) -> bool {
        // Plain arrays only: a widening or narrowing scan (half types, u32 into u64) reads
        // through a transform's sources, which take no pitch.
        matches!(&self.operator, PlanOperator::Builtin(b) if b.types.one_type())
            && matches!(self.shape.segments, Segments::Rows(_))
            && self.algorithm == Algorithm::SinglePass
            && self.gpu.as_ref().is_some_and(|g| bulk_takes(&g.kernels, &g.tiles))
    }

    /// Bytes of the state the plan's scan carries.
    #[cfg(feature = "nccl")]
    pub(crate) fn state_bytes(&self) -> usize {
        self.operator.model().state_bytes()
    }

    /// Every check [`ScanPlan::execute_carried`] makes of its arrays, without running:
    /// what a scan across GPUs asks before its first collective.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`].
    #[cfg(feature = "nccl")]
    pub(crate) unsafe fn check_arrays(
        &self,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        carries: Carries,
    ) -> Result<()> {
        self.ctx.check_stream_owner(stream)?;
        let arrays = ScanArrays::new(inputs, outputs, carries);
        let model = self.operator.model();
        validate_addresses(model, &arrays, self.n, &self.shape)?;
        match (self.ctx.engine(), &self.gpu) {
            (Engine::Gpu(engine), Some(_)) => {
                let dev = &engine.device;
                let _current = dev.enter()?;
                if !stream.verified() {
                    dev.check_stream(stream.raw() as CUstream)?;
                }
                check_device_arrays(dev, model, &arrays, self.n, &self.shape)
            }
            _ => check_overlaps(model, &arrays, self.n, &self.shape),
        }
    }

    /// Launches the plan's kernels on checked arrays.
    unsafe fn launch_checked(
        &self,
        dev: &GpuDevice,
        plan: &GpuPlan,
        target: &LaunchTarget,
        arrays: &ScanArrays,
        workspace: Option<Workspace>,
    ) -> Result<()> {
        let (model, n, shape) = (self.operator.model(), self.n, &self.shape);
        let raw_stream = target.stream;
        let Carries { carry_in, carry_out } = arrays.carries;
        let init = shape.init.unwrap_or_default();
        let mut flags = plan.flags
            | address_flags(arrays, model, n, shape)
            | carry_flags(carry_in, arrays.carry_in_states, shape.direction);
        // Carries of a scan by offsets are one per segment (`checks::check_carries`).
        let per_segment = per_segment_carries(shape, arrays.carries);
        if per_segment {
            flags |= contract::FLAG_SEGMENT_CARRIES;
        }
        let init_bits = if carry_in != 0 { carry_in } else { init.words[0] };
        let offset_heads = match shape.segments {
            Segments::Offsets { dtype, count } => Some(OffsetHeads::queue(
                dev,
                &plan.kernels,
                dtype,
                count,
                arrays.segments,
                n,
                per_segment.then_some(SegmentCarryParams {
                    flags,
                    init_bits,
                    carry_out,
                    init,
                }),
                raw_stream,
            )?),
            _ => None,
        };
        if n == 0 {
            // Only the prepass had anything to write: the totals of empty segments. No scan
            // launch follows to have a graph capturing it keep its kernels, so it is done here.
            let Some(heads) = offset_heads else { return Ok(()) };
            let kept = launch_workspace::keep_alive_if_captured(dev, target, plan.kernels.clone());
            return kept.and(heads.release(dev, raw_stream));
        }
        let scan = ScanParams {
            input: arrays.inputs[0],
            output: arrays.outputs[0],
            heads: offset_heads
                .as_ref()
                .map_or(segment_param(&shape.segments, arrays.segments), |h| h.bits),
            report: dev.faults.device,
            n: n as i64,
            init_bits,
            carry_out,
            in_pitch: arrays.pitches.input as i64,
            out_pitch: arrays.pitches.output as i64,
            flags,
            ..Default::default()
        };
        let launched = self.launch_params(dev, plan, target, scan, arrays, false, workspace);
        match offset_heads {
            Some(heads) => launched.and(heads.release(dev, raw_stream)),
            None => launched,
        }
    }

    /// Queues the plan's kernels (all of them, or the reduction alone) with `scan` and, for
    /// a user-defined operator, its further arrays and initial state from `arrays`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_params(
        &self,
        dev: &GpuDevice,
        plan: &GpuPlan,
        target: &LaunchTarget,
        mut scan: ScanParams,
        arrays: &ScanArrays,
        reduce_only: bool,
        workspace: Option<Workspace>,
    ) -> Result<()> {
        let model = self.operator.model();
        let launch = KernelLaunch {
            kernels: &plan.kernels,
            algorithm: self.algorithm,
            tiles: &plan.tiles,
            label: model.label(),
            n: self.n,
            reduce_only,
        };
        // The parameter buffer is what the model's kernels were compiled for, with the
        // addresses checked by the caller.
        if model.takes_operator_params() {
            let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            let mut params = OperatorLaunch {
                scan,
                operator: OperatorParams {
                    input1: at(arrays.inputs, 1),
                    input2: at(arrays.inputs, 2),
                    input3: at(arrays.inputs, 3),
                    output1: at(arrays.outputs, 1),
                    init: self.shape.init.unwrap_or_default(),
                },
            };
            launch_kernels(dev, &launch, target, &mut params, workspace)
        } else {
            launch_kernels(dev, &launch, target, &mut scan, workspace)
        }
    }
}

#[cfg(test)]
mod tests;
