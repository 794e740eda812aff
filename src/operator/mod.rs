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
//!
//! Files: `desc` (the description and its checks), `glue` (the CUDA translation unit and
//! its programs), `host` (the host backend's scan); this one holds the operator object and
//! its model for the scan plan (`scan::operator_model`), through which its scans run like
//! any other.

mod desc;
pub(crate) mod glue;
mod host;
mod strided;

use std::sync::Arc;

pub use desc::{HostCombine, HostLoad, HostOperator, HostStore, OperatorDesc, OperatorScan};
pub use glue::{compile_operator, compile_operator_set};

use crate::array::ArrayView;
use crate::buffer::Buffer;
use crate::context::Context;
use crate::contract::StateBytes;
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::runtime::calls::CallLabel;
use crate::runtime::device::GpuDevice;
use crate::runtime::workspace::Workspace;
use crate::runtime::Memo;
use crate::scan::carry_views::CarryViews;
use crate::scan::checks::check_segment_view;
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::kernels::ScanKernels;
use crate::scan::operator_model::{ArrayLayout, Carries, OperatorModel, ScanArrays};
use crate::scan::plan::{PlanOperator, ScanPlan};
use crate::scan::strided::kernels::StridedKernelSet;
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::{Algorithm, Direction};
use crate::types::DType;

/// A compiled user-defined operator of one context. Cheap to clone; scans may run from
/// any number of threads.
#[derive(Clone)]
pub struct Operator {
    inner: Arc<OperatorInner>,
}

/// The operator as scan plans see it (`OperatorModel`).
struct OperatorInner {
    desc: OperatorDesc,
    /// The layout of each input and output array, derived from `desc` once.
    inputs: Vec<ArrayLayout>,
    outputs: Vec<ArrayLayout>,
    /// `desc.name`, shared with the call log that names a faulting call.
    name: Arc<str>,
    /// The kernel sets compiled so far, by (direction, segmented, matrix): the single-pass
    /// kernels and the matrix scan's are compiled apart, each on first use.
    kernel_sets: Memo<(Direction, bool, bool), Arc<ScanKernels>>,
    /// The strided scan's kernel sets, by direction, compiled on first use.
    strided_sets: Memo<Direction, Arc<StridedKernelSet>>,
    /// The same combine over arrays of states (no load, no store), made on first use:
    /// what a scan across GPUs scans the ranks' totals with.
    #[cfg(feature = "nccl")]
    states_only: once_cell::sync::OnceCell<Operator>,
    /// Last, so it drops last: while the context lives its device holds the kernel sets'
    /// modules too, and unloads them itself with its context entered (a module unloaded
    /// here would leave the caller's thread on scanrt's context).
    ctx: Context,
}

impl Context {
    /// Creates a user-defined operator. On a GPU context its forward kernel set is
    /// compiled (or loaded from the disk cache) now, so a bad source fails here, with
    /// `CompileError` and the compiler's log citing the operator's own lines.
    pub fn create_operator(&self, desc: OperatorDesc) -> Result<Operator> {
        desc.check()?;
        let inner = OperatorInner {
            ctx: self.clone(),
            inputs: desc.array_layouts(desc.input_types()),
            outputs: desc.array_layouts(desc.output_types()),
            name: desc.name.as_str().into(),
            desc,
            kernel_sets: Memo::default(),
            strided_sets: Memo::default(),
            #[cfg(feature = "nccl")]
            states_only: Default::default(),
        };
        if let Engine::Gpu(engine) = self.engine() {
            inner.kernel_set(&engine.device, Direction::Forward, false, false)?;
        }
        Ok(Operator { inner: Arc::new(inner) })
    }
}

impl OperatorInner {
    /// The kernel set for one direction, segmentation and algorithm family, compiled on
    /// first use.
    fn kernel_set(
        &self,
        dev: &GpuDevice,
        direction: Direction,
        segmented: bool,
        matrix: bool,
    ) -> Result<Arc<ScanKernels>> {
        self.kernel_sets.get_or_try_init(&(direction, segmented, matrix), || {
            let desc = &self.desc;
            let (programs, shape) = glue::kernel_programs(desc, dev.arch, direction, segmented, matrix);
            ScanKernels::load(dev, &programs, shape, desc.bulk_element_bytes())
        })
    }
}

impl OperatorModel for OperatorInner {
    fn subject(&self) -> String {
        format!("operator {}", self.desc.name)
    }

    fn label(&self) -> CallLabel {
        CallLabel::Operator(self.name.clone())
    }

    fn state_bytes(&self) -> usize {
        self.desc.state_size
    }

    fn state_align(&self) -> usize {
        self.desc.state_align
    }

    fn identity_bytes(&self) -> Vec<u8> {
        self.desc.identity.clone()
    }

    fn inputs(&self) -> &[ArrayLayout] {
        &self.inputs
    }

    fn outputs(&self) -> &[ArrayLayout] {
        &self.outputs
    }

    /// A user operator may depend on association order.
    fn order_sensitive(&self) -> bool {
        true
    }

    fn kernels(
        &self,
        engine: &GpuEngine,
        shape: &ScanShape,
        algorithm: Algorithm,
        _n: u64,
    ) -> Result<Arc<ScanKernels>> {
        if shape.algorithm == Algorithm::Host {
            bail!(
                InvalidArgument,
                "Algorithm::Host is reported, not requested; create a host context instead"
            );
        }
        let segmented = shape.segments != Segments::None;
        self.kernel_set(
            &engine.device,
            shape.direction,
            segmented,
            algorithm == Algorithm::Matrix,
        )
    }

    fn strided_kernels(&self, engine: &GpuEngine, direction: Direction) -> Result<Arc<StridedKernelSet>> {
        self.strided_sets.get_or_try_init(&direction, || {
            StridedKernelSet::load(&engine.device, &self.desc.strided_source(direction))
        })
    }

    fn takes_operator_params(&self) -> bool {
        true
    }

    unsafe fn scan_on_host(&self, arrays: &ScanArrays, n: u64, shape: &ScanShape) -> Result<StateBytes> {
        let Some(host) = &self.desc.host else {
            bail!(
                UnsupportedCombination,
                "operator {} has no host functions, so the host backend cannot run it",
                self.desc.name
            );
        };
        // A load or store has its host twin, else elements would be taken for states.
        for (what, device, on_host) in [
            ("load", self.desc.load.is_some(), host.load.is_some()),
            ("store", self.desc.store.is_some(), host.store.is_some()),
        ] {
            if device && !on_host {
                bail!(
                    UnsupportedCombination,
                    "operator {} has a {what} but no host {what}, so the host backend cannot run it",
                    self.desc.name
                );
            }
        }
        let total = host::scan(&self.desc, host, &self.inputs, &self.outputs, arrays, n, shape);
        Ok(StateBytes::from_bytes(&total))
    }
}

impl Operator {
    /// The operator over arrays of its states: itself when it has no load and no store,
    /// else the same combine and identity without them (compiled on first use).
    #[cfg(feature = "nccl")]
    pub(crate) fn states_only(&self) -> Result<Operator> {
        let desc = &self.inner.desc;
        if desc.load.is_none() && desc.store.is_none() {
            return Ok(self.clone());
        }
        self.inner
            .states_only
            .get_or_try_init(|| {
                let mut states = desc.clone();
                states.name = format!("{}_states", desc.name);
                states.load = None;
                states.store = None;
                if let Some(host) = &mut states.host {
                    host.load = None;
                    host.store = None;
                }
                self.inner.ctx.create_operator(states)
            })
            .cloned()
    }

    /// What the operator was created from.
    pub fn desc(&self) -> &OperatorDesc {
        &self.inner.desc
    }

    /// The context the operator belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Plans a scan of `n` elements with this operator as `scan` says: validates it,
    /// chooses the algorithm and, on a GPU, loads its kernels (compiling them on first
    /// use) and sizes its workspace. Run it with [`ScanPlan::execute_arrays`] (any number
    /// of times, on any arrays of its length).
    pub fn plan(&self, n: u64, scan: &OperatorScan) -> Result<ScanPlan> {
        self.inner.desc.check_length(n)?;
        let shape = scan.shape(&self.inner.desc)?;
        ScanPlan::new(&self.inner.ctx, PlanOperator::User(self.inner.clone()), n, shape)
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
    #[allow(clippy::too_many_arguments)]
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
        self.plan(n, scan)?
            .execute_arrays(stream, inputs, outputs, segments, workspace)
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
        for b in inputs.iter().chain(outputs) {
            self.inner.ctx.check_buffer_owner(b)?;
        }
        self.scan_arrays(stream, &buffer_views(inputs), &buffer_views(outputs), None, scan)
    }

    /// The addresses of buffers of the operator's context passed as its arrays, checked
    /// for owner, type and length, and the scan's length (the first output's elements).
    pub(crate) fn buffer_arrays(&self, inputs: &[&Buffer], outputs: &[&Buffer]) -> Result<(Vec<u64>, Vec<u64>, u64)> {
        for b in inputs.iter().chain(outputs) {
            self.inner.ctx.check_buffer_owner(b)?;
        }
        self.array_addresses(&buffer_views(inputs), &buffer_views(outputs))
    }

    /// Scans 1-D array views (device memory on a GPU context, host memory on the host
    /// backend): `inputs` of the load's types (or one `U8` array of states), `outputs`
    /// likewise, `segments` the flags or keys of a segmented scan. The scan covers the
    /// first output's elements; every other array must hold at least as many.
    pub fn scan_arrays(
        &self,
        stream: &Stream,
        inputs: &[ArrayView],
        outputs: &[ArrayView],
        segments: Option<&ArrayView>,
        scan: &OperatorScan,
    ) -> Result<ScanInfo> {
        self.scan_arrays_carried(stream, inputs, outputs, segments, scan, &CarryViews::default())
    }

    /// [`Operator::scan_arrays`] with carries in memory (device memory on a GPU):
    /// `carries.carry_in` (instead of the initial state) and `carries.carry_out` are `U8`
    /// arrays of whole states: one state for an unsegmented scan, one per segment for
    /// segments by offsets (as [`Context::scan_array_segmented_carried`] takes them: a
    /// batch of variable-length sequences with an initial and a final state each).
    pub fn scan_arrays_carried(
        &self,
        stream: &Stream,
        inputs: &[ArrayView],
        outputs: &[ArrayView],
        segments: Option<&ArrayView>,
        scan: &OperatorScan,
        carries: &CarryViews,
    ) -> Result<ScanInfo> {
        let (input_addrs, output_addrs, n) = self.array_addresses(inputs, outputs)?;
        let states = match scan.segments {
            Segments::Offsets { count, .. } => count.saturating_sub(1),
            _ => 1,
        };
        let carries = self.carry_addresses(carries, states)?;
        // Buffers of this context are known (a buffer of another one is refused).
        let known = |views: &[ArrayView]| -> Result<bool> {
            let mut all = true;
            for v in views {
                all &= v.known_to(self.inner.ctx.id())?;
            }
            Ok(all)
        };
        if let Some(s) = segments {
            check_segment_view(s, scan.segments, n)?;
        } else if scan.segments.has_data() {
            bail!(
                InvalidArgument,
                "{} segments need their data: pass the segment array",
                scan.segments.c_name()
            );
        }
        let arrays = ScanArrays {
            segments: segments.map_or(0, |s| s.addr()),
            known_arrays: known(inputs)? && known(outputs)?,
            known_segments: match segments {
                Some(s) => s.known_to(self.inner.ctx.id())?,
                None => false,
            },
            ..ScanArrays::new(&input_addrs, &output_addrs, carries)
        };
        // SAFETY: views are valid for their lengths (borrowed buffers and slices by
        // construction, raw addresses by their constructors' contracts), each holding at
        // least n elements, the segment data checked for type and length.
        unsafe { self.plan(n, scan)?.run(stream, &arrays, None) }
    }

    /// The workspace bytes `scan_raw` needs for `n` elements with `scan` (0 when none
    /// is needed: one tile, or the host backend). Compiles the kernel set on first use.
    pub fn workspace_bytes(&self, n: u64, scan: &OperatorScan) -> Result<usize> {
        Ok(self.plan(n, scan)?.workspace_bytes())
    }

    /// The addresses of an operator scan's carry views: `U8` arrays of at least `states`
    /// whole states, the carry out writable.
    fn carry_addresses(&self, carries: &CarryViews, states: u64) -> Result<Carries> {
        let [carry_in, carry_out] = self.state_carries(carries)?;
        for (carry, what) in [(carry_in, "carry in"), (carry_out, "carry out")] {
            if let Some(c) = carry.filter(|c| c.len < states) {
                bail!(
                    BufferTooSmall,
                    "the {what} of operator {} holds {} states; the scan needs {states}",
                    self.inner.desc.name,
                    c.len
                );
            }
        }
        Ok(Carries {
            carry_in: carry_in.map_or(0, |c| c.addr),
            carry_out: carry_out.map_or(0, |c| c.addr),
        })
    }

    /// Checks that `view`, the operator's `what` array `i` ("input" or "output"), holds
    /// `want` elements.
    pub(crate) fn check_array_type(&self, view: &ArrayView, want: DType, what: &str, i: usize) -> Result<()> {
        if view.dtype() != want {
            bail!(
                InvalidArgument,
                "{what} {i} of operator {} must be a {} array, not {}",
                self.inner.desc.name,
                want.c_name(),
                view.dtype().c_name()
            );
        }
        Ok(())
    }

    /// The addresses of views passed as an operator's arrays, checked for type, shape
    /// and length, and the scan's length (the first output's elements).
    fn array_addresses(&self, inputs: &[ArrayView], outputs: &[ArrayView]) -> Result<(Vec<u64>, Vec<u64>, u64)> {
        let desc = &self.inner.desc;
        // Elements of `view` as array `i` of `types` (a U8 array of states without types).
        let elements = |view: &ArrayView, types: Option<&[DType]>, i: usize, what: &str| -> Result<u64> {
            let want = types.map_or(DType::U8, |t| t.get(i).copied().unwrap_or(DType::U8));
            self.check_array_type(view, want, what, i)?;
            if view.shape().len() != 1 || view.strides()[0] != 1 {
                bail!(
                    UnsupportedCombination,
                    "{what} {i} of operator {}: operator scans take 1-D contiguous arrays (shape {:?}, strides {:?})",
                    desc.name,
                    view.shape(),
                    view.strides()
                );
            }
            let len = view.len().unwrap_or(0);
            Ok(if types.is_some() {
                len
            } else {
                len / desc.state_size as u64
            })
        };
        let Some(first) = outputs.first() else {
            bail!(InvalidArgument, "operator {}: no output array", desc.name);
        };
        let n = elements(first, desc.output_types(), 0, "output")?;
        let addresses = |views: &[ArrayView], types: Option<&[DType]>, what: &str| -> Result<Vec<u64>> {
            let mut addrs = Vec::new();
            for (i, v) in views.iter().enumerate() {
                if elements(v, types, i, what)? < n {
                    bail!(
                        BufferTooSmall,
                        "{what} {i} of operator {} holds fewer than {n} elements",
                        desc.name
                    );
                }
                if what == "output" && !v.writable {
                    bail!(
                        InvalidArgument,
                        "output {i} of operator {} is a read-only view",
                        desc.name
                    );
                }
                addrs.push(v.addr());
            }
            Ok(addrs)
        };
        Ok((
            addresses(inputs, desc.input_types(), "input")?,
            addresses(outputs, desc.output_types(), "output")?,
            n,
        ))
    }
}

/// Whole-buffer views.
fn buffer_views<'a>(buffers: &[&'a Buffer]) -> Vec<ArrayView<'a>> {
    buffers.iter().map(|b| ArrayView::written_buffer(b)).collect()
}
