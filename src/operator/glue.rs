//! The CUDA side of a user-defined operator: the translation unit that puts the user's
//! source under `#line` directives and wraps it in the `struct Op` the kernels call, the
//! programs of each kernel set, and compiling them without a GPU.

use crate::error::{bail, Result};
use crate::kernels::KERNEL_HEADERS;
use crate::operator::desc::OperatorDesc;
use crate::runtime::nvrtc::KernelSource;
use crate::scan::kernels::Program;
use crate::scan::strided::kernels::{StridedUnit, MAX_STATE_BYTES};
use crate::scan::translation_unit::{KernelKind, TranslationUnit};
use crate::scan::tuning::{operator_shape, TileShape};
use crate::tables::{Algorithm, Direction};
use crate::types::DType;

impl OperatorDesc {
    /// The `struct Op` and types of the operator's translation unit: the user's source
    /// under `#line` directives (so compiler messages cite its own lines), then the glue
    /// the kernels call. The unit holds `kernels` (where the tile shape has them).
    pub(crate) fn unit(&self, kernels: &[KernelKind]) -> TranslationUnit {
        let OperatorDesc {
            name,
            source,
            state_type: state,
            state_size: size,
            state_align: align,
            combine,
            ..
        } = self;
        let words: Vec<String> = self
            .identity
            .chunks(4)
            .map(|w| format!("0x{:08x}u", u32::from_ne_bytes(w.try_into().unwrap())))
            .collect();
        let words = words.join(", ");
        let ([i0, i1, i2, i3], [o0, o1]) = self.array_types();
        let load = self.load.as_ref().map_or(String::new(), |(f, t)| {
            let args = ["x0", "x1", "x2", "x3"][..t.len()].join(", ");
            format!("    static SCANRT_DEVICE T load(long long i, {i0} x0, {i1} x1, {i2} x2, {i3} x3) {{ return ::{f}(i, {args}); }}\n")
        });
        let store = self.store.as_ref().map_or(String::new(), |(f, t)| {
            let args = ["y0", "y1"][..t.len()].join(", ");
            format!("    static SCANRT_DEVICE void store(const T& s, {o0}& y0, {o1}& y1) {{ ::{f}(s, {args}); }}\n")
        });
        // The glue calls the user's functions by their global names (`::f`): a user
        // function named `combine`, `load` or `store` would otherwise resolve to the
        // glue's own member and recurse.
        let definitions = format!(
            r#"#line 1 "{name}"
{source}
#line 1 "scanrt operator glue"
static_assert(sizeof({state}) == {size}, "scanrt: sizeof({state}) differs from the state_size the host declared ({size})");
static_assert(alignof({state}) == {align}, "scanrt: alignof({state}) differs from the state_align the host declared ({align})");
struct Op {{
    typedef {state} T;
    static const bool COMMUTATIVE = false;
    static SCANRT_DEVICE T identity() {{
        const u32 words[] = {{{words}}};
        T t;
        memcpy(&t, words, sizeof(T));
        return t;
    }}
    static SCANRT_DEVICE T combine(T a, T b) {{ return ::{combine}(a, b); }}
{load}{store}}};
typedef {state} In;
typedef {state} Out;
"#
        );
        let (source_type, source) = if self.load.is_some() {
            (
                format!("Gather<Op, {i0}, {i1}, {i2}, {i3}>"),
                format!("Src{{(const {i0}*)input, (const {i1}*)input1, (const {i2}*)input2, (const {i3}*)input3, 0}}"),
            )
        } else {
            ("const In*".into(), "(const In*)input".into())
        };
        let (destination_type, destination) = if self.store.is_some() {
            (
                format!("Scatter<Op, {o0}, {o1}>"),
                format!("Dst{{({o0}*)output, ({o1}*)output1}}"),
            )
        } else {
            ("Acc*".into(), "(Acc*)output".into())
        };
        TranslationUnit {
            definitions,
            source_type,
            source,
            destination_type,
            destination,
            extra_params: ", SCANRT_OPERATOR_PARAMS",
            init: if *size <= 8 {
                "init_bits"
            } else {
                "((flags & FLAG_INIT_IN_MEMORY) ? init_bits : (unsigned long long)&init)"
            },
            kernels: kernels.to_vec(),
        }
    }
}

impl OperatorDesc {
    /// The CUDA types of the load's four input slots and the store's two output slots
    /// (`NoArray` where unused).
    fn array_types(&self) -> ([&'static str; 4], [&'static str; 2]) {
        let cuda = |t: &DType| t.info().cuda;
        let slot = |types: Option<&[DType]>, i: usize| types.and_then(|t| t.get(i)).map_or("NoArray", cuda);
        let (i, o) = (self.input_types(), self.output_types());
        (
            [slot(i, 0), slot(i, 1), slot(i, 2), slot(i, 3)],
            [slot(o, 0), slot(o, 1)],
        )
    }

    /// The strided scan's translation unit for `direction`: the operator's `struct Op`,
    /// its inputs gathered (`StridedGather`, or one array of states) and its outputs
    /// scattered (`StridedScatter`, or states) at the views' strides.
    pub(crate) fn strided_source(&self, direction: Direction) -> KernelSource {
        let unit = self.unit(&[]);
        let ([i0, i1, i2, i3], [o0, o1]) = self.array_types();
        let (source_type, source) = if self.load.is_some() {
            (
                format!("StridedGather<Op, {i0}, {i1}, {i2}, {i3}>"),
                format!("Src{{(const {i0}*)input, (const {i1}*)input1, (const {i2}*)input2, (const {i3}*)input3}}"),
            )
        } else {
            ("const In*".into(), "(const In*)input".into())
        };
        let (destination_type, destination) = if self.store.is_some() {
            (
                format!("StridedScatter<Op, {o0}, {o1}>"),
                format!("Dst{{({o0}*)output, ({o1}*)output1}}"),
            )
        } else {
            ("Acc*".into(), "(Acc*)output".into())
        };
        StridedUnit {
            definitions: &unit.definitions,
            source_type: &source_type,
            source: &source,
            destination_type: &destination_type,
            destination: &destination,
            extra_params: unit.extra_params,
            init: unit.init,
            summed_area: false,
        }
        .source(
            format!("strided operator {} {direction:?}", self.name),
            self.state_size,
            direction,
        )
    }
}

/// The programs of an operator's kernel set for one direction and segmentation on
/// `sm_<arch>` (the matrix scan's set, or the single pass's), with its tile shape.
///
/// The single pass's kernels compile as one program each, on parallel threads
/// (`ScanKernels::load`): its register-staged kernel alone takes most of a set's compile
/// time, so a new operator's first set is ready in about the time of that one kernel.
/// The matrix scan's set (its three kernels, and the single pass for one-tile scans) is
/// compiled on first use, as one program.
pub(crate) fn kernel_programs(
    desc: &OperatorDesc,
    arch: i32,
    direction: Direction,
    segmented: bool,
    matrix: bool,
) -> (Vec<Program>, TileShape) {
    use KernelKind::*;
    let shape = operator_shape(
        arch,
        desc.state_size,
        desc.plain_arrays(),
        segmented,
        desc.bulk_element_bytes(),
    );
    let groups: &[&[KernelKind]] = if matrix {
        // A scan of one tile runs the single pass whatever the algorithm.
        &[&[
            SinglePass,
            SegmentOffsets,
            MatrixReduce,
            MatrixScanSums,
            MatrixScanTiles,
        ]]
    } else if desc.plain_arrays() {
        &[
            &[SinglePass, SegmentOffsets],
            &[SinglePassBulk],
            &[SinglePassWave, ClusterScan],
        ]
    } else {
        // The one-wave and cluster kernels scan plain arrays only.
        &[&[SinglePass, SegmentOffsets], &[SinglePassBulk]]
    };
    let programs = groups
        .iter()
        .filter_map(|&kernels| {
            let unit = desc.unit(kernels);
            let kernels: Vec<KernelKind> = kernels
                .iter()
                .copied()
                .filter(|&k| unit.has(k, &shape, segmented))
                .collect();
            let name = format!(
                "operator {} {direction:?} segmented={segmented} {kernels:?} {shape:?}",
                desc.name
            );
            (!kernels.is_empty()).then(|| Program {
                source: KernelSource {
                    name,
                    text: unit.text(&shape, direction, segmented),
                    headers: KERNEL_HEADERS,
                },
                kernels,
            })
        })
        .collect();
    (programs, shape)
}

/// Compiles every kernel set of the operator `desc` (both directions, segmented or not,
/// single pass and matrix scan) with NVRTC for `sm_<arch>`, without a GPU, through the
/// disk cache; returns the images' total size. A bad source fails with `CompileError` and
/// the compiler's log.
pub fn compile_operator(desc: &OperatorDesc, arch: i32) -> Result<usize> {
    let mut bytes = 0;
    for direction in [Direction::Forward, Direction::Backward] {
        for segmented in [false, true] {
            bytes += compile_operator_set(desc, arch, direction, segmented, Algorithm::Auto)?;
        }
    }
    Ok(bytes)
}

/// Compiles the kernel sets of the operator `desc` that scan in `direction`, segmented or
/// not, with `algorithm` (`Auto`: the single-pass and the matrix scan's sets; the
/// deterministic single pass runs the single-pass set), as [`compile_operator`] does. The
/// unsegmented single pass includes the strided kernels of operators that scan along an
/// axis (a load and a store, states of at most 48 bytes).
pub fn compile_operator_set(
    desc: &OperatorDesc,
    arch: i32,
    direction: Direction,
    segmented: bool,
    algorithm: Algorithm,
) -> Result<usize> {
    let matrix: &[bool] = match algorithm {
        Algorithm::Auto => &[false, true],
        Algorithm::SinglePass | Algorithm::DeterministicSinglePass => &[false],
        Algorithm::Matrix => &[true],
        Algorithm::Host => bail!(InvalidArgument, "the host backend compiles no kernels"),
    };
    desc.check()?;
    let nvrtc = crate::runtime::nvrtc::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    let mut bytes = 0;
    for &matrix in matrix {
        for program in kernel_programs(desc, arch, direction, segmented, matrix).0 {
            bytes += nvrtc.compile_cached(&program.source, target)?.len();
        }
    }
    let along_an_axis = desc.load.is_some() && desc.store.is_some() && desc.state_size <= MAX_STATE_BYTES;
    if !segmented && matrix.contains(&false) && along_an_axis {
        bytes += nvrtc.compile_cached(&desc.strided_source(direction), target)?.len();
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::nvrtc::Nvrtc;

    /// A user-defined operator's kernel sets (a 16-byte state, with load and store)
    /// compile for sm_90, single pass and matrix scan, segmented (the offsets prepass
    /// included) or not (skipped without NVRTC).
    #[test]
    fn operator_kernel_sets_compile() {
        let Ok(nvrtc) = Nvrtc::load() else {
            eprintln!("skipped: no NVRTC");
            return;
        };
        let target = nvrtc.target_for(90).unwrap();
        let source = r#"
struct Best { double value; uint32_t index; uint32_t unused; };
__device__ Best better(Best a, Best b) { return b.value > a.value ? b : a; }
__device__ Best make(int64_t i, double x) { return Best{x, (uint32_t)i, 0u}; }
__device__ void put(const Best& s, double& value, uint32_t& index) { value = s.value; index = s.index; }
"#;
        let mut identity = f64::NEG_INFINITY.to_ne_bytes().to_vec();
        identity.resize(16, 0);
        let best = OperatorDesc::new("best", source, "Best", 16, 8, "better", &identity)
            .with_load("make", &[DType::F64])
            .with_store("put", &[DType::F64, DType::U32]);
        for (matrix, segmented) in [(false, false), (true, true)] {
            for program in kernel_programs(&best, 90, Direction::Forward, segmented, matrix).0 {
                if let Err(e) = nvrtc.compile(&program.source, target) {
                    panic!("{}: {}", program.source.name, e.message);
                }
            }
        }
        // The strided scan's set, gathering one input and scattering two outputs.
        let strided = best.strided_source(Direction::Backward);
        if let Err(e) = nvrtc.compile(&strided, target) {
            panic!("{}: {}", strided.name, e.message);
        }
    }
}
