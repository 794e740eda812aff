//! The scan's kernel sets: which kernels a specialisation holds, its source (the
//! translation unit of `scan::translation_unit`, the operator's definition included, so a
//! kernel set is named by its source), and the loaded set.

use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::kernels::{KernelCoverage, KernelFamily, KERNEL_HEADERS};
use crate::runtime::device::{GpuDevice, LoadedKernel};
use crate::runtime::nvrtc::KernelSource;
use crate::scan::desc::ScanDesc;
use crate::scan::tuning::{
    operator_shape, small_scan_shape, takes_small_shape, tile_shape, tile_shape_of_sizes, TileShape,
};
use crate::tables::{Direction, Op, SegmentKind};
use crate::types::ScanTypes;

use crate::scan::translation_unit::{
    builtin_op_definitions, builtin_types_and_ops, lanes_op_definitions, KernelKind, TranslationUnit,
};

/// One kernel set: every kernel for an (input, accumulator and output type, operator,
/// lanes per element, direction, segmented or not, tile shape). Everything else
/// (inclusive, initial value, alignment, determinism, the kind of segment data) is a
/// launch flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Specialization {
    pub types: ScanTypes,
    pub op: Op,
    /// Elements are rows of this many lanes, each its own column (`LanesOp`,
    /// kernels/device/lanes.cuh); 1: plain elements. One type throughout where above 1.
    pub lanes: u32,
    pub direction: Direction,
    pub segmented: bool,
    pub shape: TileShape,
}

impl Specialization {
    /// The kernel set a scan of `n` elements (rows of `lanes`) runs on `sm_<arch>`.
    pub fn for_scan(arch: i32, types: ScanTypes, lanes: u32, desc: &ScanDesc, n: u64) -> Specialization {
        let (regular, small) = Self::all_for_lanes(arch, types, lanes, desc);
        match small {
            Some(small) if takes_small_shape(&regular.shape, &small.shape, n) => small,
            _ => regular,
        }
    }

    /// Every kernel set scans of this kind may run: the regular tile shape and, where
    /// there is one, the small-scan shape.
    pub fn all_for(arch: i32, types: ScanTypes, desc: &ScanDesc) -> (Specialization, Option<Specialization>) {
        Self::all_for_lanes(arch, types, 1, desc)
    }

    /// [`Specialization::all_for`] of rows of `lanes` elements (1: plain elements).
    pub fn all_for_lanes(
        arch: i32,
        types: ScanTypes,
        lanes: u32,
        desc: &ScanDesc,
    ) -> (Specialization, Option<Specialization>) {
        let segmented = desc.segments.kind() != SegmentKind::None;
        // The tile shape follows the types the kernels hold in registers; a converting
        // read is a transform's, and takes a transform's tiles. A row of lanes is one
        // element of its bytes.
        let (input, accumulator) = (types.input, types.accumulator);
        let regular = if lanes > 1 {
            let (i, a) = (input.size() as u32 * lanes, accumulator.size() as u32 * lanes);
            tile_shape_of_sizes(arch, i, a, segmented)
        } else if Self::converts_on_read(types) {
            // A transform's tiles, and the one-wave and cluster kernels of the accumulator:
            // they convert as they read and round as they store.
            let striped = tile_shape(arch, accumulator, accumulator, segmented);
            TileShape {
                wave_threads: striped.wave_threads,
                cluster_threads: striped.cluster_threads,
                ..operator_shape(arch, accumulator.size(), false, segmented, Self::array_bytes(types))
            }
        } else {
            tile_shape(arch, input, accumulator, segmented)
        };
        let spec = |shape| Specialization {
            types,
            op: desc.op,
            lanes,
            direction: desc.direction,
            segmented,
            shape,
        };
        let small = small_scan_shape(&regular, input.size() as u32 * lanes, segmented).map(spec);
        let regular = spec(regular);
        // Small scans of a set with the cluster kernel run on it.
        (regular, small.filter(|_| !regular.has(KernelKind::ClusterScan)))
    }

    /// Whether the kernels read elements through a conversion, as a transform does
    /// (`Op::load`): the half types, which the kernels hold in f32. Their sets are
    /// transforms' sets, bulk-copy kernel included.
    fn converts_on_read(types: ScanTypes) -> bool {
        types.input.is_half()
    }

    /// The larger element of a converting read's two arrays (its bulk-copy buffers hold
    /// the arrays; its f32 states are rescanned from them).
    fn array_bytes(types: ScanTypes) -> usize {
        types.input.size().max(types.output.size())
    }

    /// Bytes per element of the set's bulk-copy buffers.
    fn buffer_element_bytes(&self) -> usize {
        if Self::converts_on_read(self.types) {
            Self::array_bytes(self.types)
        } else {
            self.types.accumulator.size() * self.lanes as usize
        }
    }

    /// Whether a thread's items are whole groups of the one-wave and cluster kernels: one
    /// 16-byte vector of the narrowest of the input, accumulator and output types
    /// (block/striped_tile.cuh).
    fn striped_groups_fit(&self) -> bool {
        let t = self.types;
        let narrowest = t.input.size().min(t.accumulator.size()).min(t.output.size()) * self.lanes as usize;
        (self.shape.items as usize).is_multiple_of(16 / narrowest)
    }

    /// Whether the set holds `kind`.
    pub fn has(&self, kind: KernelKind) -> bool {
        let t = self.types;
        let converts = Self::converts_on_read(t);
        match kind {
            // A bulk copy moves bits: the input must already be the output type, unless
            // the kernels convert it as a transform's.
            KernelKind::SinglePassBulk => self.shape.bulk_buffers > 0 && (converts || t.one_type()),
            KernelKind::SinglePassWave => self.shape.wave_threads > 0 && self.striped_groups_fit(),
            KernelKind::ClusterScan => self.shape.cluster_threads > 0 && self.striped_groups_fit(),
            // Rows of lanes are never segmented by offsets (`scan::strided::lanes`).
            KernelKind::SegmentOffsets => self.segmented && self.lanes == 1,
            _ => true,
        }
    }

    /// The translation unit NVRTC compiles: the layered headers instantiated with
    /// extern "C" entry points (no name mangling), each taking `ScanParams`'s fields.
    pub fn source(&self) -> KernelSource {
        let t = self.types;
        // A wider accumulator is narrowed as results are written, through the
        // destination transforms write through (block/transform_io.cuh).
        let (narrow, destination_type, destination) = if t.narrows() {
            (
                "    static SCANRT_DEVICE void store(T s, Out& y, NoArray&) { y = Out(s); }\n",
                "Scatter<Op, Out, NoArray>",
                "Dst{(Out*)output, (NoArray*)0}",
            )
        } else {
            ("", "Acc*", "(Acc*)output")
        };
        // A converting read gathers the input as a transform does, one array.
        let (load, source_type, source) = if Self::converts_on_read(t) {
            (
                "    static SCANRT_DEVICE T load(long long, In x, NoArray, NoArray, NoArray) { return T(x); }\n",
                "Gather<Op, In, NoArray, NoArray, NoArray>",
                "Src{(const In*)input, (const NoArray*)0, (const NoArray*)0, (const NoArray*)0, 0}",
            )
        } else {
            ("", "const In*", "(const In*)input")
        };
        let definitions = if self.lanes > 1 {
            lanes_op_definitions(t, self.op, self.lanes)
        } else {
            builtin_op_definitions(t, self.op, &format!("{load}{narrow}"))
        };
        let unit = TranslationUnit {
            definitions,
            source_type: source_type.into(),
            source: source.into(),
            destination_type: destination_type.into(),
            destination: destination.into(),
            extra_params: "",
            init: "init_bits",
            kernels: KernelKind::ALL.into_iter().filter(|&k| self.has(k)).collect(),
        };
        // The name says everything that decides the text: it keys the loaded modules.
        KernelSource {
            name: format!("scan {self:?}"),
            text: unit.text(&self.shape, self.direction, self.segmented),
            headers: KERNEL_HEADERS,
        }
    }
}

/// Bytes of the rows of lanes taken as one element (`scan::strided::lanes`): whole
/// 16-byte vectors hold whole rows.
const ROW_BYTES: [u64; 2] = [8, 16];

/// The lane counts rows of `types` take (none where the types differ or widen on read).
pub(crate) fn lane_counts(types: ScanTypes) -> impl Iterator<Item = u32> {
    let size = types.input.size() as u64;
    let takes = types.one_type() && !types.input.is_half();
    ROW_BYTES
        .into_iter()
        .filter(move |&bytes| takes && bytes > size)
        .map(move |bytes| (bytes / size) as u32)
}

/// The built-in kernel sets for `sm_<arch>` that `coverage` asks for: each type pair and
/// operator, both directions, segmented or not (the kind of segment data is a launch
/// flag), in the regular tile shape and, where there is one, the small-scan shape; and
/// the same of rows of lanes, for every one type and lane count they take.
fn built_in_specializations(arch: i32, coverage: KernelCoverage) -> Vec<Specialization> {
    use crate::scan::desc::Segments;
    let variants = [
        (Direction::Forward, Segments::None),
        (Direction::Forward, Segments::ByteFlags),
        (Direction::Backward, Segments::None),
        (Direction::Backward, Segments::ByteFlags),
    ];
    let mut all = Vec::new();
    let with_lanes = builtin_types_and_ops().flat_map(|(types, op)| {
        let lanes = lane_counts(types);
        std::iter::once(1).chain(lanes).map(move |lanes| (types, op, lanes))
    });
    for (index, (types, op, lanes)) in with_lanes.enumerate() {
        for (variant, &(direction, segments)) in variants.iter().enumerate() {
            if !coverage.keeps(index, variant, variants.len()) {
                continue;
            }
            let desc = ScanDesc {
                direction,
                segments,
                ..ScanDesc::inclusive(op)
            };
            let (regular, small) = Specialization::all_for_lanes(arch, types, lanes, &desc);
            all.extend(std::iter::once(regular).chain(small));
        }
    }
    all
}

/// A loaded kernel set.
pub(crate) struct ScanKernels {
    pub shape: TileShape,
    /// The most blocks of the cluster kernel's cluster on this device (0 without one).
    pub cluster_blocks: u32,
    kernels: [Option<LoadedKernel>; KernelKind::ALL.len()],
    _modules: Vec<Arc<CudaModule>>,
}

/// One NVRTC program of a kernel set, and the kernels it holds.
pub(crate) struct Program {
    pub source: KernelSource,
    pub kernels: Vec<KernelKind>,
}

impl ScanKernels {
    /// Loads the kernel set made of `programs`, compiled for `shape`, whose bulk-copy
    /// buffers hold `buffer_element_bytes` per element (the accumulator's size, or a
    /// transform's larger arrays), compiling each or taking it from a pack or the disk
    /// cache. Several programs compile on parallel threads: a set's first compile takes
    /// as long as its longest program. Only loading needs the device's context, so only
    /// this enters it.
    pub fn load(
        dev: &GpuDevice,
        programs: &[Program],
        shape: TileShape,
        buffer_element_bytes: usize,
    ) -> Result<Arc<ScanKernels>> {
        let module = |program: &Program| {
            let _current = dev.enter()?;
            dev.module(&program.source)
        };
        let modules: Vec<Arc<CudaModule>> = match programs {
            [one] => vec![module(one)?],
            _ => std::thread::scope(|scope| {
                let threads: Vec<_> = programs.iter().map(|p| scope.spawn(move || module(p))).collect();
                // A compile thread never panics short of a bug; its panic is passed on.
                threads
                    .into_iter()
                    .map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    .collect::<Result<_>>()
            })?,
        };
        let _current = dev.enter()?;
        let parts: Vec<_> = programs.iter().map(|p| &p.kernels[..]).zip(modules).collect();
        ScanKernels::assemble(dev, parts, shape, buffer_element_bytes).map(Arc::new)
    }

    /// The set of the kernels each module holds (the kinds beside it), with their
    /// occupancy. The caller has entered the device's context.
    fn assemble(
        dev: &GpuDevice,
        parts: Vec<(&[KernelKind], Arc<CudaModule>)>,
        shape: TileShape,
        buffer_element_bytes: usize,
    ) -> Result<ScanKernels> {
        let mut kernels: [Option<LoadedKernel>; KernelKind::ALL.len()] = Default::default();
        for (kinds, module) in &parts {
            for &kind in kinds.iter() {
                let (block, shared_bytes) = kind.launch_shape(&shape, buffer_element_bytes);
                kernels[kind as usize] = Some(dev.kernel(module, kind.entry(), block, shared_bytes)?);
            }
        }
        let cluster_blocks = kernels[KernelKind::ClusterScan as usize]
            .as_ref()
            .map_or(0, |k| k.max_cluster_blocks(shape.cluster_max_blocks));
        log::debug!(
            "kernel set ready: {} kernels with their occupancy, clusters of up to {cluster_blocks} blocks",
            kernels.iter().flatten().count()
        );
        Ok(ScanKernels {
            shape,
            cluster_blocks,
            kernels,
            _modules: parts.into_iter().map(|(_, module)| module).collect(),
        })
    }

    /// The kernel `kind`, where the set has one.
    pub fn get(&self, kind: KernelKind) -> Option<&LoadedKernel> {
        self.kernels[kind as usize].as_ref()
    }
}

/// The flat scan's kernel sets of built-in operators: a set is a specialisation's
/// kernels (single pass, bulk copy, one wave, cluster, matrix scan) in one module. A user
/// operator's sets are made of the same kernels (`ScanKernels::load`), keyed by its object.
pub(crate) struct ScanFamily;

impl KernelFamily for ScanFamily {
    type Spec = Specialization;
    type Set = ScanKernels;
    const NAME: &'static str = "scan";

    fn built_in(arch: i32, coverage: KernelCoverage) -> Vec<Specialization> {
        built_in_specializations(arch, coverage)
    }

    fn source(spec: &Specialization, _max_shared_per_block: u32) -> KernelSource {
        spec.source()
    }

    fn tuning_provenance(arch: i32) -> Vec<&'static str> {
        vec![crate::scan::tuning::provenance(arch)]
    }

    fn load(dev: &GpuDevice, spec: &Specialization, module: Arc<CudaModule>) -> Result<ScanKernels> {
        let kinds: Vec<KernelKind> = KernelKind::ALL.into_iter().filter(|&k| spec.has(k)).collect();
        ScanKernels::assemble(dev, vec![(&kinds, module)], spec.shape, spec.buffer_element_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::nvrtc::Nvrtc;
    use crate::types::DType;

    /// Built-in kernel sets of every kernel kind compile for sm_90: both directions,
    /// segmented or not, 4- and 8-byte states, half types read through a conversion, rows
    /// of 8 and 16 bytes of lanes (skipped without NVRTC; the whole space compiles in
    /// `tests/kernels_compile`).
    #[test]
    fn kernel_sets_of_each_kind_compile() {
        use crate::scan::desc::Segments;
        let Ok(nvrtc) = Nvrtc::load() else {
            eprintln!("skipped: no NVRTC");
            return;
        };
        let target = nvrtc.target_for(90).unwrap();
        for (dtype, lanes, direction, segments) in [
            (DType::U32, 1, Direction::Forward, Segments::None),
            (DType::F64, 1, Direction::Backward, Segments::ByteFlags),
            (DType::F16, 1, Direction::Forward, Segments::None),
            (DType::BF16, 1, Direction::Backward, Segments::ByteFlags),
            (DType::F32, 2, Direction::Forward, Segments::None),
            (DType::I32, 4, Direction::Backward, Segments::Rows(3)),
            (DType::F64, 2, Direction::Backward, Segments::None),
            (DType::U64, 2, Direction::Forward, Segments::Rows(3)),
        ] {
            let desc = ScanDesc {
                direction,
                segments,
                ..ScanDesc::inclusive(Op::Sum)
            };
            let types = ScanTypes::new(dtype, dtype, None);
            let (regular, small) = Specialization::all_for_lanes(90, types, lanes, &desc);
            for spec in std::iter::once(regular).chain(small) {
                if let Err(e) = nvrtc.compile(&spec.source(), target) {
                    panic!("{spec:?}: {}", e.message);
                }
            }
        }
    }
}
