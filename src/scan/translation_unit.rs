//! The CUDA translation unit of a scan kernel set: which kernels a set can hold
//! (`KernelKind`), the definition of a built-in operator (`struct Op`) and the text that
//! instantiates the kernels for a tile shape, direction and segmentation. Built-in sets
//! (`scan::kernels`) and user-defined operators' (`operator::glue`) both write theirs
//! through `TranslationUnit`.

use crate::scan::tuning::TileShape;
use crate::tables::{Direction, Op};
use crate::types::ScanTypes;

/// The kernels of a scan kernel set. Every kernel takes the fields of one
/// `contract::ScanParams` (`SCANRT_SCAN_PARAMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum KernelKind {
    /// The register-staged single pass (every kernel set; the only one-tile path).
    SinglePass,
    /// The bulk-copy single pass for large scans (sm_90+, input type = output type).
    SinglePassBulk,
    /// The one-wave single pass, one block per tile.
    SinglePassWave,
    /// Scans of at most one thread-block cluster of tiles (sm_90+), no workspace.
    ClusterScan,
    /// The matrix scan's three launches.
    MatrixReduce,
    MatrixScanSums,
    MatrixScanTiles,
    /// Segments given by offsets become the bit flags the scans read (segmented sets;
    /// `SegmentOffsetsParams`).
    SegmentOffsets,
}

impl KernelKind {
    pub(crate) const ALL: [KernelKind; 8] = [
        KernelKind::SinglePass,
        KernelKind::SinglePassBulk,
        KernelKind::SinglePassWave,
        KernelKind::ClusterScan,
        KernelKind::MatrixReduce,
        KernelKind::MatrixScanSums,
        KernelKind::MatrixScanTiles,
        KernelKind::SegmentOffsets,
    ];

    /// Threads per block and dynamic shared memory of the kernel in a set of `shape`.
    pub(crate) fn launch_shape(self, s: &TileShape, buffer_element_bytes: usize) -> (u32, u32) {
        match self {
            KernelKind::SinglePass => (s.single_pass_block(), 0),
            KernelKind::SinglePassBulk => (s.single_pass_block(), s.bulk_shared_bytes(buffer_element_bytes)),
            KernelKind::SinglePassWave => (s.wave_threads, 0),
            KernelKind::ClusterScan => (s.cluster_threads, 0),
            KernelKind::SegmentOffsets => (256, 0),
            _ => (s.threads, 0),
        }
    }

    /// The extern "C" entry point.
    pub(crate) fn entry(self) -> &'static str {
        match self {
            KernelKind::SinglePass => "scanrt_single_pass",
            KernelKind::SinglePassBulk => "scanrt_single_pass_bulk",
            KernelKind::SinglePassWave => "scanrt_single_pass_wave",
            KernelKind::ClusterScan => "scanrt_cluster_scan",
            KernelKind::MatrixReduce => "scanrt_matrix_reduce",
            KernelKind::MatrixScanSums => "scanrt_matrix_scan_sums",
            KernelKind::MatrixScanTiles => "scanrt_matrix_scan_tiles",
            KernelKind::SegmentOffsets => "scanrt_segment_offsets",
        }
    }
}

/// The CUDA definitions of a built-in operator on `types`: `In`, `Out` and `struct Op`
/// (`T`, `U`, `COMMUTATIVE`, `identity`, `combine`, then `members`, e.g. a transform's
/// `load` and `store`), as every built-in kernel set's translation unit begins.
pub(crate) fn builtin_op_definitions(types: ScanTypes, op: Op, members: &str) -> String {
    let (i, o) = (types.input.info().cuda, types.output.info().cuda);
    let op = operator_struct("Op", types, op, members);
    format!("typedef {i} In;\ntypedef {o} Out;\n{op}")
}

/// The CUDA definitions of a built-in operator applied lane by lane to rows of `lanes`
/// elements of one type (`types.one_type()`): `In`, `Out` and `Op::T` are rows
/// (`Lanes`, `LanesOp` of kernels/device/lanes.cuh) over the operator on one element,
/// whose initial value starts every lane.
pub(crate) fn lanes_op_definitions(types: ScanTypes, op: Op, lanes: u32) -> String {
    debug_assert!(types.one_type() && lanes > 1);
    let element = operator_struct("ElementOp", types, op, "");
    let e = types.accumulator.info().cuda;
    format!(
        r#"#include "device/lanes.cuh"
{element}typedef Lanes<{e}, {lanes}> In;
typedef In Out;
typedef LanesOp<ElementOp, {lanes}> Op;
SCANRT_LANES_INITIAL_VALUE(Op)
"#
    )
}

/// `struct {name}`: the operator `op` on the accumulator of `types`, then `members`.
fn operator_struct(name: &str, types: ScanTypes, op: Op, members: &str) -> String {
    let a = types.accumulator.info().cuda;
    let identity = match types.narrowed_identity(op) {
        Some(value) => format!("T({value}ll)"),
        None => op.definition().cuda_identity.to_string(),
    };
    let combine = op.definition().cuda_combine;
    format!(
        r#"struct {name} {{
    typedef {a} T;
    typedef Wrapping<T>::U U;
    static const bool COMMUTATIVE = true;
    static SCANRT_DEVICE T identity() {{ return {identity}; }}
    static SCANRT_DEVICE T combine(T a, T b) {{ return {combine}; }}
{members}}};
"#
    )
}

/// Every built-in (types, operator) pair: each type pair and wider accumulator with each
/// operator it takes (the kernel sets packs and the disk cache precompile).
pub(crate) fn builtin_types_and_ops() -> impl Iterator<Item = (ScanTypes, Op)> {
    let pairs = crate::types::TYPE_PAIRS.map(|(input, output)| ScanTypes::new(input, output, None));
    pairs
        .into_iter()
        .chain(crate::types::NARROWING_TYPES)
        .flat_map(|types| {
            Op::ALL
                .into_iter()
                .filter(move |&op| types.check(op).is_ok())
                .map(move |op| (types, op))
        })
}

/// What a kernel set's translation unit is made of beyond its tile shape, direction and
/// segmentation: the operator (`struct Op`), what the kernels read and write, and which
/// optional kernels it has. Built-in operators and user-defined ones (src/operator)
/// differ only here.
pub(crate) struct TranslationUnit {
    /// Defines `struct Op` (`T`, `COMMUTATIVE`, `identity`, `combine`; `load` and
    /// `store` for a transform) and whatever the source and destination types name.
    pub definitions: String,
    /// The kernels' source type (`const In*`, or a transform's `Gather<...>`), and the
    /// expression that makes it from the parameters.
    pub source_type: String,
    pub source: String,
    /// Likewise the destination (`Acc*`, or a transform's `Scatter<...>`).
    pub destination_type: String,
    pub destination: String,
    /// Parameters after `SCANRT_SCAN_PARAMS` (", SCANRT_OPERATOR_PARAMS" or nothing).
    pub extra_params: &'static str,
    /// The expression of the kernels' `init_bits` argument.
    pub init: &'static str,
    /// The kernels the unit holds where the tile shape has them: a built-in set compiles
    /// as one unit; an operator's single pass, as one unit per kernel (src/operator.rs).
    pub kernels: Vec<KernelKind>,
}

impl TranslationUnit {
    /// Whether the unit compiled for `shape`, segmented or not, holds `kind`.
    pub fn has(&self, kind: KernelKind, shape: &TileShape, seg: bool) -> bool {
        self.kernels.contains(&kind)
            && match kind {
                KernelKind::SinglePassBulk => shape.bulk_buffers > 0,
                KernelKind::SinglePassWave => shape.wave_threads > 0,
                KernelKind::ClusterScan => shape.cluster_threads > 0,
                KernelKind::SegmentOffsets => seg,
                _ => true,
            }
    }

    pub fn text(&self, shape: &TileShape, direction: Direction, seg: bool) -> String {
        let TileShape {
            threads,
            items,
            lookback_slots_per_lane: slots,
            spin_before_sleep: spin,
            sleep_ns: sleep,
            min_blocks_per_sm,
            bulk_buffers,
            bulk_items,
            bulk_min_blocks_per_sm,
            wave_threads,
            wave_lookback_slots_per_lane,
            wave_min_blocks_per_sm,
            cluster_threads,
            ..
        } = *shape;
        let TranslationUnit {
            definitions,
            source_type,
            source,
            destination_type,
            destination,
            extra_params,
            init,
            ..
        } = self;
        let reverse = direction == Direction::Backward;
        // Tile sums are scanned in rows short enough for 16-byte segment pairs to fit in
        // static shared memory.
        let sum_items = if seg { 4 } else { items };
        let p = format!("(SCANRT_SCAN_PARAMS{extra_params})");
        let heads = "(const void*)heads";
        let lookback = "(void*)workspace, status_capacity, FaultSink{(FaultReport*)report, call}";
        let scratch = "(ScanrtCarry*)(workspace + sizeof(LookbackHeader))";
        let matrix = self.has(KernelKind::MatrixReduce, shape, seg);
        let matrix_include = if matrix {
            "#include \"device/matrix_scan.cuh\"\n"
        } else {
            ""
        };
        let mut text = format!(
            r#"#include "device/single_pass_scan.cuh"
#include "device/single_pass_bulk.cuh"
#include "device/single_pass_wave.cuh"
#include "device/cluster_scan.cuh"
{matrix_include}{definitions}typedef Op::T Acc;
typedef {source_type} Src;
typedef {destination_type} Dst;
typedef CarryOf<Op, {seg}>::Op_::T ScanrtCarry;
"#
        );
        if self.has(KernelKind::SinglePass, shape, seg) {
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({threads} + 32, {min_blocks_per_sm}) scanrt_single_pass{p} {{
    single_pass_scan<Op, Src, Dst, {threads}, {items}, {slots}, {spin}, {sleep}, {reverse}, {seg}>({source}, {destination}, n, {init}, carry_out, flags, {heads}, {lookback});
}}
"#
            );
        }
        if matrix {
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({threads}) scanrt_matrix_reduce{p} {{
    matrix_reduce<Op, Src, {threads}, {items}, {reverse}, {seg}>({source}, n, {scratch}, {init}, flags, {heads});
}}
extern "C" __global__ void __launch_bounds__({threads}) scanrt_matrix_scan_sums{p} {{
    matrix_scan_sums<Op, {threads}, {sum_items}, {seg}>({scratch}, (n + {threads} * {items} - 1) / ({threads} * {items}), {init}, carry_out, flags);
}}
extern "C" __global__ void __launch_bounds__({threads}) scanrt_matrix_scan_tiles{p} {{
    matrix_scan_tiles<Op, Src, Dst, {threads}, {items}, {reverse}, {seg}>({source}, {destination}, n, {scratch}, {init}, flags, {heads});
}}
"#
            );
        }
        let io = format!("(const In*)input, (Out*)output, n, {init}, carry_out, flags");
        if self.has(KernelKind::SinglePassBulk, shape, seg) {
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({threads} + 32, {bulk_min_blocks_per_sm}) scanrt_single_pass_bulk{p} {{
    single_pass_scan_bulk<Op, Src, Dst, {threads}, {bulk_items}, {bulk_buffers}, {slots}, {spin}, {sleep}, {reverse}, {seg}>({source}, {destination}, n, {init}, carry_out, flags, {heads}, RowPitch{{(long long)heads, in_pitch, out_pitch}}, {lookback});
}}
"#
            );
        }
        if self.has(KernelKind::SinglePassWave, shape, seg) {
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({wave_threads}, {wave_min_blocks_per_sm}) scanrt_single_pass_wave{p} {{
    single_pass_scan_wave<Op, In, Out, {wave_threads}, {items}, {wave_lookback_slots_per_lane}, {spin}, {sleep}, {reverse}, {seg}>({io}, {heads}, {lookback});
}}
"#
            );
        }
        if self.has(KernelKind::ClusterScan, shape, seg) {
            text += &format!(
                r#"extern "C" __global__ void __launch_bounds__({cluster_threads}) scanrt_cluster_scan{p} {{
    cluster_scan<Op, In, Out, {cluster_threads}, {items}, {reverse}, {seg}>({io}, {heads});
}}
"#
            );
        }
        if self.has(KernelKind::SegmentOffsets, shape, seg) {
            text += r#"#include "device/segment_offsets.cuh"
extern "C" __global__ void __launch_bounds__(256) scanrt_segment_offsets(const void* offsets, long long count, long long n, u32* bits, u32 kind, u32 flags, unsigned long long init_bits, unsigned long long carry_out, StateBytes init) {
    offsets_to_head_bits<Op>(offsets, count, n, bits, kind, flags, init_bits, carry_out, init);
}
"#;
        }
        text
    }
}
