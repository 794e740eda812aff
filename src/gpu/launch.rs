//! The GPU half of a scan call: checks that need the driver, then the kernel launches.

use std::ffi::c_void;

use cudarc::driver::sys::{CUdeviceptr, CUstream};

use crate::error::{bail, Result};
use crate::gpu::device::{GpuDevice, ScanModule, SinglePassKernel};
use crate::gpu::driver;
use crate::gpu::tuning::wave_max_tiles;
use crate::gpu::workspace::{self, lookback_bytes, lookback_slots, LOOKBACK_HEADER_BYTES};
use crate::scan::RawScan;
use crate::types::{Algorithm, ChoiceReason, DType, Direction, ScanDesc, Segments};

// Launch flags; the kernels' SCANRT_FLAG_* and SCANRT_HEADS_* (kernels/device/scan_params.cuh,
// kernels/block/tile_heads.cuh).
const FLAG_INCLUSIVE: u32 = 1;
const FLAG_HAS_INIT: u32 = 2;
const FLAG_VECTOR_IN: u32 = 4;
const FLAG_VECTOR_OUT: u32 = 8;
const FLAG_DETERMINISTIC: u32 = 16;
const FLAG_VECTOR_HEADS: u32 = 32;
const HEADS_KIND_SHIFT: u32 = 6;
const HEADS_BYTES: u32 = 0;
const HEADS_BITS: u32 = 1;
const HEADS_KEYS4: u32 = 2;
const HEADS_KEYS8: u32 = 3;

/// A caller-provided workspace: 16-byte aligned, initialised by `Context::init_workspace`
/// before its first use, used by one scan at a time.
#[derive(Debug, Clone, Copy)]
pub struct Workspace {
    pub ptr: u64,
    pub bytes: usize,
}

/// Bytes of workspace a scan of `n` elements needs (0 when it fits in one tile).
pub(crate) fn workspace_bytes(dev: &GpuDevice, req: &RawScan, desc: &ScanDesc) -> usize {
    let spec = dev.specialization(req.input_dtype, req.output_dtype, desc, req.n);
    let tiles = req.n.div_ceil(spec.shape.tile_elems());
    if tiles <= 1 {
        0
    } else {
        lookback_bytes(req.output_dtype.size(), tiles)
    }
}

/// The algorithm a GPU scan runs, and why.
pub(crate) fn choose_algorithm(desc: &ScanDesc, output: DType) -> (Algorithm, ChoiceReason) {
    let fixed_order_needed = desc.deterministic && desc.order_sensitive(output);
    match desc.algorithm {
        // An explicit single pass with `deterministic` still has to keep its promise.
        Algorithm::SinglePass | Algorithm::Auto | Algorithm::Host if fixed_order_needed => {
            (Algorithm::DeterministicSinglePass, ChoiceReason::Deterministic)
        }
        Algorithm::Auto | Algorithm::Host if desc.deterministic => {
            (Algorithm::SinglePass, ChoiceReason::OrderIndependent)
        }
        Algorithm::Auto | Algorithm::Host => (Algorithm::SinglePass, ChoiceReason::Fastest),
        requested => (requested, ChoiceReason::Requested),
    }
}

/// Launch flags for a validated request.
fn launch_flags(req: &RawScan, desc: &ScanDesc, algorithm: Algorithm) -> u32 {
    let mut flags = 0;
    if desc.inclusive {
        flags |= FLAG_INCLUSIVE;
    }
    if desc.init.is_some() {
        flags |= FLAG_HAS_INIT;
    }
    if algorithm == Algorithm::DeterministicSinglePass {
        flags |= FLAG_DETERMINISTIC;
    }
    // Whole tiles are 16-byte aligned when the array's start (forward) or end (backward:
    // tiles are counted from the end) is.
    let aligned = |ptr: u64, elem_bytes: u64| match desc.direction {
        Direction::Forward => ptr % 16 == 0,
        Direction::Backward => (ptr + req.n * elem_bytes) % 16 == 0,
    };
    if aligned(req.input, req.input_dtype.size() as u64) {
        flags |= FLAG_VECTOR_IN;
    }
    if aligned(req.output, req.output_dtype.size() as u64) {
        flags |= FLAG_VECTOR_OUT;
    }
    let kind = match desc.segments {
        Segments::None | Segments::ByteFlags => HEADS_BYTES,
        Segments::BitFlags => HEADS_BITS,
        Segments::Keys(k) if k.size() == 4 => HEADS_KEYS4,
        Segments::Keys(_) => HEADS_KEYS8,
    };
    flags |= kind << HEADS_KIND_SHIFT;
    // Rows of byte flags or keys are read as 16-byte vectors when the tiles' spans are aligned.
    let vector_heads = match desc.segments {
        Segments::ByteFlags => aligned(req.segments, 1),
        Segments::Keys(k) => aligned(req.segments, k.size() as u64),
        Segments::None | Segments::BitFlags => false,
    };
    if vector_heads {
        flags |= FLAG_VECTOR_HEADS;
    }
    flags
}

/// Runs a validated request on `stream`. The caller has entered the device's context.
pub(crate) fn scan(
    dev: &GpuDevice,
    stream: CUstream,
    req: &RawScan,
    desc: &ScanDesc,
    workspace: Option<Workspace>,
) -> Result<(Algorithm, ChoiceReason)> {
    dev.take_fault()?;
    let (algorithm, reason) = choose_algorithm(desc, req.output_dtype);
    if req.n == 0 {
        return Ok((algorithm, reason));
    }
    dev.check_stream(stream)?;
    dev.check_device_range(req.input, req.input_bytes(), "input")?;
    dev.check_device_range(req.output, req.output_bytes(), "output")?;
    if desc.segments != Segments::None {
        dev.check_device_range(req.segments, req.segment_bytes(desc), "segment data")?;
    }
    crate::scan::check_overlaps(req, desc)?;

    let module = dev.module(dev.specialization(req.input_dtype, req.output_dtype, desc, req.n))?;
    let tiles = req.n.div_ceil(module.shape.tile_elems());
    if tiles > i32::MAX as u64 {
        bail!(
            LengthOverflow,
            "n = {} needs {tiles} tiles, more than one launch can address",
            req.n
        );
    }
    let launch = Launch {
        module: &module,
        stream,
        req,
        flags: launch_flags(req, desc, algorithm),
        init_bits: desc.init_bits(req.output_dtype)?.unwrap_or(0),
        tiles,
    };

    if tiles == 1 {
        // One block, no look-back state: the same for every algorithm.
        launch.single_pass(&module.single_pass, 0, 0, 0, 1)?;
        return Ok((algorithm, reason));
    }
    let acc_size = req.output_dtype.size();
    // `_pooled` keeps a pooled workspace from being freed until the launch is queued.
    let (ws, slots, _pooled) = match workspace {
        Some(ws) => {
            workspace::check_caller(dev, ws)?;
            let slots = lookback_slots(acc_size, ws.bytes);
            if slots < tiles {
                bail!(
                    BufferTooSmall,
                    "workspace of {} bytes holds {slots} tiles; this scan needs {} bytes",
                    ws.bytes,
                    lookback_bytes(acc_size, tiles)
                );
            }
            (ws.ptr, slots, None)
        }
        None => match driver::capture_graph(stream)? {
            // A captured scan gets a workspace of its own that the graph keeps alive, so
            // that replays never share one with plain calls or with each other's graphs.
            Some(graph) => {
                let bytes = lookback_bytes(acc_size, tiles);
                let ptr = workspace::for_graph(graph, bytes, module.clone(), dev.faults.clone(), dev.ctx.clone())?;
                (ptr, tiles, None)
            }
            None => {
                let pooled = dev.workspaces.for_stream(stream, acc_size, tiles)?;
                (pooled.ptr, lookback_slots(acc_size, pooled.bytes), Some(pooled))
            }
        },
    };
    let report = dev.faults.device;
    match algorithm {
        Algorithm::Matrix => launch.matrix(ws)?,
        _ => {
            let flags = launch.flags;
            let aligned = flags & FLAG_VECTOR_IN != 0 && flags & FLAG_VECTOR_OUT != 0;
            // A deterministic scan's association order is the tile shape's, so its kernel
            // may depend on n alone, not on alignment or on the SM count that decides what
            // fits in one wave.
            let deterministic = flags & FLAG_DETERMINISTIC != 0;
            let wave_tiles = req.n.div_ceil(module.shape.wave_tile_elems().max(1));
            // Scans whose tiles all fit on the device at once take the one-wave kernel (one
            // block per tile); large ones stream through the bulk-copy kernel where there
            // is one. Both kernels' tiles are at least as large as the register-staged
            // kernel's, so the workspace's slots cover them too.
            let (kernel, kernel_tiles, persistent) = match (&module.single_pass_wave, &module.single_pass_bulk) {
                (Some(wave), _) if aligned && !deterministic && wave_tiles <= wave_max_tiles(wave.resident_blocks) => {
                    (wave, wave_tiles, false)
                }
                (_, Some(bulk)) if tiles >= module.shape.bulk_min_tiles => (
                    bulk,
                    req.n.div_ceil(module.shape.bulk_tile_elems()),
                    module.shape.persistent,
                ),
                _ => (&module.single_pass, tiles, module.shape.persistent),
            };
            let grid = if persistent {
                kernel_tiles.min(kernel.resident_blocks as u64)
            } else {
                kernel_tiles
            };
            launch.single_pass(kernel, ws, slots, report, grid as u32)?
        }
    }
    Ok((algorithm, reason))
}

struct Launch<'a> {
    module: &'a ScanModule,
    stream: CUstream,
    req: &'a RawScan,
    flags: u32,
    init_bits: u64,
    tiles: u64,
}

/// A kernel argument slot for cuLaunchKernel: a pointer to the value.
fn arg<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

impl Launch<'_> {
    fn single_pass(
        &self,
        kernel: &SinglePassKernel,
        workspace: CUdeviceptr,
        slots: u64,
        report: CUdeviceptr,
        grid: u32,
    ) -> Result<()> {
        let (n, slots) = (self.req.n as i64, slots as i64);
        let mut params = [
            arg(&self.req.input),
            arg(&self.req.output),
            arg(&n),
            arg(&self.init_bits),
            arg(&self.flags),
            arg(&self.req.segments),
            arg(&workspace),
            arg(&slots),
            arg(&report),
        ];
        // SAFETY: the parameters match the single-pass kernels' signature (jit.rs) in
        // order and type; pointers were range-checked against their allocations above.
        unsafe {
            driver::launch(
                kernel.function.cu_function(),
                grid,
                kernel.block,
                kernel.shared_bytes,
                self.stream,
                &mut params,
            )
        }
    }

    /// Reduce, scan the tile sums, scan the tiles. The tile sums (accumulators, or
    /// (value, head) pairs of at most 16 bytes for a segmented scan) live in the look-back
    /// workspace's slot area (at least 8 bytes per tile for 4-byte accumulators, 16 for
    /// 8-byte ones), which the last kernel zeroes again.
    fn matrix(&self, workspace: CUdeviceptr) -> Result<()> {
        let scratch: CUdeviceptr = workspace + LOOKBACK_HEADER_BYTES as u64;
        let (n, tiles) = (self.req.n as i64, self.tiles as i64);
        let threads = self.module.shape.threads;
        let grid = self.tiles as u32;
        let mut reduce = [
            arg(&self.req.input),
            arg(&n),
            arg(&scratch),
            arg(&self.init_bits),
            arg(&self.flags),
            arg(&self.req.segments),
        ];
        let mut scan_sums = [arg(&scratch), arg(&tiles), arg(&self.init_bits), arg(&self.flags)];
        let mut scan_tiles = [
            arg(&self.req.input),
            arg(&self.req.output),
            arg(&n),
            arg(&scratch),
            arg(&self.init_bits),
            arg(&self.flags),
            arg(&self.req.segments),
        ];
        // SAFETY: parameter lists match the matrix kernels' signatures (jit.rs); the
        // scratch area holds at least `tiles` accumulators (checked by the caller).
        unsafe {
            driver::launch(
                self.module.matrix_reduce.cu_function(),
                grid,
                threads,
                0,
                self.stream,
                &mut reduce,
            )?;
            driver::launch(
                self.module.matrix_scan_sums.cu_function(),
                1,
                threads,
                0,
                self.stream,
                &mut scan_sums,
            )?;
            driver::launch(
                self.module.matrix_scan_tiles.cu_function(),
                grid,
                threads,
                0,
                self.stream,
                &mut scan_tiles,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Op;

    #[test]
    fn algorithm_choice_and_reason() {
        let sum = ScanDesc::inclusive(Op::Sum);
        use Algorithm::*;
        use ChoiceReason::*;
        assert_eq!(choose_algorithm(&sum, DType::F32), (SinglePass, Fastest));
        assert_eq!(
            choose_algorithm(&sum.deterministic(), DType::F32),
            (DeterministicSinglePass, Deterministic)
        );
        assert_eq!(
            choose_algorithm(&ScanDesc::inclusive(Op::Product).deterministic(), DType::F64),
            (DeterministicSinglePass, Deterministic)
        );
        // Order-independent operators and types keep the regular single pass.
        for (op, dtype) in [(Op::Sum, DType::U32), (Op::Max, DType::F32), (Op::BitXor, DType::I64)] {
            let desc = ScanDesc::inclusive(op).deterministic();
            assert_eq!(choose_algorithm(&desc, dtype), (SinglePass, OrderIndependent));
        }
        // A named algorithm runs as named, unless it would break a determinism promise.
        assert_eq!(
            choose_algorithm(&sum.with_algorithm(Matrix), DType::F32),
            (Matrix, Requested)
        );
        assert_eq!(
            choose_algorithm(&sum.with_algorithm(Matrix).deterministic(), DType::F32),
            (Matrix, Requested)
        );
        assert_eq!(
            choose_algorithm(&sum.with_algorithm(SinglePass).deterministic(), DType::F32),
            (DeterministicSinglePass, Deterministic)
        );
        assert_eq!(
            choose_algorithm(&sum.with_algorithm(DeterministicSinglePass), DType::U32),
            (DeterministicSinglePass, Requested)
        );
    }

    #[test]
    fn vector_flags_follow_the_traversal() {
        let req = |input: u64, output: u64, segments: u64, n: u64| RawScan {
            segments,
            ..RawScan::new(input, DType::U32, output, DType::U32, n)
        };
        let forward = ScanDesc::inclusive(Op::Sum);
        let backward = forward.backward();
        let vec = FLAG_VECTOR_IN | FLAG_VECTOR_OUT;
        // Forward tiles start at the array start; backward tiles end at the array end.
        assert_eq!(
            launch_flags(&req(0x1000, 0x2000, 0, 6), &forward, Algorithm::SinglePass) & vec,
            vec
        );
        assert_eq!(
            launch_flags(&req(0x1000, 0x2000, 0, 6), &backward, Algorithm::SinglePass) & vec,
            0
        );
        assert_eq!(
            launch_flags(&req(0x1008, 0x2008, 0, 6), &backward, Algorithm::SinglePass) & vec,
            vec
        );
        // Byte flags: aligned like the tiles, and their kind in bits 6-7.
        let bytes = forward.segmented(Segments::ByteFlags);
        let f = launch_flags(&req(0x1000, 0x2000, 0x3000, 6), &bytes, Algorithm::SinglePass);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        assert_eq!(f >> HEADS_KIND_SHIFT & 3, HEADS_BYTES);
        let f = launch_flags(
            &req(0x1000, 0x2000, 0x3000, 6),
            &bytes.backward(),
            Algorithm::SinglePass,
        );
        assert_eq!(f & FLAG_VECTOR_HEADS, 0);
        let keys = forward.segmented(Segments::Keys(DType::I64));
        let f = launch_flags(
            &req(0x1000, 0x2000, 0x3000, 6),
            &keys,
            Algorithm::DeterministicSinglePass,
        );
        assert_eq!(f >> HEADS_KIND_SHIFT & 3, HEADS_KEYS8);
        assert_ne!(f & FLAG_DETERMINISTIC, 0);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        // Backward keys: aligned when the end of the key array is (7 * 8 bytes from 0x3008).
        let f = launch_flags(&req(0x1000, 0x2000, 0x3008, 7), &keys.backward(), Algorithm::SinglePass);
        assert_ne!(f & FLAG_VECTOR_HEADS, 0);
        let f = launch_flags(&req(0x1000, 0x2000, 0x3008, 7), &keys, Algorithm::SinglePass);
        assert_eq!(f & FLAG_VECTOR_HEADS, 0);
    }
}
