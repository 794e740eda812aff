//! The strided scan's kernels: one translation unit per (types, operator, direction)
//! holding a kernel per strip width, and the loaded kernels of a device.

use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::kernels::{KernelCoverage, KernelFamily, KERNEL_HEADERS};
use crate::runtime::device::{GpuDevice, LoadedKernel};
use crate::runtime::nvrtc::KernelSource;
use crate::scan::translation_unit::{builtin_op_definitions, builtin_types_and_ops};
use crate::tables::{Direction, Op};
use crate::types::ScanTypes;

/// Threads per block of every strided kernel.
pub(crate) const THREADS: u32 = 256;
/// Strip widths (columns per tile), one kernel each: the narrowest one that holds a
/// view's columns is launched, 32 for 32 columns and more.
pub(crate) const WIDTHS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// The widest state (user-defined operators) the strided kernels take: a tile of states,
/// its warps' totals and the look-back's fold share 48 KiB of static shared memory, about
/// 912 states at strips of 16 columns (52 bytes would leave no room; 56 does not fit).
pub(crate) const MAX_STATE_BYTES: usize = 48;

/// The tile shape of the strided kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StridedShape {
    /// Rows each thread holds.
    pub items: u32,
    /// Blocks per SM the kernels are compiled for (one block per tile: the SM's resident
    /// blocks stream their tiles while one of them waits).
    pub min_blocks_per_sm: u32,
    /// Tiles each polling thread of the look-back reads per round trip.
    pub window: u32,
    /// Below this many chains (strips times batches) the whole block walks the look-back
    /// (up to 32 threads on each column's chain), from there on a lane per column, as
    /// deterministic scans always do (by anchors).
    pub lane_wise_chains: u32,
    /// The deterministic mode's anchor stride, in tiles of a chain: each tile waits for
    /// the anchor before it and folds the aggregates after it, one lane's polls.
    pub anchors: u32,
    /// Polls before a waiting look-back sleeps, and its sleep (ns): the whole block (or a
    /// warp) polls, so it sleeps early and long, leaving the SM's issue slots to the
    /// blocks that stream.
    pub spin_before_sleep: u32,
    pub sleep_ns: u32,
}

/// The tile shape for accumulators (or user-defined states) of `bytes`: 64 bytes of rows
/// per thread (16 KiB tiles), 4 blocks per SM, polled 2 tiles deep, deterministic anchors
/// 4 tiles apart, a lane per column's chain from 32 chains on (fewer chains: the whole
/// block walks). Every architecture takes it until a row of its own is measured.
/// Provenance: [`SHAPE_PROVENANCE`]. Bound: the look-back's round trips along each
/// column's chain.
const SHAPE_PROVENANCE: &str = "H200, bench_compare --shapes with SCANRT_STRIDED_OVERRIDE, alternating runs (f32 and f64 columns of [2^20, 2], [2^16, 64], [2^14, 1024] and 8192^2, the f32 recurrence)";
const SUMMED_AREA_PROVENANCE: &str =
    "H200, bench_compare --shapes with SCANRT_STRIDED_OVERRIDE (summed-area table of f32 8192 x 8192)";

pub(crate) fn shape_of(bytes: usize) -> StridedShape {
    let regular = StridedShape {
        items: (64 / bytes.max(1) as u32).clamp(1, 16),
        min_blocks_per_sm: 4,
        window: 2,
        anchors: 4,
        lane_wise_chains: 32,
        spin_before_sleep: 2,
        sleep_ns: 100,
    };
    #[cfg(feature = "experiments")]
    if let Some(v) = experiments::shape() {
        return StridedShape {
            items: if bytes >= 8 { v[1] } else { v[0] },
            min_blocks_per_sm: v[2],
            window: v[3],
            anchors: regular.anchors,
            lane_wise_chains: v.get(6).copied().unwrap_or(regular.lane_wise_chains),
            spin_before_sleep: v[4],
            sleep_ns: v[5],
        };
    }
    regular
}

/// Tuning experiments (cargo feature `experiments`): `SCANRT_STRIDED_OVERRIDE=
/// items_4byte:items_8byte:min_blocks:window:spin:sleep_ns[:lane_wise_chains]` replaces
/// the strided kernels' shape.
#[cfg(feature = "experiments")]
mod experiments {
    static SHAPE: once_cell::sync::Lazy<Option<Vec<u32>>> = once_cell::sync::Lazy::new(|| {
        crate::kernels::experiment_numbers("SCANRT_STRIDED_OVERRIDE").filter(|v| v.len() == 6 || v.len() == 7)
    });
    pub(super) fn shape() -> Option<Vec<u32>> {
        SHAPE.clone()
    }
}

/// The tile shape of the summed-area tables' kernels: the scan's, at 5 blocks per SM for
/// 4-byte accumulators. Provenance: [`SUMMED_AREA_PROVENANCE`]. Bound: tables wait on
/// tiles about a diagonal back, whose neighbours are often still loading.
pub(crate) fn summed_area_shape_of(bytes: usize) -> StridedShape {
    let scan = shape_of(bytes);
    #[cfg(feature = "experiments")]
    if experiments::shape().is_some() {
        return scan;
    }
    StridedShape {
        window: 2,
        min_blocks_per_sm: if bytes <= 4 { 5 } else { scan.min_blocks_per_sm },
        ..scan
    }
}

/// The strip width for `columns` adjacent columns.
pub(crate) fn width_for(columns: u64) -> u32 {
    WIDTHS.into_iter().find(|&w| w as u64 >= columns).unwrap_or(32)
}

/// Rows of a tile in the kernel of strip width `width` for accumulators of `bytes`.
pub(crate) fn tile_rows(bytes: usize, width: u32) -> u64 {
    (THREADS / width * shape_of(bytes).items) as u64
}

/// One strided kernel set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StridedSpec {
    pub types: ScanTypes,
    pub op: Op,
    pub direction: Direction,
    /// The kernels build summed-area tables (inclusive, forward) instead of scanning.
    pub summed_area: bool,
}

fn entry(width: u32) -> String {
    format!("scanrt_strided_w{width}")
}

/// What a strided translation unit instantiates its kernels with: the definitions of
/// `struct Op` and the types they name, the source and destination (types and the
/// expressions that make them from the parameters), parameters after
/// `SCANRT_STRIDED_PARAMS`, and the expression of the initial value's argument.
pub(crate) struct StridedUnit<'a> {
    pub definitions: &'a str,
    pub source_type: &'a str,
    pub source: &'a str,
    pub destination_type: &'a str,
    pub destination: &'a str,
    pub extra_params: &'a str,
    pub init: &'a str,
    /// Summed-area tables instead of scans (built-in operators, forward).
    pub summed_area: bool,
}

impl StridedUnit<'_> {
    /// The unit's source: one extern "C" kernel per strip width, in tiles for
    /// accumulators of `bytes`.
    pub fn source(&self, name: String, bytes: usize, direction: Direction) -> KernelSource {
        let reverse = direction == Direction::Backward;
        let shape = if self.summed_area {
            summed_area_shape_of(bytes)
        } else {
            shape_of(bytes)
        };
        let StridedShape {
            items,
            min_blocks_per_sm,
            window,
            anchors,
            lane_wise_chains,
            spin_before_sleep,
            sleep_ns,
        } = shape;
        let StridedUnit {
            definitions,
            source_type,
            source,
            destination_type,
            destination,
            extra_params,
            init,
            summed_area,
        } = self;
        let mut text = format!(
            "#include \"device/strided_scan.cuh\"\n{definitions}typedef Op::T Acc;\ntypedef {source_type} Src;\ntypedef {destination_type} Dst;\n"
        );
        for w in WIDTHS {
            let entry = entry(w);
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({THREADS}, {min_blocks_per_sm}) {entry}(SCANRT_STRIDED_PARAMS{extra_params}) {{
    strided_scan<Op, Src, Dst, {w}, {THREADS}, {items}, {window}, {anchors}, {lane_wise_chains}, {spin_before_sleep}, {sleep_ns}, {reverse}, {summed_area}>(
        {source}, {destination}, in_batch_stride, in_row_stride, out_batch_stride, out_row_stride, in_column_stride,
        out_column_stride, batches, len,
        columns, {init}, carry_out, carry_batch_stride, carry_column_stride, flags, (void*)workspace, status_capacity,
        FaultSink{{(FaultReport*)report, call}});
}}
"#
            );
        }
        KernelSource {
            name: format!("{name} {shape:?}"),
            text,
            headers: KERNEL_HEADERS,
        }
    }
}

impl StridedSpec {
    /// The translation unit: the operator, and one extern "C" kernel per strip width.
    pub fn source(&self) -> KernelSource {
        let definitions = builtin_op_definitions(self.types, self.op, "");
        StridedUnit {
            definitions: &definitions,
            source_type: "const In*",
            source: "(const In*)input",
            destination_type: "Out*",
            destination: "(Out*)output",
            extra_params: "",
            init: "init_bits",
            summed_area: self.summed_area,
        }
        .source(
            format!("strided scan {self:?}"),
            self.types.accumulator.size(),
            self.direction,
        )
    }
}

/// A loaded strided kernel set: one kernel per strip width.
pub(crate) struct StridedKernelSet {
    kernels: Vec<LoadedKernel>,
    _module: Arc<CudaModule>,
}

impl StridedKernelSet {
    /// Loads the set compiled from `source` (a pack, the disk cache or NVRTC): a user
    /// operator's (built-in sets are `StridedFamily`'s).
    pub fn load(dev: &GpuDevice, source: &KernelSource) -> Result<Arc<StridedKernelSet>> {
        let _current = dev.enter()?;
        let module = dev.module(source)?;
        StridedKernelSet::of_module(dev, module).map(Arc::new)
    }

    /// The set's kernels in `module`. The caller has entered the device's context.
    fn of_module(dev: &GpuDevice, module: Arc<CudaModule>) -> Result<StridedKernelSet> {
        let kernels: Vec<LoadedKernel> = WIDTHS
            .into_iter()
            .map(|w| dev.kernel(&module, &entry(w), THREADS, 0))
            .collect::<Result<_>>()?;
        for (w, k) in WIDTHS.iter().zip(&kernels) {
            log::debug!(
                "strided kernel of {w} columns: {} resident blocks, {} registers, {} B local",
                k.resident_blocks,
                k.function.num_regs().unwrap_or(-1),
                k.function.local_size_bytes().unwrap_or(-1)
            );
        }
        Ok(StridedKernelSet {
            kernels,
            _module: module,
        })
    }

    /// The kernel of strip width `width` (one of `WIDTHS`).
    pub fn kernel(&self, width: u32) -> &LoadedKernel {
        let i = WIDTHS
            .iter()
            .position(|&w| w == width)
            .expect("widths come from WIDTHS");
        &self.kernels[i]
    }
}

/// The strided scan's kernel sets of built-in operators: a kernel per strip width.
pub(crate) struct StridedFamily;

impl KernelFamily for StridedFamily {
    type Spec = StridedSpec;
    type Set = StridedKernelSet;
    const NAME: &'static str = "strided scan";

    fn built_in(_arch: i32, coverage: KernelCoverage) -> Vec<StridedSpec> {
        built_in_strided_specs(coverage)
    }

    fn source(spec: &StridedSpec, _max_shared_per_block: u32) -> KernelSource {
        spec.source()
    }

    fn tuning_provenance(_arch: i32) -> Vec<&'static str> {
        vec![SHAPE_PROVENANCE, SUMMED_AREA_PROVENANCE]
    }

    fn load(dev: &GpuDevice, _spec: &StridedSpec, module: Arc<CudaModule>) -> Result<StridedKernelSet> {
        StridedKernelSet::of_module(dev, module)
    }
}

/// The built-in strided kernel sets that `coverage` asks for: the scan's type pairs and
/// wider accumulators, every operator they take, scans in both directions and
/// summed-area tables.
fn built_in_strided_specs(coverage: KernelCoverage) -> Vec<StridedSpec> {
    let variants = [
        (Direction::Forward, false),
        (Direction::Backward, false),
        (Direction::Forward, true),
    ];
    let mut all = Vec::new();
    for (index, (types, op)) in builtin_types_and_ops().enumerate() {
        for (variant, &(direction, summed_area)) in variants.iter().enumerate() {
            if coverage.keeps(index, variant, variants.len()) {
                all.push(StridedSpec {
                    types,
                    op,
                    direction,
                    summed_area,
                });
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::nvrtc::Nvrtc;
    use crate::types::DType;

    /// Strided kernel sets of 4- and 8-byte accumulators and half types compile for
    /// sm_90, both directions (skipped without NVRTC; every set compiles in
    /// `tests/kernels_compile`).
    #[test]
    fn strided_sets_compile() {
        let Ok(nvrtc) = Nvrtc::load() else {
            eprintln!("skipped: no NVRTC");
            return;
        };
        let target = nvrtc.target_for(90).unwrap();
        for (types, op, direction) in [
            (
                ScanTypes::new(DType::U32, DType::U32, None),
                Op::Sum,
                Direction::Forward,
            ),
            (
                ScanTypes::new(DType::F64, DType::F64, None),
                Op::Max,
                Direction::Backward,
            ),
            (
                ScanTypes::new(DType::F16, DType::F16, None),
                Op::Sum,
                Direction::Forward,
            ),
        ] {
            for summed_area in [false, true] {
                let spec = StridedSpec {
                    types,
                    op,
                    direction,
                    summed_area,
                };
                if let Err(e) = nvrtc.compile(&spec.source(), target) {
                    panic!("{spec:?}: {}", e.message);
                }
            }
        }
    }
}
