//! The scan entry points of a context: planning, workspace sizes, and scans of buffers,
//! raw addresses and cudarc slices. Each is a plan (`scan::plan`) executed once.

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

use crate::array::{ArrayView, AxisLayout};
use crate::buffer::Buffer;
use crate::context::Context;
use crate::engine::Engine;
use crate::error::{bail, Result};
use crate::kernels::LoadedSets;
use crate::runtime::device::LoadedKernel;
use crate::runtime::workspace::Workspace;
use crate::scalar::Scalar;
use crate::scan::carry_views::CarryViews;
use crate::scan::checks::check_segment_view;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::kernels::{ScanFamily, Specialization};
use crate::scan::operator_model::{BuiltinOperator, Carries};
use crate::scan::plan::{PlanOperator, ScanIo, ScanPlan};
use crate::scan::strided;
use crate::scan::translation_unit::KernelKind;
use crate::scan::{RawScan, ScanInfo, TileLengths};
use crate::stream::Stream;
use crate::tables::Op;
use crate::types::{DType, ScanTypes};

impl Context {
    /// Compiles (or loads from the disk cache) the kernels for a type pair and operator
    /// ahead of the first scan. A no-op on the host backend.
    pub fn prepare(&self, input: DType, output: DType, op: Op) -> Result<()> {
        let types = ScanTypes::new(input, output, None);
        types.check(op)?;
        if let Engine::Gpu(engine) = self.engine() {
            let d = &engine.device;
            let _current = d.enter()?;
            let (regular, small) = Specialization::all_for(d.arch, types, &ScanDesc::inclusive(op));
            let sets = engine.algorithms.get::<LoadedSets<ScanFamily>>();
            for spec in std::iter::once(regular).chain(small) {
                sets.get(d, &spec)?;
            }
        }
        Ok(())
    }

    /// A one-line description of the kernels a type pair and operator use on this
    /// context (tile shapes, resources, where the tuning comes from), compiling them if
    /// needed.
    pub fn kernel_report(&self, input: DType, output: DType, op: Op) -> Result<String> {
        let types = ScanTypes::new(input, output, None);
        types.check(op)?;
        let engine = self.gpu_engine()?;
        let d = &engine.device;
        let _current = d.enter()?;
        let (regular, _) = Specialization::all_for(d.arch, types, &ScanDesc::inclusive(op));
        let set = engine.algorithms.get::<LoadedSets<ScanFamily>>().get(d, &regular)?;
        let s = set.shape;
        let describe = |k: &LoadedKernel| -> Result<String> {
            let f = &k.function;
            Ok(format!(
                "{} resident blocks, {} registers, {} B local (spills), {} B static + {} B dynamic shared",
                k.resident_blocks,
                f.num_regs()?,
                f.local_size_bytes()?,
                f.shared_size_bytes()?,
                k.shared_bytes
            ))
        };
        let bulk = match set.get(KernelKind::SinglePassBulk) {
            Some(k) => format!(
                "; bulk-copy single pass from {} tiles ({} buffers of {} items): {}",
                s.bulk_min_tiles,
                s.bulk_buffers,
                s.bulk_tile_elems(),
                describe(k)?
            ),
            None => String::new(),
        };
        let wave = match set.get(KernelKind::SinglePassWave) {
            Some(k) => format!(
                "; one-wave single pass ({} per tile, look-back {} slots per lane): {}",
                s.wave_tile_elems(),
                s.wave_lookback_slots_per_lane,
                describe(k)?
            ),
            None => String::new(),
        };
        let single_pass = set.get(KernelKind::SinglePass).expect("every kernel set has one");
        Ok(format!(
            "{}x{} items ({} per tile), look-back {} slots per lane, spin {} then sleep {} ns, min blocks/SM {}, \
             persistent {}; single pass: {}{bulk}{wave}; tuning: {}",
            s.threads,
            s.items,
            s.tile_elems(),
            s.lookback_slots_per_lane,
            s.spin_before_sleep,
            s.sleep_ns,
            s.min_blocks_per_sm,
            s.persistent,
            describe(single_pass)?,
            crate::scan::tuning::provenance(d.arch)
        ))
    }

    /// The tile lengths, in elements, of the kernels that scan `input` into `output` as
    /// `desc` says on this context (0 where there is no such kernel). Sizes around them
    /// are the edge cases of the look-back and of the kernel choice; tests and
    /// benchmarks use them. Compiles nothing: the lengths are tuning data.
    pub fn tile_lengths(&self, input: DType, output: DType, desc: &ScanDesc) -> Result<TileLengths> {
        let types = desc.types(input, output);
        types.check(desc.op)?;
        let (regular, _) = Specialization::all_for(self.gpu()?.arch, types, desc);
        let s = regular.shape;
        let length = |kind, elems| if regular.has(kind) { elems } else { 0 };
        Ok(TileLengths {
            register_staged: s.tile_elems(),
            bulk: length(KernelKind::SinglePassBulk, s.bulk_tile_elems()),
            wave: length(KernelKind::SinglePassWave, s.wave_tile_elems()),
            cluster: length(KernelKind::ClusterScan, s.cluster_tile_elems()),
            cluster_blocks: length(KernelKind::ClusterScan, s.cluster_max_blocks as u64) as u32,
        })
    }

    /// Plans a scan of `n` elements of `input` into `output` as `desc` says: validates
    /// it, chooses the algorithm and, on a GPU, loads its kernels and sizes its
    /// workspace. Execute it with [`ScanPlan::execute`] (any number of times).
    pub fn plan(&self, input: DType, output: DType, n: u64, desc: &ScanDesc) -> Result<ScanPlan> {
        // The types before the initial value, whose type is the accumulator's.
        let types = desc.types(input, output);
        types.check(desc.op)?;
        let shape = desc.shape(types)?;
        let operator = PlanOperator::Builtin(BuiltinOperator::new(desc.op, types));
        ScanPlan::new(self, operator, n, shape)
    }

    /// Bytes of workspace [`Context::scan_raw`] needs for `req` when given one (0 = none).
    pub fn workspace_size(&self, req: &RawScan, desc: &ScanDesc) -> Result<usize> {
        Ok(self
            .plan(req.input_dtype, req.output_dtype, req.n, desc)?
            .workspace_bytes())
    }

    /// The scan over raw addresses: device pointers on a GPU context, host pointers on
    /// the host backend; a plan executed once. Asynchronous on `stream` for the GPU. Bad
    /// input returns an error before anything is written.
    ///
    /// # Safety
    /// On the host backend the pointers must be valid for `n` elements. On a GPU the
    /// driver checks that they are device memory large enough, but they must stay
    /// allocated until the scan completes on the stream.
    pub unsafe fn scan_raw(
        &self,
        stream: &Stream,
        req: &RawScan,
        desc: &ScanDesc,
        workspace: Option<Workspace>,
    ) -> Result<ScanInfo> {
        self.check_stream_owner(stream)?;
        let io = ScanIo::new(req.input, req.output).with_segments(req.segments);
        self.plan(req.input_dtype, req.output_dtype, req.n, desc)?
            .execute(stream, &io, workspace)
    }

    /// Scans `input` into `output` (scanrt buffers of this context; pass the same buffer
    /// twice to scan in place). The output is written through a shared reference because
    /// its memory is device memory ordered by the stream, not Rust-owned data.
    pub fn scan(&self, stream: &Stream, input: &Buffer, output: &Buffer, desc: &ScanDesc) -> Result<ScanInfo> {
        let (input, output) = self.buffer_views(input, output)?;
        self.scan_views(stream, &input, &output, None, -1, desc, &CarryViews::default())
    }

    /// A segmented scan (`desc.segments` says how `segments` is read): byte flags in a
    /// `U8` buffer, bit flags in a `U32` buffer, keys in a buffer of the key type.
    pub fn scan_segmented(
        &self,
        stream: &Stream,
        input: &Buffer,
        segments: &Buffer,
        output: &Buffer,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        self.check_buffer_owner(segments)?;
        let (input, output) = self.buffer_views(input, output)?;
        let segments = ArrayView::written_buffer(segments);
        self.scan_views(
            stream,
            &input,
            &output,
            Some(&segments),
            -1,
            desc,
            &CarryViews::default(),
        )
    }

    /// Scans `input` along `axis` (negative: from the last, as NumPy counts) into
    /// `output`, a view of the same shape: a 1-D array, or each row of a row-major array
    /// along its last axis (the batched-rows scan). Views that no kernel scans yet
    /// (strided, along an earlier axis) fail with `UnsupportedCombination`.
    pub fn scan_array(
        &self,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        axis: isize,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        self.scan_views(stream, input, output, None, axis, desc, &CarryViews::default())
    }

    /// [`Context::scan_array`] with carries in memory (device memory on a GPU): the scan
    /// starts from `carries.carry_in` and writes its total (the initial value combined
    /// with every element, in traversal order) to `carries.carry_out`, so that chunked,
    /// streaming and multi-GPU scans chain on the device. Unsegmented scans only.
    pub fn scan_array_carried(
        &self,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        axis: isize,
        desc: &ScanDesc,
        carries: &CarryViews,
    ) -> Result<ScanInfo> {
        self.scan_views(stream, input, output, None, axis, desc, carries)
    }

    /// A segmented scan of 1-D views: `segments` holds byte flags (`U8`), bit flags
    /// (`U32` words) or keys (the key type), as `desc.segments` says.
    pub fn scan_array_segmented(
        &self,
        stream: &Stream,
        input: &ArrayView,
        segments: &ArrayView,
        output: &ArrayView,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        self.scan_views(stream, input, output, Some(segments), -1, desc, &CarryViews::default())
    }

    /// [`Context::scan_array_segmented`] with carries per segment, for segments by offsets
    /// (`Segments::Offsets`: segment s is `[offsets[s], offsets[s + 1])`, one fewer
    /// segments than offsets): segment s starts from `carries.carry_in[s]` (else from the
    /// descriptor's initial value) and its total, the initial value combined with its
    /// elements in traversal order, goes to `carries.carry_out[s]` (an empty segment's is
    /// its initial value). The offsets must not decrease (on a GPU, where they do, which
    /// segment's carries an element takes is unspecified); elements before the first
    /// offset and from the last form segments of their own, with no carries. The two
    /// carry views must not overlap. A varlen batch of recurrences with an initial and a
    /// final state per sequence is one such call.
    pub fn scan_array_segmented_carried(
        &self,
        stream: &Stream,
        input: &ArrayView,
        segments: &ArrayView,
        output: &ArrayView,
        desc: &ScanDesc,
        carries: &CarryViews,
    ) -> Result<ScanInfo> {
        self.scan_views(stream, input, output, Some(segments), -1, desc, carries)
    }

    /// The addresses of a scan of buffers of this context (their lengths checked).
    pub(crate) fn buffer_io(&self, input: &Buffer, output: &Buffer) -> Result<ScanIo> {
        let (input, output) = self.buffer_views(input, output)?;
        Ok(ScanIo {
            input: input.addr(),
            output: output.addr(),
            segments: 0,
            known_buffers: true,
            known_segments: false,
            carries: Carries::default(),
            pitches: Default::default(),
        })
    }

    /// Views of the buffers of a buffer scan: the output is seen at the input's length
    /// (it may be longer).
    fn buffer_views<'a>(&self, input: &'a Buffer, output: &'a Buffer) -> Result<(ArrayView<'a>, ArrayView<'a>)> {
        self.check_buffer_owner(input)?;
        self.check_buffer_owner(output)?;
        if output.len() < input.len() {
            bail!(
                BufferTooSmall,
                "output holds {} elements but the input has {}",
                output.len(),
                input.len()
            );
        }
        Ok((
            ArrayView::written_buffer(input),
            ArrayView::written_buffer_shaped(output, &[input.len()])?,
        ))
    }

    /// Every scan of views: the layout along the axis, the segment data's type and
    /// length, then a plan executed once.
    #[allow(clippy::too_many_arguments)]
    fn scan_views(
        &self,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        segments: Option<&ArrayView>,
        axis: isize,
        desc: &ScanDesc,
        carries: &CarryViews,
    ) -> Result<ScanInfo> {
        input.check_output(output)?;
        let mut desc = *desc;
        let carried = carries.carry_in.is_some() || carries.carry_out.is_some();
        // Carries of an array of several dimensions are one per sequence: the strided
        // scan's, whatever the layout.
        let per_sequence = carried && input.shape().len() > 1;
        let n = match (input.axis_layout(axis)?, output.axis_layout(axis)?) {
            (AxisLayout::Flat { n }, AxisLayout::Flat { .. }) if !per_sequence => n,
            (AxisLayout::Rows { rows, len }, AxisLayout::Rows { .. }) if !per_sequence => {
                if desc.segments != Segments::None {
                    bail!(
                        InvalidArgument,
                        "a scan along the last axis of a {}-D array restarts at each row already; \
                         segment 1-D arrays only (or scan rows with Segments::Rows)",
                        input.shape().len()
                    );
                }
                desc.segments = Segments::Rows(len);
                rows * len
            }
            _ => {
                if segments.is_some() {
                    bail!(
                        UnsupportedCombination,
                        "segments apply to 1-D contiguous arrays; this scan runs along an axis of a strided array"
                    );
                }
                return strided::scan(self, stream, input, output, input.normal_axis(axis)?, &desc, carries);
            }
        };
        let segment_addr = match (segments, desc.segments) {
            (Some(s), kind) => {
                check_segment_view(s, kind, n)?;
                s.addr()
            }
            (None, kind) if kind.has_data() => bail!(
                InvalidArgument,
                "{} segments need their data: call the segmented scan",
                kind.c_name()
            ),
            (None, _) => 0,
        };
        let plan = self.plan(input.dtype(), output.dtype(), n, &desc)?;
        let io = ScanIo {
            input: input.addr(),
            output: output.addr(),
            segments: segment_addr,
            known_buffers: {
                // Both asked: a view of another context's buffer is refused whatever the
                // other view is.
                let input_known = input.known_to(self.id())?;
                output.known_to(self.id())? && input_known
            },
            known_segments: match segments {
                Some(s) => s.known_to(self.id())?,
                None => false,
            },
            carries: carries.addresses(
                desc.types(input.dtype(), output.dtype()).accumulator,
                self.id(),
                match desc.segments {
                    Segments::Offsets { count, .. } => count.saturating_sub(1),
                    _ => 1,
                },
            )?,
            pitches: Default::default(),
        };
        // SAFETY: views are valid for their shapes: borrowed buffers and slices by
        // construction, raw addresses by their constructors' contracts; the output's
        // shape is the input's, the segment data's type and length were checked.
        unsafe { plan.execute(stream, &io, None) }
    }

    /// Scans cudarc slices directly (GPU contexts). The slices must live on this
    /// context's device. The scan runs on `stream`; order it after the slices' own
    /// cudarc stream yourself (for example by passing that stream to `borrow_stream`).
    pub fn scan_cuda<I: Scalar + cudarc::driver::DeviceRepr, O: Scalar + cudarc::driver::DeviceRepr>(
        &self,
        stream: &Stream,
        input: &CudaSlice<I>,
        output: &mut CudaSlice<O>,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        if output.len() < input.len() {
            bail!(
                BufferTooSmall,
                "output holds {} elements, input {}",
                output.len(),
                input.len()
            );
        }
        let cuda_stream = input.stream().clone();
        let (in_ptr, _r) = input.device_ptr(&cuda_stream);
        let (out_ptr, _w) = output.device_ptr_mut(&cuda_stream);
        let req = RawScan {
            input: in_ptr,
            input_dtype: I::DTYPE,
            output: out_ptr,
            output_dtype: O::DTYPE,
            n: input.len() as u64,
            segments: 0,
        };
        // SAFETY: the slices are live allocations (range-checked by the driver query).
        unsafe { self.scan_raw(stream, &req, desc, None) }
    }
}
