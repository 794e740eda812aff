//! A scan's plan: validated once, with its algorithm, kernel set, tile count and
//! workspace chosen once; then executed any number of times on any addresses of the
//! planned shape. Every scan entry point (Rust and C) is a plan and an execution.

use std::sync::Arc;

use cudarc::driver::sys::CUstream;

use crate::context::Context;
use crate::contract::{self, ScanParams};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::runtime::calls::CallLabel;
use crate::runtime::device::GpuDevice;
use crate::runtime::driver;
use crate::runtime::graph_workspace;
use crate::runtime::workspace::{lookback_bytes, lookback_slots, Workspace};
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::kernels::{KernelKind, KernelSets, ScanKernels, Specialization};
use crate::scan::tuning::wave_max_tiles;
use crate::scan::{check_overlaps, validate_addresses, validate_shape, RawScan, ScanInfo};
use crate::stream::Stream;
use crate::tables::Backend;
use crate::tables::{Algorithm, ChoiceReason, Direction};
use crate::types::DType;

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
}

/// A validated scan of `n` elements of one type pair as a descriptor says, bound to the
/// context that made it ([`Context::plan`]).
pub struct ScanPlan {
    ctx: Context,
    input: DType,
    output: DType,
    n: u64,
    desc: ScanDesc,
    algorithm: Algorithm,
    reason: ChoiceReason,
    gpu: Option<GpuPlan>,
}

/// What a GPU plan chose.
struct GpuPlan {
    kernels: Arc<ScanKernels>,
    /// Tiles of each kernel of the set, and the workspace that serves all of them.
    tiles: TileCounts,
    init_bits: u64,
    /// Launch flags that do not depend on the addresses.
    flags: u32,
}

/// The algorithm a GPU scan runs, and why: the one `requested` unless a determinism
/// promise on an operator whose result depends on association order (`order_sensitive`)
/// needs the fixed-order look-back.
pub(crate) fn choose_algorithm(
    requested: Algorithm,
    deterministic: bool,
    order_sensitive: bool,
) -> (Algorithm, ChoiceReason) {
    let fixed_order_needed = deterministic && order_sensitive;
    match requested {
        // An explicit single pass with `deterministic` still has to keep its promise.
        Algorithm::SinglePass | Algorithm::Auto | Algorithm::Host if fixed_order_needed => {
            (Algorithm::DeterministicSinglePass, ChoiceReason::Deterministic)
        }
        Algorithm::Auto | Algorithm::Host if deterministic => (Algorithm::SinglePass, ChoiceReason::OrderIndependent),
        Algorithm::Auto | Algorithm::Host => (Algorithm::SinglePass, ChoiceReason::Fastest),
        requested => (requested, ChoiceReason::Requested),
    }
}

/// Launch flags that follow from the descriptor.
pub(crate) fn shape_flags(desc: &ScanDesc, algorithm: Algorithm) -> u32 {
    let mut flags = 0;
    if desc.inclusive {
        flags |= contract::FLAG_INCLUSIVE;
    }
    if desc.init.is_some() {
        flags |= contract::FLAG_HAS_INIT;
    }
    if algorithm == Algorithm::DeterministicSinglePass {
        flags |= contract::FLAG_DETERMINISTIC;
    }
    let kind = match desc.segments {
        Segments::None | Segments::ByteFlags => contract::HEADS_BYTES,
        Segments::BitFlags => contract::HEADS_BITS,
        Segments::Keys(k) if k.size() == 4 => contract::HEADS_KEYS4,
        Segments::Keys(_) => contract::HEADS_KEYS8,
        Segments::Rows(_) => contract::HEADS_ROWS,
    };
    flags | kind << contract::HEADS_KIND_SHIFT
}

/// The kernels' `heads` parameter: the segment data's address, or the row length.
pub(crate) fn segment_param(segments: &Segments, data: u64) -> u64 {
    match segments {
        Segments::Rows(len) => *len,
        _ => data,
    }
}

/// Launch flags that follow from the addresses: whole tiles are 16-byte aligned when the
/// array's start (forward) or end (backward: tiles are counted from the end) is.
fn address_flags(req: &RawScan, desc: &ScanDesc) -> u32 {
    let aligned = |ptr: u64, elem_bytes: u64| match desc.direction {
        Direction::Forward => ptr % 16 == 0,
        Direction::Backward => (ptr + req.n * elem_bytes) % 16 == 0,
    };
    let mut flags = 0;
    if aligned(req.input, req.input_dtype.size() as u64) {
        flags |= contract::FLAG_VECTOR_IN;
    }
    if aligned(req.output, req.output_dtype.size() as u64) {
        flags |= contract::FLAG_VECTOR_OUT;
    }
    // Rows of byte flags or keys are read as 16-byte vectors when the tiles' spans are aligned.
    let vector_heads = match desc.segments {
        Segments::ByteFlags => aligned(req.segments, 1),
        Segments::Keys(k) => aligned(req.segments, k.size() as u64),
        Segments::None | Segments::BitFlags | Segments::Rows(_) => false,
    };
    if vector_heads {
        flags |= contract::FLAG_VECTOR_HEADS;
    }
    flags
}

impl ScanPlan {
    /// Validates the shape, chooses the algorithm and, on a GPU, loads the kernel set
    /// (compiling it unless a cache holds it) and sizes the workspace.
    pub(crate) fn new(ctx: &Context, input: DType, output: DType, n: u64, desc: &ScanDesc) -> Result<ScanPlan> {
        validate_shape(input, output, n, desc)?;
        let (algorithm, reason, gpu) = match ctx.engine() {
            Engine::Host => (Algorithm::Host, ChoiceReason::HostBackend, None),
            Engine::Gpu(engine) => {
                let (algorithm, reason) =
                    choose_algorithm(desc.algorithm, desc.deterministic, desc.order_sensitive(output));
                let dev = &engine.device;
                let kernels = engine
                    .algorithms
                    .get::<KernelSets>()
                    .get(dev, Specialization::for_scan(dev.arch, input, output, desc, n))?;
                let plan = GpuPlan {
                    tiles: TileCounts::new(&kernels, n, output.size())?,
                    kernels,
                    init_bits: desc.init_bits(output)?.unwrap_or(0),
                    flags: shape_flags(desc, algorithm),
                };
                (algorithm, reason, Some(plan))
            }
        };
        Ok(ScanPlan {
            ctx: ctx.clone(),
            input,
            output,
            n,
            desc: *desc,
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
    /// addresses return an error before anything is written.
    ///
    /// # Safety
    /// On the host backend the addresses must be valid for `n` elements (and the segment
    /// data). On a GPU the driver checks that they are device memory large enough, but
    /// they must stay allocated until the scan completes on the stream.
    pub unsafe fn execute(&self, stream: &Stream, io: &ScanIo, workspace: Option<Workspace>) -> Result<ScanInfo> {
        self.ctx.check_stream_owner(stream)?;
        let req = RawScan {
            input: io.input,
            input_dtype: self.input,
            output: io.output,
            output_dtype: self.output,
            n: self.n,
            segments: io.segments,
        };
        validate_addresses(&req, &self.desc)?;
        match (self.ctx.engine(), &self.gpu) {
            (Engine::Gpu(engine), Some(plan)) => self.execute_gpu(engine, plan, stream, io, &req, workspace)?,
            _ => {
                check_overlaps(&req, &self.desc)?;
                crate::scan::host::scan(&req, &self.desc)?;
            }
        }
        Ok(self.info())
    }

    unsafe fn execute_gpu(
        &self,
        engine: &GpuEngine,
        plan: &GpuPlan,
        stream: &Stream,
        io: &ScanIo,
        req: &RawScan,
        workspace: Option<Workspace>,
    ) -> Result<()> {
        let dev = &engine.device;
        let _current = dev.enter()?;
        dev.take_fault()?;
        if self.n == 0 {
            return Ok(());
        }
        let raw_stream = stream.raw() as CUstream;
        if !stream.verified() {
            dev.check_stream(raw_stream)?;
        }
        if !io.known_buffers {
            dev.check_device_range(req.input, req.input_bytes(), "input")?;
            dev.check_device_range(req.output, req.output_bytes(), "output")?;
        }
        if self.desc.segments.has_data() && !io.known_segments {
            dev.check_device_range(req.segments, req.segment_bytes(&self.desc), "segment data")?;
        }
        check_overlaps(req, &self.desc)?;

        let flags = plan.flags | address_flags(req, &self.desc);
        let mut params = ScanParams {
            input: req.input,
            output: req.output,
            heads: segment_param(&self.desc.segments, req.segments),
            report: dev.faults.device,
            n: self.n as i64,
            init_bits: plan.init_bits,
            flags,
            ..Default::default()
        };
        launch_kernels(
            dev,
            &KernelLaunch {
                kernels: &plan.kernels,
                algorithm: self.algorithm,
                tiles: &plan.tiles,
                label: CallLabel::Builtin {
                    op: self.desc.op.describe(),
                    input: self.input.describe(),
                    output: self.output.describe(),
                },
                n: self.n,
            },
            raw_stream,
            &mut params,
            workspace,
        )
    }
}

/// The parameter buffer of a scan kernel: `ScanParams`, or `ScanParams` followed by a
/// user-defined operator's own (`contract::OperatorLaunch`).
pub(crate) trait KernelParams: Copy {
    fn scan(&mut self) -> &mut ScanParams;
}
impl KernelParams for ScanParams {
    fn scan(&mut self) -> &mut ScanParams {
        self
    }
}
impl KernelParams for contract::OperatorLaunch {
    fn scan(&mut self) -> &mut ScanParams {
        &mut self.scan
    }
}

/// How many tiles a scan of `n` elements has on each single-pass kernel of its set, and
/// the look-back slots that serve every one of them. The plan sizes workspaces with it
/// and the launch takes its kernel's tile count from it, so a workspace scanrt sized
/// holds the tiles of whichever kernel runs, whatever the tile shapes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileCounts {
    /// Tiles of the register-staged kernel (also the matrix scan's: same tiles).
    pub register_staged: u64,
    /// Tiles of the one-wave kernel, where the set has one.
    pub wave: Option<u64>,
    /// Tiles of the bulk-copy kernel, where the set has one.
    pub bulk: Option<u64>,
    /// Bytes of the carried value (the status slots' size follows from it).
    pub value_bytes: usize,
}

impl TileCounts {
    /// The counts for a scan of `n` elements on `kernels`, carrying `value_bytes`-byte
    /// values; `LengthOverflow` where a launch could not address the tiles.
    pub fn new(kernels: &ScanKernels, n: u64, value_bytes: usize) -> Result<TileCounts> {
        let shape = &kernels.shape;
        let tiles_of = |elems: u64| n.div_ceil(elems.max(1));
        let counts = TileCounts {
            register_staged: tiles_of(shape.tile_elems()),
            wave: kernels
                .get(KernelKind::SinglePassWave)
                .map(|_| tiles_of(shape.wave_tile_elems())),
            bulk: kernels
                .get(KernelKind::SinglePassBulk)
                .map(|_| tiles_of(shape.bulk_tile_elems())),
            value_bytes,
        };
        // Tile ids and tickets are 32-bit on the device.
        if counts.slots() > i32::MAX as u64 {
            bail!(
                LengthOverflow,
                "n = {n} needs {} tiles, more than one launch can address",
                counts.slots()
            );
        }
        Ok(counts)
    }

    /// Status slots a workspace needs: the most tiles any kernel of the set may draw.
    pub fn slots(&self) -> u64 {
        self.register_staged
            .max(self.wave.unwrap_or(0))
            .max(self.bulk.unwrap_or(0))
    }

    /// Bytes of look-back workspace (0 for a one-tile scan, which needs none).
    pub fn workspace_bytes(&self) -> usize {
        if self.register_staged > 1 {
            lookback_bytes(self.value_bytes, self.slots())
        } else {
            0
        }
    }
}

/// What the launch of a planned scan needs to know.
pub(crate) struct KernelLaunch<'a> {
    pub kernels: &'a Arc<ScanKernels>,
    pub algorithm: Algorithm,
    pub tiles: &'a TileCounts,
    /// What the call scans, as a later fault report names it, and its length.
    pub label: CallLabel,
    pub n: u64,
}

/// Launches a scan whose addresses are checked and whose `params` are filled in except for
/// the workspace: picks the workspace (the caller's, the graph's or the stream's pooled
/// one) and the kernel, and queues it on `raw_stream`. A workspace too small for the
/// kernel is refused here, before anything is queued.
///
/// # Safety
/// `params` must be what `launch.kernels` were compiled for, with valid addresses.
pub(crate) unsafe fn launch_kernels<P: KernelParams>(
    dev: &GpuDevice,
    launch: &KernelLaunch,
    raw_stream: CUstream,
    params: &mut P,
    workspace: Option<Workspace>,
) -> Result<()> {
    let kernels = launch.kernels;
    let tiles = launch.tiles;
    let flags = params.scan().flags;
    let single_pass = kernels.get(KernelKind::SinglePass).expect("every kernel set has one");
    if tiles.register_staged == 1 {
        // One block, no look-back state: the same for every algorithm.
        return single_pass.launch(1, raw_stream, params);
    }

    let acc_size = tiles.value_bytes;
    // `_pooled` keeps a pooled workspace from being freed until the launch is queued.
    let (ws, slots, _pooled) = match workspace {
        Some(ws) => {
            dev.check_workspace(ws)?;
            (ws.ptr, lookback_slots(acc_size, ws.bytes), None)
        }
        None => match driver::capture_graph(raw_stream)? {
            // A captured scan gets a workspace of its own that the graph keeps alive,
            // so that replays never share one with plain calls or with each other.
            Some(graph) => {
                let bytes = tiles.workspace_bytes();
                let ptr =
                    graph_workspace::for_graph(graph, bytes, kernels.clone(), dev.faults.clone(), dev.ctx.clone())?;
                (ptr, lookback_slots(acc_size, bytes), None)
            }
            None => {
                let pooled = dev.workspaces.for_stream(raw_stream, acc_size, tiles.slots())?;
                (pooled.ptr, lookback_slots(acc_size, pooled.bytes), Some(pooled))
            }
        },
    };
    if slots < tiles.slots() {
        // Only a caller's workspace can get here: scanrt sizes its own from `tiles`.
        bail!(
            BufferTooSmall,
            "workspace of {} bytes holds {slots} tiles; this scan needs {} bytes ({} tiles)",
            workspace.map_or(0, |w| w.bytes),
            tiles.workspace_bytes(),
            tiles.slots()
        );
    }
    params.scan().workspace = ws;
    params.scan().status_capacity = slots as i64;
    params.scan().call = dev.calls.record(launch.label.clone(), launch.n, raw_stream as usize);

    if launch.algorithm == Algorithm::Matrix {
        // Reduce, scan the tile sums, scan the tiles. The tile sums (accumulators, or
        // (value, head) pairs of at most 16 bytes) live in the slot area (8 or 16
        // bytes per tile), which the last kernel zeroes again.
        let grid = tiles.register_staged as u32;
        for (kind, grid) in [
            (KernelKind::MatrixReduce, grid),
            (KernelKind::MatrixScanSums, 1),
            (KernelKind::MatrixScanTiles, grid),
        ] {
            let kernel = kernels.get(kind).expect("every kernel set has the matrix scan");
            kernel.launch(grid, raw_stream, params)?;
        }
        return Ok(());
    }

    let aligned = flags & contract::FLAG_VECTOR_IN != 0 && flags & contract::FLAG_VECTOR_OUT != 0;
    // A deterministic scan's association order is the tile shape's, so its kernel may
    // depend on n alone, not on alignment or on the SM count that decides what fits
    // in one wave.
    let deterministic = flags & contract::FLAG_DETERMINISTIC != 0;
    // Scans whose tiles all fit on the device at once take the one-wave kernel (one
    // block per tile); large ones stream through the bulk-copy kernel where there is
    // one (from two of its tiles: it has no one-tile path).
    let wave = kernels.get(KernelKind::SinglePassWave).zip(tiles.wave);
    let bulk = kernels.get(KernelKind::SinglePassBulk).zip(tiles.bulk);
    let (kernel, kernel_tiles, persistent) = match (wave, bulk) {
        (Some((wave, wave_tiles)), _)
            if aligned && !deterministic && wave_tiles <= wave_max_tiles(wave.resident_blocks) =>
        {
            (wave, wave_tiles, false)
        }
        (_, Some((bulk, bulk_tiles))) if tiles.register_staged >= kernels.shape.bulk_min_tiles && bulk_tiles >= 2 => {
            (bulk, bulk_tiles, kernels.shape.persistent)
        }
        _ => (single_pass, tiles.register_staged, kernels.shape.persistent),
    };
    let grid = if persistent {
        kernel_tiles.min(kernel.resident_blocks as u64)
    } else {
        kernel_tiles
    };
    kernel.launch(grid as u32, raw_stream, params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::*;
    use crate::tables::Op;

    /// The choice for a built-in scan of `output` values, as `ScanPlan::new` makes it.
    fn choose(desc: &ScanDesc, output: DType) -> (Algorithm, ChoiceReason) {
        choose_algorithm(desc.algorithm, desc.deterministic, desc.order_sensitive(output))
    }

    #[test]
    fn algorithm_choice_and_reason() {
        let sum = ScanDesc::inclusive(Op::Sum);
        use Algorithm::*;
        use ChoiceReason::*;
        assert_eq!(choose(&sum, DType::F32), (SinglePass, Fastest));
        assert_eq!(
            choose(&sum.deterministic(), DType::F32),
            (DeterministicSinglePass, Deterministic)
        );
        assert_eq!(
            choose(&ScanDesc::inclusive(Op::Product).deterministic(), DType::F64),
            (DeterministicSinglePass, Deterministic)
        );
        // Order-independent operators and types keep the regular single pass.
        for (op, dtype) in [(Op::Sum, DType::U32), (Op::Max, DType::F32), (Op::BitXor, DType::I64)] {
            let desc = ScanDesc::inclusive(op).deterministic();
            assert_eq!(choose(&desc, dtype), (SinglePass, OrderIndependent));
        }
        // A named algorithm runs as named, unless it would break a determinism promise.
        assert_eq!(choose(&sum.with_algorithm(Matrix), DType::F32), (Matrix, Requested));
        assert_eq!(
            choose(&sum.with_algorithm(Matrix).deterministic(), DType::F32),
            (Matrix, Requested)
        );
        assert_eq!(
            choose(&sum.with_algorithm(SinglePass).deterministic(), DType::F32),
            (DeterministicSinglePass, Deterministic)
        );
        assert_eq!(
            choose(&sum.with_algorithm(DeterministicSinglePass), DType::U32),
            (DeterministicSinglePass, Requested)
        );
    }

    #[test]
    fn vector_flags_follow_the_traversal() {
        let req = |input: u64, output: u64, segments: u64, n: u64| RawScan {
            segments,
            ..RawScan::new(input, DType::U32, output, DType::U32, n)
        };
        let flags = |r: &RawScan, d: &ScanDesc, a: Algorithm| shape_flags(d, a) | address_flags(r, d);
        let forward = ScanDesc::inclusive(Op::Sum);
        let backward = forward.backward();
        let vec = FLAG_VECTOR_IN | FLAG_VECTOR_OUT;
        // Forward tiles start at the array start; backward tiles end at the array end.
        assert_eq!(
            flags(&req(0x1000, 0x2000, 0, 6), &forward, Algorithm::SinglePass) & vec,
            vec
        );
        assert_eq!(
            flags(&req(0x1000, 0x2000, 0, 6), &backward, Algorithm::SinglePass) & vec,
            0
        );
        assert_eq!(
            flags(&req(0x1008, 0x2008, 0, 6), &backward, Algorithm::SinglePass) & vec,
            vec
        );
        // Byte flags: aligned like the tiles, and their kind in bits 6-7.
        let bytes = forward.segmented(Segments::ByteFlags);
        let f = flags(&req(0x1000, 0x2000, 0x3000, 6), &bytes, Algorithm::SinglePass);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        assert_eq!(f >> HEADS_KIND_SHIFT & HEADS_KIND_MASK, HEADS_BYTES);
        let f = flags(
            &req(0x1000, 0x2000, 0x3000, 6),
            &bytes.backward(),
            Algorithm::SinglePass,
        );
        assert_eq!(f & FLAG_VECTOR_HEADS, 0);
        let keys = forward.segmented(Segments::Keys(DType::I64));
        let f = flags(
            &req(0x1000, 0x2000, 0x3000, 6),
            &keys,
            Algorithm::DeterministicSinglePass,
        );
        assert_eq!(f >> HEADS_KIND_SHIFT & HEADS_KIND_MASK, HEADS_KEYS8);
        assert_ne!(f & FLAG_DETERMINISTIC, 0);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        // Backward keys: aligned when the end of the key array is (7 * 8 bytes from 0x3008).
        let f = flags(&req(0x1000, 0x2000, 0x3008, 7), &keys.backward(), Algorithm::SinglePass);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        let f = flags(&req(0x1000, 0x2000, 0x3008, 7), &keys, Algorithm::SinglePass);
        assert_eq!(f & FLAG_VECTOR_HEADS, 0);
    }
}
