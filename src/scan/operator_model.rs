//! The one operator model every scan plan works with. A built-in operator over a type
//! pair ([`BuiltinOperator`], a predefined description, as CUB's functors are) and a
//! user-defined operator (`crate::operator`) both describe themselves to the plan by the
//! same trait: the state a scan carries, the arrays it reads and writes, where its kernel
//! sets come from, and how the host backend runs it.

use std::sync::Arc;

use crate::contract::StateBytes;
use crate::engine::GpuEngine;
use crate::error::{bail, Result};
use crate::kernels::LoadedSets;
use crate::runtime::calls::CallLabel;
use crate::scalar::InitValue;
use crate::scan::desc::{ScanDesc, ScanShape};
use crate::scan::kernels::{ScanFamily, ScanKernels, Specialization};
use crate::scan::strided::kernels::{StridedFamily, StridedKernelSet, StridedSpec};
use crate::scan::RawScan;
use crate::tables::{Algorithm, Direction, Op};
use crate::types::{DType, ScanTypes};

/// Element size and alignment of one array a scan reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArrayLayout {
    pub size: usize,
    pub align: usize,
}

impl ArrayLayout {
    /// The layout of an array of `dtype`.
    pub fn of(dtype: DType) -> ArrayLayout {
        ArrayLayout {
            size: dtype.size(),
            align: dtype.size(),
        }
    }
}

/// The addresses one execution of a plan scans: device addresses on a GPU context, host
/// addresses on the host backend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanArrays<'a> {
    /// One address per input array of the operator, in order.
    pub inputs: &'a [u64],
    /// One address per output array.
    pub outputs: &'a [u64],
    /// The segment flags or keys of a segmented scan; 0 otherwise.
    pub segments: u64,
    /// Inputs and outputs are scanrt buffers of the plan's context, of checked lengths,
    /// so the driver need not be asked about them again.
    pub known_arrays: bool,
    /// Likewise the segment data.
    pub known_segments: bool,
    /// Likewise the carries (`ScanPlan::execute_known`: a scan across GPUs' totals in
    /// scanrt's memory, and a total the caller passed, checked before with its part).
    /// Otherwise carries are asked of the driver whatever their arrays are: a host view's
    /// address beside buffers would reach the kernel.
    pub known_carries: bool,
    /// The index of the arrays' first element in the caller's arrays (nonzero for the
    /// pieces a host scan with carries per segment scans one at a time), which a load's
    /// `index` counts from.
    pub index_base: u64,
    /// The carries in device memory (host memory on the host backend).
    pub carries: Carries,
    /// How many consecutive states at `carries.carry_in` make the carry in, folded in the
    /// scan's traversal order (a rank's carry from the earlier ranks' totals, in a scan
    /// across GPUs); 0 and 1: the one state there. GPU plans only.
    pub carry_in_states: u32,
    /// Rows with a pitch (GPU plans of built-in scans of rows only).
    pub pitches: RowPitches,
}

impl<'a> ScanArrays<'a> {
    /// `inputs` and `outputs` with `carries`: unsegmented, every address still to be asked
    /// of the driver, indices from 0, rows without a pitch. Callers override the rest.
    pub fn new(inputs: &'a [u64], outputs: &'a [u64], carries: Carries) -> ScanArrays<'a> {
        ScanArrays {
            inputs,
            outputs,
            segments: 0,
            known_arrays: false,
            known_segments: false,
            known_carries: false,
            index_base: 0,
            carries,
            carry_in_states: 0,
            pitches: RowPitches::default(),
        }
    }
}

/// Rows with a pitch: elements between the starts of the input's rows and of the
/// output's, the rows' length being the scan's `Segments::Rows`; 0: the rows follow each
/// other. Only the bulk-copy kernel reads such rows (`api::pitched_rows` asks for it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RowPitches {
    pub input: u64,
    pub output: u64,
}

impl RowPitches {
    pub fn any(&self) -> bool {
        self.input != 0 || self.output != 0
    }
}

/// Where an unsegmented scan reads its initial state and writes its total, in memory
/// (device memory on a GPU), so that chunked, streaming and multi-GPU scans chain with
/// no host round trip. Each is one state of the scan's accumulator type (a user-defined
/// operator's state), aligned to it; 0: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Carries {
    /// The initial state's address (instead of the descriptor's initial value).
    pub carry_in: u64,
    /// Where the total goes: the initial state combined with every element, in traversal
    /// order (the initial state itself when nothing is scanned). May equal `carry_in`.
    pub carry_out: u64,
}

impl Carries {
    /// Whether either is given.
    pub fn any(&self) -> bool {
        self.carry_in != 0 || self.carry_out != 0
    }
}

/// What a scan plan needs of its operator.
pub(crate) trait OperatorModel: Send + Sync {
    /// Names the operator in error messages: "the scan" or "operator NAME".
    fn subject(&self) -> String;
    /// What a fault report names the call by.
    fn label(&self) -> CallLabel;
    /// Bytes of the state the scan carries between tiles (its look-back slots, its
    /// initial state).
    fn state_bytes(&self) -> usize;
    /// The state's alignment in bytes.
    fn state_align(&self) -> usize;
    /// The identity state's bytes.
    fn identity_bytes(&self) -> Vec<u8>;
    /// The arrays each element is read from, in order.
    fn inputs(&self) -> &[ArrayLayout];
    /// The arrays each result is written to, in order.
    fn outputs(&self) -> &[ArrayLayout];
    /// Whether the result may depend on the association order (then a determinism
    /// promise needs the fixed-order look-back).
    fn order_sensitive(&self) -> bool;
    /// The kernel set that runs `algorithm` over `n` elements as `shape` says, loaded
    /// (compiled on first use) on `engine`.
    fn kernels(&self, engine: &GpuEngine, shape: &ScanShape, algorithm: Algorithm, n: u64) -> Result<Arc<ScanKernels>>;
    /// The strided scan's kernel set (scans along an axis of strided views) for
    /// `direction`, loaded (compiled on first use) on `engine`.
    fn strided_kernels(&self, engine: &GpuEngine, direction: Direction) -> Result<Arc<StridedKernelSet>>;
    /// The strided kernel set that builds summed-area tables (built-in operators only).
    fn summed_area_kernels(&self, _engine: &GpuEngine) -> Result<Arc<StridedKernelSet>> {
        bail!(
            UnsupportedCombination,
            "summed-area tables are built with the built-in operators"
        )
    }
    /// Whether its kernels take `contract::OperatorParams` after `ScanParams` (or
    /// `StridedParams`).
    fn takes_operator_params(&self) -> bool;
    /// Runs the scan on the host backend; returns the total state (what a carry out
    /// receives: its first `state_bytes()` bytes), without allocating for it.
    ///
    /// # Safety
    /// The arrays passed the plan's checks and hold `n` elements of their layouts (the
    /// segment data as `shape.segments` says).
    unsafe fn scan_on_host(&self, arrays: &ScanArrays, n: u64, shape: &ScanShape) -> Result<StateBytes>;
}

/// A built-in operator (`Op`) over its scan's types, a triple `ScanTypes::check`
/// accepted (`Context::plan`), on plain elements or, on a GPU, on rows of lanes.
pub(crate) struct BuiltinOperator {
    pub op: Op,
    pub types: ScanTypes,
    /// Elements are rows of this many lanes of one type, each lane its own column
    /// (`scan::strided::lanes`); 1: plain elements.
    lanes: u32,
    layouts: [ArrayLayout; 2],
}

impl BuiltinOperator {
    pub fn new(op: Op, types: ScanTypes) -> BuiltinOperator {
        BuiltinOperator {
            op,
            types,
            lanes: 1,
            layouts: [ArrayLayout::of(types.input), ArrayLayout::of(types.output)],
        }
    }

    /// `op` applied lane by lane to rows of `lanes` elements of one type (`types` one
    /// type throughout): a row is one element, of the row's bytes, aligned as one
    /// element of the type. GPU kernels only.
    pub fn on_lanes(op: Op, types: ScanTypes, lanes: u32) -> BuiltinOperator {
        debug_assert!(types.one_type() && lanes > 1);
        let row = ArrayLayout {
            size: types.input.size() * lanes as usize,
            align: types.input.size(),
        };
        BuiltinOperator {
            op,
            types,
            lanes,
            layouts: [row, row],
        }
    }

    /// Refuses rows of lanes where only plain elements are scanned: the host backend and
    /// the strided kernels (`scan::strided` hands rows of lanes to the flat GPU scan alone).
    fn plain_elements(&self) -> Result<()> {
        if self.lanes > 1 {
            bail!(
                WrongBackend,
                "rows of {} lanes are scanned by the GPU's flat kernels only",
                self.lanes
            );
        }
        Ok(())
    }

    /// The descriptor of a scan with this operator shaped as `shape`.
    fn desc(&self, shape: &ScanShape) -> ScanDesc {
        ScanDesc {
            op: self.op,
            inclusive: shape.inclusive,
            init: shape
                .init
                .map(|init| InitValue::from_bits(self.types.accumulator, init.words[0])),
            accumulator: Some(self.types.accumulator),
            algorithm: shape.algorithm,
            direction: shape.direction,
            deterministic: shape.deterministic,
            segments: shape.segments,
        }
    }
}

impl OperatorModel for BuiltinOperator {
    fn subject(&self) -> String {
        "the scan".into()
    }

    fn label(&self) -> CallLabel {
        CallLabel::Builtin {
            op: self.op.describe(),
            input: self.types.input.describe(),
            output: self.types.output.describe(),
        }
    }

    fn state_bytes(&self) -> usize {
        self.types.accumulator.size() * self.lanes as usize
    }

    fn state_align(&self) -> usize {
        self.types.accumulator.size()
    }

    fn identity_bytes(&self) -> Vec<u8> {
        let bits = crate::scan::host::identity_bits(self.types, self.op);
        let one = &StateBytes::from_bits(bits).bytes()[..self.types.accumulator.size()];
        one.repeat(self.lanes as usize)
    }

    fn inputs(&self) -> &[ArrayLayout] {
        &self.layouts[..1]
    }

    fn outputs(&self) -> &[ArrayLayout] {
        &self.layouts[1..]
    }

    fn order_sensitive(&self) -> bool {
        ScanDesc::inclusive(self.op).order_sensitive(self.types.accumulator)
    }

    fn kernels(
        &self,
        engine: &GpuEngine,
        shape: &ScanShape,
        _algorithm: Algorithm,
        n: u64,
    ) -> Result<Arc<ScanKernels>> {
        let dev = &engine.device;
        let spec = Specialization::for_scan(dev.arch, self.types, self.lanes, &self.desc(shape), n);
        engine.algorithms.get::<LoadedSets<ScanFamily>>().get(dev, &spec)
    }

    fn strided_kernels(&self, engine: &GpuEngine, direction: Direction) -> Result<Arc<StridedKernelSet>> {
        self.plain_elements()?;
        let spec = StridedSpec {
            types: self.types,
            op: self.op,
            direction,
            summed_area: false,
        };
        engine
            .algorithms
            .get::<LoadedSets<StridedFamily>>()
            .get(&engine.device, &spec)
    }

    fn summed_area_kernels(&self, engine: &GpuEngine) -> Result<Arc<StridedKernelSet>> {
        self.plain_elements()?;
        let spec = StridedSpec {
            types: self.types,
            op: self.op,
            direction: Direction::Forward,
            summed_area: true,
        };
        engine
            .algorithms
            .get::<LoadedSets<StridedFamily>>()
            .get(&engine.device, &spec)
    }

    fn takes_operator_params(&self) -> bool {
        false
    }

    unsafe fn scan_on_host(&self, arrays: &ScanArrays, n: u64, shape: &ScanShape) -> Result<StateBytes> {
        self.plain_elements()?;
        let req = RawScan {
            input: arrays.inputs[0],
            input_dtype: self.types.input,
            output: arrays.outputs[0],
            output_dtype: self.types.output,
            n,
            segments: arrays.segments,
        };
        let total = crate::scan::host::scan(&req, &self.desc(shape))?;
        Ok(StateBytes::from_bits(total))
    }
}
