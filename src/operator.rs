//! User-defined operators: a state type and an associative combine written in CUDA C++,
//! handed over at run time, compiled by NVRTC once (or loaded from the disk cache) and
//! scanned by the same kernels and look-back as the built-in operators.
//!
//! An operator names, in its source:
//! * the state type (any trivially copyable type of 4 to `MAX_STATE_BYTES` bytes, a
//!   multiple of 4; its size and alignment are checked against what the host declares);
//! * `__device__ State combine(State a, State b)`, associative, `a` first in sequence
//!   order (it need not commute);
//! * optionally a transform: `__device__ State load(int64_t i, I0 x0, ...)` building
//!   element i from up to four input arrays of built-in types, and `__device__ void store(const
//!   State& s, O0& y0, ...)` writing each result to up to two output arrays. Without
//!   them the scan reads and writes arrays of states.
//!
//! The identity comes as bytes. An operator may also bring host functions, which the
//! host backend runs; without them it refuses with `UnsupportedCombination`.
//!
//! Kernel sets are compiled per direction, segmentation and algorithm family (single
//! pass, or the matrix scan) on first use and belong to the operator: dropping it unloads
//! them.

use std::sync::Arc;

use cudarc::driver::sys::CUstream;

use crate::context::Context;
use crate::contract::{self, OperatorLaunch, MAX_STATE_BYTES};
use crate::engine::Engine;
use crate::error::{bail, Result};
use crate::kernels::KERNEL_HEADERS;
use crate::runtime::calls::CallLabel;
use crate::runtime::nvrtc::KernelSource;
use crate::runtime::workspace::Workspace;
use crate::runtime::Memo;
use crate::scan::desc::ScanDesc;
use crate::scan::desc::Segments;
use crate::scan::kernels::{KernelKind, Program, ScanKernels, TranslationUnit};
use crate::scan::overlaps;
use crate::scan::plan::{choose_algorithm, launch_kernels, segment_param, shape_flags, KernelLaunch, TileCounts};
use crate::scan::tuning::{operator_shape, TileShape};
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Backend, ChoiceReason, Direction, Op};
use crate::types::DType;
use crate::Buffer;

/// A host `combine`: `out = combine(a, b)`, states as their bytes.
pub type HostCombine = Arc<dyn Fn(&[u8], &[u8], &mut [u8]) + Send + Sync>;
/// A host `load`: `state = load(i, inputs...)`, one element's bytes per input array.
pub type HostLoad = Arc<dyn Fn(u64, &[&[u8]], &mut [u8]) + Send + Sync>;
/// A host `store`: `store(state, outputs...)`, one element's bytes per output array.
pub type HostStore = Arc<dyn Fn(&[u8], &mut [&mut [u8]]) + Send + Sync>;

/// Host implementations of an operator's functions, for the host backend. States and
/// elements travel as their bytes (native endianness).
#[derive(Clone)]
pub struct HostOperator {
    /// `out = combine(a, b)`.
    pub combine: HostCombine,
    /// `state = load(i, inputs...)` (transforms only).
    pub load: Option<HostLoad>,
    /// `store(state, outputs...)` (transforms only).
    pub store: Option<HostStore>,
}

/// What a user-defined operator is: its CUDA source and the names in it.
#[derive(Clone)]
pub struct OperatorDesc {
    /// Names the operator in compiler messages (`name(line): error ...`) and logs.
    pub name: String,
    /// CUDA C++ defining the state type and the functions below (`__device__`). NVRTC
    /// compiles it without the standard headers; `uint32_t` and friends are defined.
    pub source: String,
    /// The state type's name.
    pub state_type: String,
    /// `sizeof` and `alignof` of the state type as the host sees it.
    pub state_size: usize,
    /// See `state_size`.
    pub state_align: usize,
    /// The combine function's name: `State combine(State a, State b)`.
    pub combine: String,
    /// The identity's bytes (`state_size` of them).
    pub identity: Vec<u8>,
    /// The load function's name and the types of its input arrays (1 to 4), or None:
    /// the input is an array of states. `State load(int64_t i, I0 x0, ...)` builds
    /// element i (its index in memory order).
    pub load: Option<(String, Vec<DType>)>,
    /// The store function's name and the types of its output arrays (1 or 2), or None:
    /// the output is an array of states.
    pub store: Option<(String, Vec<DType>)>,
    /// Host implementations, for the host backend.
    pub host: Option<HostOperator>,
}

/// How an operator scan runs: the same choices as a built-in scan's [`ScanDesc`], with
/// the initial value as the state's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorScan {
    /// Inclusive (element i includes input i) or exclusive.
    pub inclusive: bool,
    /// The initial state's bytes (every segment starts from it); None: the identity.
    pub init: Option<Vec<u8>>,
    /// The algorithm asked for. `deterministic` runs the fixed-order look-back (a user
    /// operator's result may depend on association order).
    pub algorithm: Algorithm,
    /// Forward or backward.
    pub direction: Direction,
    /// Bitwise identical results on every run.
    pub deterministic: bool,
    /// Segments, as for built-in scans.
    pub segments: Segments,
}

impl Default for OperatorScan {
    fn default() -> Self {
        OperatorScan {
            inclusive: true,
            init: None,
            algorithm: Algorithm::Auto,
            direction: Direction::Forward,
            deterministic: false,
            segments: Segments::None,
        }
    }
}

impl OperatorScan {
    /// An inclusive forward scan.
    pub fn inclusive() -> Self {
        Self::default()
    }
    /// An exclusive forward scan.
    pub fn exclusive() -> Self {
        OperatorScan {
            inclusive: false,
            ..Self::default()
        }
    }
    /// Starts from the state with these bytes.
    pub fn with_init(mut self, init: Vec<u8>) -> Self {
        self.init = Some(init);
        self
    }
    /// Traverses from the last element.
    pub fn backward(mut self) -> Self {
        self.direction = Direction::Backward;
        self
    }
    /// Asks for bitwise identical results on every run.
    pub fn deterministic(mut self) -> Self {
        self.deterministic = true;
        self
    }
    /// Restarts at each segment.
    pub fn segmented(mut self, segments: Segments) -> Self {
        self.segments = segments;
        self
    }
    /// Runs `algorithm`.
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    /// The built-in descriptor with the same choices (the operator field is unused).
    fn as_scan_desc(&self) -> ScanDesc {
        ScanDesc {
            op: Op::Sum,
            inclusive: self.inclusive,
            init: None,
            algorithm: self.algorithm,
            direction: self.direction,
            deterministic: self.deterministic,
            segments: self.segments,
        }
    }
}

/// A compiled user-defined operator of one context. Cheap to clone; scans may run from
/// any number of threads.
#[derive(Clone)]
pub struct Operator {
    inner: Arc<OperatorInner>,
}

struct OperatorInner {
    ctx: Context,
    desc: OperatorDesc,
    /// The layout of each input and output array, derived from `desc` once.
    inputs: Vec<ArrayLayout>,
    outputs: Vec<ArrayLayout>,
    /// `desc.name`, shared with the call log that names a faulting call.
    name: Arc<str>,
    /// The kernel sets compiled so far, by (direction, segmented, matrix): the single-pass
    /// kernels and the matrix scan's are compiled apart, each on first use.
    kernel_sets: Memo<(Direction, bool, bool), Arc<ScanKernels>>,
}

fn is_identifier(name: &str) -> bool {
    let mut parts = name.split("::");
    parts.all(|p| {
        let mut chars = p.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

impl OperatorDesc {
    /// An operator on states of `state_size` bytes (alignment `state_align`) scanned in
    /// arrays of states: `source` defines `state_type` and `combine`.
    pub fn new(
        name: &str,
        source: &str,
        state_type: &str,
        state_size: usize,
        state_align: usize,
        combine: &str,
        identity: &[u8],
    ) -> OperatorDesc {
        OperatorDesc {
            name: name.into(),
            source: source.into(),
            state_type: state_type.into(),
            state_size,
            state_align,
            combine: combine.into(),
            identity: identity.into(),
            load: None,
            store: None,
            host: None,
        }
    }
    /// Builds each element with `load` from arrays of `inputs`.
    pub fn with_load(mut self, load: &str, inputs: &[DType]) -> Self {
        self.load = Some((load.into(), inputs.into()));
        self
    }
    /// Writes each result with `store` to arrays of `outputs`.
    pub fn with_store(mut self, store: &str, outputs: &[DType]) -> Self {
        self.store = Some((store.into(), outputs.into()));
        self
    }
    /// Host implementations for the host backend.
    pub fn with_host(mut self, host: HostOperator) -> Self {
        self.host = Some(host);
        self
    }

    fn input_types(&self) -> Option<&[DType]> {
        self.load.as_ref().map(|(_, t)| t.as_slice())
    }
    fn output_types(&self) -> Option<&[DType]> {
        self.store.as_ref().map(|(_, t)| t.as_slice())
    }
    /// The arrays of one side of a transform (`types`), or one array of states.
    fn array_layouts(&self, types: Option<&[DType]>) -> Vec<ArrayLayout> {
        types.map_or_else(
            || {
                vec![ArrayLayout {
                    size: self.state_size,
                    align: self.state_align,
                }]
            },
            |t| {
                t.iter()
                    .map(|d| ArrayLayout {
                        size: d.size(),
                        align: d.size(),
                    })
                    .collect()
            },
        )
    }

    fn check(&self) -> Result<()> {
        let size = self.state_size;
        if !(4..=MAX_STATE_BYTES as usize).contains(&size) || size % 4 != 0 {
            bail!(
                InvalidArgument,
                "operator {}: state_size {size} must be a multiple of 4 from 4 to {MAX_STATE_BYTES}",
                self.name
            );
        }
        if !self.state_align.is_power_of_two() || self.state_align > 16 || size % self.state_align != 0 {
            bail!(
                InvalidArgument,
                "operator {}: state_align {} must be a power of two of at most 16 that divides state_size",
                self.name,
                self.state_align
            );
        }
        if self.identity.len() != size {
            bail!(
                InvalidArgument,
                "operator {}: the identity has {} bytes, the state {size}",
                self.name,
                self.identity.len()
            );
        }
        if self.name.is_empty() || self.name.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
            bail!(
                InvalidArgument,
                "an operator name must be nonempty, without quotes, backslashes or control characters"
            );
        }
        let mut names = vec![("state_type", &self.state_type), ("combine", &self.combine)];
        if let Some((load, _)) = &self.load {
            names.push(("load", load));
        }
        if let Some((store, _)) = &self.store {
            names.push(("store", store));
        }
        for (what, name) in names {
            if !is_identifier(name) {
                bail!(
                    InvalidArgument,
                    "operator {}: {what} {name:?} is not a C++ name",
                    self.name
                );
            }
        }
        if let Some(inputs) = self.input_types() {
            if !(1..=4).contains(&inputs.len()) {
                bail!(
                    InvalidArgument,
                    "operator {}: a load takes 1 to 4 input arrays, not {}",
                    self.name,
                    inputs.len()
                );
            }
        }
        if let Some(outputs) = self.output_types() {
            if !(1..=2).contains(&outputs.len()) {
                bail!(
                    InvalidArgument,
                    "operator {}: a store writes 1 or 2 output arrays, not {}",
                    self.name,
                    outputs.len()
                );
            }
        }
        if self.source.contains('\0') {
            bail!(InvalidArgument, "operator {}: the source holds a NUL byte", self.name);
        }
        Ok(())
    }

    /// Bytes per element of the bulk-copy kernel's buffers: the input or the output arrays
    /// together, whichever are larger; a plain array is one of states. States wider than
    /// that do not park in the buffer: the kernel rescans the inputs instead
    /// (kernels/device/single_pass_bulk.cuh, `BulkTile`).
    fn bulk_element_bytes(&self) -> usize {
        let total = |types: Option<&[DType]>| types.map_or(self.state_size, |t| t.iter().map(|d| d.size()).sum());
        total(self.input_types()).max(total(self.output_types()))
    }

    /// Whether inputs and outputs are plain arrays of states.
    fn plain_arrays(&self) -> bool {
        self.load.is_none() && self.store.is_none()
    }

    /// The `struct Op` and types of the operator's translation unit: the user's source
    /// under `#line` directives (so compiler messages cite its own lines), then the glue
    /// the kernels call. The unit holds `kernels` (where the tile shape has them).
    fn unit(&self, kernels: &[KernelKind]) -> TranslationUnit {
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
        let cuda = |t: &DType| t.info().cuda;
        let slot = |types: Option<&[DType]>, i: usize| types.and_then(|t| t.get(i)).map_or("NoArray", cuda);
        let (i, o) = (self.input_types(), self.output_types());
        let (i0, i1, i2, i3) = (slot(i, 0), slot(i, 1), slot(i, 2), slot(i, 3));
        let (o0, o1) = (slot(o, 0), slot(o, 1));
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
                "(unsigned long long)&init"
            },
            kernels: kernels.to_vec(),
        }
    }
}

impl Context {
    /// Creates a user-defined operator. On a GPU context its forward kernel set is
    /// compiled (or loaded from the disk cache) now, so a bad source fails here, with
    /// `CompileError` and the compiler's log citing the operator's own lines.
    pub fn create_operator(&self, desc: OperatorDesc) -> Result<Operator> {
        desc.check()?;
        let op = Operator {
            inner: Arc::new(OperatorInner {
                ctx: self.clone(),
                inputs: desc.array_layouts(desc.input_types()),
                outputs: desc.array_layouts(desc.output_types()),
                name: desc.name.as_str().into(),
                desc,
                kernel_sets: Memo::default(),
            }),
        };
        if let Engine::Gpu(_) = self.engine() {
            op.kernels(Direction::Forward, false, false)?;
        }
        Ok(op)
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
fn kernel_programs(
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
        &[&[SinglePass, MatrixReduce, MatrixScanSums, MatrixScanTiles]]
    } else if desc.plain_arrays() {
        &[&[SinglePass], &[SinglePassBulk], &[SinglePassWave]]
    } else {
        // The one-wave kernel scans plain arrays only.
        &[&[SinglePass], &[SinglePassBulk]]
    };
    let programs = groups
        .iter()
        .filter_map(|&kernels| {
            let unit = desc.unit(kernels);
            let kernels: Vec<KernelKind> = kernels.iter().copied().filter(|&k| unit.has(k, &shape)).collect();
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
    desc.check()?;
    let nvrtc = crate::runtime::nvrtc::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    let mut bytes = 0;
    for direction in [Direction::Forward, Direction::Backward] {
        for segmented in [false, true] {
            for matrix in [false, true] {
                for program in kernel_programs(desc, arch, direction, segmented, matrix).0 {
                    bytes += nvrtc.compile_cached(&program.source, target)?.len();
                }
            }
        }
    }
    Ok(bytes)
}

impl Operator {
    /// What the operator was created from.
    pub fn desc(&self) -> &OperatorDesc {
        &self.inner.desc
    }

    /// The kernel set for one direction, segmentation and algorithm family, compiled on
    /// first use.
    fn kernels(&self, direction: Direction, segmented: bool, matrix: bool) -> Result<Arc<ScanKernels>> {
        let inner = &self.inner;
        let dev = inner.ctx.gpu()?;
        inner.kernel_sets.get_or_try_init(&(direction, segmented, matrix), || {
            let desc = &inner.desc;
            let (programs, shape) = kernel_programs(desc, dev.arch, direction, segmented, matrix);
            ScanKernels::load(dev, &programs, shape, desc.bulk_element_bytes())
        })
    }

    /// Scans `n` elements of device arrays (host arrays on a host context): `inputs` are
    /// the load's input arrays in order (one array of states without a load), `outputs`
    /// the store's (one array of states without a store), `segments` the segment data of
    /// a segmented scan (0 otherwise). Outputs may be exactly an input (in place) or
    /// disjoint from every input. Asynchronous on `stream` for the GPU.
    ///
    /// # Safety
    /// As [`crate::ScanPlan::execute`]: on the host backend every address must be valid for
    /// `n` elements; on a GPU the driver checks the ranges, but they must stay allocated
    /// until the scan completes.
    pub unsafe fn scan_raw(
        &self,
        stream: &Stream,
        inputs: &[u64],
        outputs: &[u64],
        n: u64,
        segments: u64,
        scan: &OperatorScan,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        let inner = &self.inner;
        let desc = &inner.desc;
        inner.ctx.check_stream_owner(stream)?;
        let arrays = Arrays {
            inputs,
            outputs,
            input_layouts: &inner.inputs,
            output_layouts: &inner.outputs,
        };
        self.check_arrays(&arrays, n, segments, scan)?;
        let Engine::Gpu(engine) = inner.ctx.engine() else {
            let Some(host) = &desc.host else {
                bail!(
                    UnsupportedCombination,
                    "operator {} has no host functions, so the host backend cannot run it",
                    desc.name
                );
            };
            crate::scan::host::scan_operator(desc, host, &arrays, n, segments, scan);
            return Ok(ScanInfo {
                backend: Backend::Host,
                algorithm: Algorithm::Host,
                reason: ChoiceReason::HostBackend,
            });
        };
        if scan.algorithm == Algorithm::Host {
            bail!(
                InvalidArgument,
                "Algorithm::Host is reported, not requested; create a host context instead"
            );
        }
        // A user operator may depend on association order.
        let (algorithm, reason) = choose_algorithm(scan.algorithm, scan.deterministic, true);
        let info = ScanInfo {
            backend: Backend::Gpu,
            algorithm,
            reason,
        };
        let dev = &engine.device;
        let segmented = scan.segments != Segments::None;
        let kernels = self.kernels(scan.direction, segmented, algorithm == Algorithm::Matrix)?;
        let _current = dev.enter()?;
        dev.take_fault()?;
        if n == 0 {
            return Ok(info);
        }
        let raw_stream = stream.raw() as CUstream;
        if !stream.verified() {
            dev.check_stream(raw_stream)?;
        }
        for (&addr, layout) in inputs.iter().zip(arrays.input_layouts) {
            dev.check_device_range(addr, n * layout.size as u64, "input")?;
        }
        for (&addr, layout) in outputs.iter().zip(arrays.output_layouts) {
            dev.check_device_range(addr, n * layout.size as u64, "output")?;
        }
        if scan.segments.has_data() {
            let bytes = scan.segments.data_bytes(n).unwrap_or(0);
            dev.check_device_range(segments, bytes, "segment data")?;
        }

        let tiles = TileCounts::new(&kernels, n, desc.state_size)?;
        // Whole tiles are 16-byte aligned when every array's start (forward) or end
        // (backward) is.
        let aligned = |addrs: &[u64], layouts: &[ArrayLayout]| {
            addrs.iter().zip(layouts).all(|(&a, layout)| match scan.direction {
                Direction::Forward => a % 16 == 0,
                Direction::Backward => (a + n * layout.size as u64) % 16 == 0,
            })
        };
        let mut flags = shape_flags(&scan.as_scan_desc(), algorithm);
        if aligned(inputs, arrays.input_layouts) {
            flags |= contract::FLAG_VECTOR_IN;
        }
        if aligned(outputs, arrays.output_layouts) {
            flags |= contract::FLAG_VECTOR_OUT;
        }
        let mut init = contract::StateBytes::default();
        if let Some(bytes) = &scan.init {
            flags |= contract::FLAG_HAS_INIT;
            // `check_arrays` bounded the initial state by MAX_STATE_BYTES.
            for (word, chunk) in init.words.iter_mut().zip(bytes.chunks(8)) {
                let mut padded = [0u8; 8];
                padded[..chunk.len()].copy_from_slice(chunk);
                *word = u64::from_ne_bytes(padded);
            }
        }
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let mut params = OperatorLaunch {
            scan: contract::ScanParams {
                input: inputs[0],
                output: outputs[0],
                heads: segment_param(&scan.segments, segments),
                report: dev.faults.device,
                n: n as i64,
                init_bits: init.words[0],
                flags,
                ..Default::default()
            },
            operator: contract::OperatorParams {
                input1: at(inputs, 1),
                input2: at(inputs, 2),
                input3: at(inputs, 3),
                output1: at(outputs, 1),
                init,
            },
        };
        launch_kernels(
            dev,
            &KernelLaunch {
                kernels: &kernels,
                algorithm,
                tiles: &tiles,
                label: CallLabel::Operator(inner.name.clone()),
                n,
            },
            raw_stream,
            &mut params,
            workspace,
        )?;
        Ok(info)
    }

    /// Scans buffers of the operator's context: `inputs` of the load's types (or one
    /// `U8` buffer of states), `outputs` likewise. The scan covers the first output's
    /// elements; every other buffer must hold at least as many.
    pub fn scan(
        &self,
        stream: &Stream,
        inputs: &[&Buffer],
        outputs: &[&Buffer],
        scan: &OperatorScan,
    ) -> Result<ScanInfo> {
        let (inputs, outputs, n) = self.buffer_arrays(inputs, outputs)?;
        // SAFETY: every address is a live buffer of this context holding n elements.
        unsafe { self.scan_raw(stream, &inputs, &outputs, n, 0, scan, None) }
    }

    /// The context the operator belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The workspace bytes `scan_raw` needs for `n` elements with `scan` (0 when none
    /// is needed: one tile, or the host backend). Compiles the kernel set on first use.
    pub fn workspace_bytes(&self, n: u64, scan: &OperatorScan) -> Result<usize> {
        if self.inner.ctx.gpu().is_err() {
            return Ok(0);
        }
        // The single-pass set holds every kernel of the matrix scan's tile shape and
        // more, so its workspace serves both algorithms.
        let kernels = self.kernels(scan.direction, scan.segments != Segments::None, false)?;
        Ok(TileCounts::new(&kernels, n, self.inner.desc.state_size)?.workspace_bytes())
    }

    /// The addresses of buffers passed as an operator's arrays, checked for type, owner
    /// and length, and the scan's length (the first output's elements).
    pub(crate) fn buffer_arrays(&self, inputs: &[&Buffer], outputs: &[&Buffer]) -> Result<(Vec<u64>, Vec<u64>, u64)> {
        let desc = &self.inner.desc;
        // Elements of `buffer` as array `i` of `types` (a U8 buffer of states without types).
        let elements = |buffer: &Buffer, types: Option<&[DType]>, i: usize, what: &str| -> Result<u64> {
            self.inner.ctx.check_buffer_owner(buffer)?;
            let want = types.map_or(DType::U8, |t| t.get(i).copied().unwrap_or(DType::U8));
            if buffer.dtype() != want {
                bail!(
                    InvalidArgument,
                    "{what} {i} of operator {} must be a {} buffer, not {}",
                    desc.name,
                    want.c_name(),
                    buffer.dtype().c_name()
                );
            }
            Ok(if types.is_some() {
                buffer.len()
            } else {
                buffer.len() / desc.state_size as u64
            })
        };
        let Some(first) = outputs.first() else {
            bail!(InvalidArgument, "operator {}: no output array", desc.name);
        };
        let n = elements(first, desc.output_types(), 0, "output")?;
        let addresses = |buffers: &[&Buffer], types: Option<&[DType]>, what: &str| -> Result<Vec<u64>> {
            let mut addrs = Vec::new();
            for (i, b) in buffers.iter().enumerate() {
                if elements(b, types, i, what)? < n {
                    bail!(
                        BufferTooSmall,
                        "{what} {i} of operator {} holds fewer than {n} elements",
                        desc.name
                    );
                }
                addrs.push(b.addr());
            }
            Ok(addrs)
        };
        Ok((
            addresses(inputs, desc.input_types(), "input")?,
            addresses(outputs, desc.output_types(), "output")?,
            n,
        ))
    }

    fn check_arrays(&self, arrays: &Arrays, n: u64, segments: u64, scan: &OperatorScan) -> Result<()> {
        let desc = &self.inner.desc;
        let (inputs, outputs) = (arrays.input_layouts, arrays.output_layouts);
        if arrays.inputs.len() != inputs.len() || arrays.outputs.len() != outputs.len() {
            bail!(
                InvalidArgument,
                "operator {} reads {} and writes {} arrays; the call passed {} and {}",
                desc.name,
                inputs.len(),
                outputs.len(),
                arrays.inputs.len(),
                arrays.outputs.len()
            );
        }
        if let Some(init) = &scan.init {
            if init.len() != desc.state_size {
                bail!(
                    InvalidArgument,
                    "operator {}: the initial state has {} bytes, the state {}",
                    desc.name,
                    init.len(),
                    desc.state_size
                );
            }
        }
        scan.segments.check()?;
        if scan.segments.has_data() && segments == 0 {
            bail!(
                NullArgument,
                "a segmented scan needs its segment flags or keys (NULL given)"
            );
        }
        if !scan.segments.has_data() && segments != 0 {
            bail!(
                InvalidArgument,
                "segment data was passed but the segments ({}) have none",
                scan.segments.c_name()
            );
        }
        if n == 0 {
            return Ok(());
        }
        for (&addr, layout) in arrays
            .inputs
            .iter()
            .chain(arrays.outputs)
            .zip(inputs.iter().chain(outputs))
        {
            if addr == 0 {
                bail!(
                    NullArgument,
                    "operator {}: array addresses must not be NULL when n > 0",
                    desc.name
                );
            }
            if addr % layout.align as u64 != 0 {
                bail!(
                    InvalidArgument,
                    "operator {}: arrays must be aligned to their elements",
                    desc.name
                );
            }
            if n.checked_mul(layout.size as u64)
                .and_then(|b| addr.checked_add(b))
                .is_none()
            {
                bail!(LengthOverflow, "n = {n} elements wrap around the address space");
            }
        }
        arrays.check_overlaps(desc, n, segments, &scan.segments)
    }
}

/// Element size and alignment of one array an operator reads or writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArrayLayout {
    pub size: usize,
    pub align: usize,
}

/// The arrays of one operator scan and their layouts.
pub(crate) struct Arrays<'a> {
    pub inputs: &'a [u64],
    pub outputs: &'a [u64],
    pub input_layouts: &'a [ArrayLayout],
    pub output_layouts: &'a [ArrayLayout],
}

impl Arrays<'_> {
    /// Every output is exactly one input (same start and element size: in place) or
    /// disjoint from all of them, outputs are disjoint, and segment data does not
    /// overlap an output.
    fn check_overlaps(&self, desc: &OperatorDesc, n: u64, segments: u64, kind: &Segments) -> Result<()> {
        let bytes = |layout: &ArrayLayout| n * layout.size as u64;
        for (o, (&out, out_layout)) in self.outputs.iter().zip(self.output_layouts).enumerate() {
            let out_bytes = bytes(out_layout);
            for (&input, in_layout) in self.inputs.iter().zip(self.input_layouts) {
                let exact = input == out && in_layout.size == out_layout.size;
                if !exact && overlaps(input, bytes(in_layout), out, out_bytes) {
                    bail!(
                        PartialOverlap,
                        "operator {}: output {o} overlaps an input without being it",
                        desc.name
                    );
                }
            }
            for (&other, other_layout) in self.outputs.iter().zip(self.output_layouts).skip(o + 1) {
                if overlaps(other, bytes(other_layout), out, out_bytes) {
                    bail!(PartialOverlap, "operator {}: the outputs overlap", desc.name);
                }
            }
            if kind.has_data() && overlaps(segments, kind.data_bytes(n).unwrap_or(0), out, out_bytes) {
                bail!(
                    PartialOverlap,
                    "operator {}: the segment data overlaps output {o}",
                    desc.name
                );
            }
        }
        Ok(())
    }
}
