//! What a scan computes: the descriptor and its segment forms.

use crate::contract::StateBytes;
use crate::error::{bail, Result};
use crate::scalar::{InitValue, Scalar};
use crate::tables::{Algorithm, Direction, Op, SegmentKind};
use crate::types::{DType, ScanTypes};

/// How a segmented scan is told where segments start. The data (flags or keys, one
/// entry per element, in memory order) travels beside the input: [`RawScan::segments`](crate::RawScan).
/// A backward scan uses the same segments, traversed from their ends: a start flag
/// marks where its backward traversal stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Segments {
    /// One scan over the whole input.
    #[default]
    None,
    /// One byte per element; nonzero starts a segment.
    ByteFlags,
    /// Flags packed 32 to a `u32` word: bit i of word w is element 32·w + i.
    BitFlags,
    /// Scan by key: runs of equal consecutive keys of this type (u32, i32, u64, i64).
    Keys(DType),
    /// Rows of this many elements (a batch of equal-length sequences); no segment data.
    Rows(u64),
    /// Segments by offsets, a CSR array of `count` offsets of type `dtype` (u32, i32, u64,
    /// i64): segment i is `[offsets[i], offsets[i+1])`. Each offset below n starts a
    /// segment (element 0 always starts one); repeated offsets are empty segments; offsets
    /// at or past n, and negative ones, start nothing.
    Offsets {
        /// The offsets' type.
        dtype: DType,
        /// How many offsets (the segments and one).
        count: u64,
    },
}

impl Segments {
    /// The C table's kind of this form.
    pub fn kind(self) -> SegmentKind {
        match self {
            Segments::None => SegmentKind::None,
            Segments::ByteFlags => SegmentKind::ByteFlags,
            Segments::BitFlags => SegmentKind::BitFlags,
            Segments::Keys(_) => SegmentKind::Keys,
            Segments::Rows(_) => SegmentKind::Rows,
            Segments::Offsets { .. } => SegmentKind::Offsets,
        }
    }
    /// The form of `kind`, with `key` the type of keys or offsets and `length` the row
    /// length of `SegmentKind::Rows` or the number of offsets of `SegmentKind::Offsets`.
    pub fn of_kind(kind: SegmentKind, key: DType, length: u64) -> Segments {
        match kind {
            SegmentKind::None => Segments::None,
            SegmentKind::ByteFlags => Segments::ByteFlags,
            SegmentKind::BitFlags => Segments::BitFlags,
            SegmentKind::Keys => Segments::Keys(key),
            SegmentKind::Rows => Segments::Rows(length),
            SegmentKind::Offsets => Segments::Offsets {
                dtype: key,
                count: length,
            },
        }
    }
    /// Whether the segments come as data beside the input (flags or keys).
    pub fn has_data(self) -> bool {
        !matches!(self, Segments::None | Segments::Rows(_))
    }
    /// Bytes of segment data for `n` elements (None when it overflows).
    pub fn data_bytes(self, n: u64) -> Option<u64> {
        match self {
            Segments::None | Segments::Rows(_) => Some(0),
            Segments::ByteFlags => Some(n),
            Segments::BitFlags => n.div_ceil(32).checked_mul(4),
            Segments::Keys(k) => n.checked_mul(k.size() as u64),
            Segments::Offsets { dtype, count } => count.checked_mul(dtype.size() as u64),
        }
    }
    pub(crate) fn check(self) -> Result<()> {
        if self == Segments::Rows(0) {
            bail!(InvalidArgument, "rows of length 0: a row length is at least 1");
        }
        let (what, t) = match self {
            Segments::Keys(k) => ("keys", k),
            Segments::Offsets { dtype, .. } => ("offsets", dtype),
            _ => return Ok(()),
        };
        if !matches!(t, DType::I32 | DType::U32 | DType::I64 | DType::U64) {
            bail!(
                UnsupportedCombination,
                "{what} of type {} are not supported; use u32, i32, u64 or i64 {what}",
                t.c_name()
            );
        }
        Ok(())
    }
    /// The C enum constant's name, as error messages spell it (keys name their type).
    pub fn c_name(self) -> String {
        match self {
            Segments::Keys(k) => format!("{} of {}", self.kind().c_name(), k.c_name()),
            Segments::Rows(len) => format!("{} of {len}", self.kind().c_name()),
            Segments::Offsets { dtype, count } => format!("{} ({count} of {})", self.kind().c_name(), dtype.c_name()),
            _ => self.kind().c_name().into(),
        }
    }
    /// Required alignment of the segment data, in bytes.
    pub fn alignment(self) -> u64 {
        match self {
            Segments::None | Segments::ByteFlags | Segments::Rows(_) => 1,
            Segments::BitFlags => 4,
            Segments::Keys(k) | Segments::Offsets { dtype: k, .. } => k.size() as u64,
        }
    }
}

/// How a scan runs, whatever its operator: what a [`ScanDesc`] or an
/// [`OperatorScan`](crate::OperatorScan) says besides the operator, with the initial state
/// as its bytes. The plan (`scan::plan`) works with it alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScanShape {
    pub inclusive: bool,
    /// The initial state; `None`: the operator's identity.
    pub init: Option<StateBytes>,
    pub algorithm: Algorithm,
    pub direction: Direction,
    pub deterministic: bool,
    pub segments: Segments,
}

/// What to compute: `out[i] = init . in[0] . ... . in[i]` (inclusive) or
/// `out[i] = init . in[0] . ... . in[i-1]` (exclusive, `out[0] = init`), where `.` is
/// `op` in the accumulator type (the output type by default) and `init` defaults to the operator's identity. Backward
/// scans run the same recurrence from the last element; segmented scans run it within
/// each segment, every segment starting from `init`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanDesc {
    /// The operator.
    pub op: Op,
    /// Inclusive (element i includes input i) or exclusive.
    pub inclusive: bool,
    /// The initial value; `None` = the operator's identity. Its type must be the
    /// accumulator type (checked when the scan is validated).
    pub init: Option<InitValue>,
    /// The type the operator combines in; `None` = the output type. A wider one (a row
    /// of [`NARROWING_TYPES`](crate::NARROWING_TYPES), e.g. f32 data summed in f64) is
    /// narrowed to the output type as each result is written.
    pub accumulator: Option<DType>,
    /// The algorithm asked for (`Auto`: the fastest that keeps the promises).
    pub algorithm: Algorithm,
    /// Forward (from element 0) or backward (from the last).
    pub direction: Direction,
    /// Bitwise identical results on every run (same GPU architecture and library
    /// version), whatever the scheduling. Costs nothing where the operator does not
    /// depend on association order.
    pub deterministic: bool,
    /// How segments are given, if the scan is segmented.
    pub segments: Segments,
}

impl Default for ScanDesc {
    fn default() -> Self {
        ScanDesc {
            op: Op::Sum,
            inclusive: true,
            init: None,
            accumulator: None,
            algorithm: Algorithm::Auto,
            direction: Direction::Forward,
            deterministic: false,
            segments: Segments::None,
        }
    }
}

impl ScanDesc {
    /// An inclusive forward scan with `op` (element i includes input i).
    pub fn inclusive(op: Op) -> Self {
        ScanDesc {
            op,
            ..Default::default()
        }
    }
    /// An exclusive forward scan with `op` (element i combines the inputs before i).
    pub fn exclusive(op: Op) -> Self {
        ScanDesc {
            op,
            inclusive: false,
            ..Default::default()
        }
    }
    /// Starts the scan (every segment of a segmented scan) from `init`, a value of the
    /// scan's accumulator type (the output type unless [`ScanDesc::accumulate_in`] says
    /// otherwise): a scan whose accumulator type differs fails with `InvalidArgument`.
    pub fn with_init<T: Scalar>(mut self, init: T) -> Self {
        self.init = Some(InitValue::of(init));
        self
    }
    /// Combines in `accumulator` and narrows each result to the output type (a row of
    /// [`NARROWING_TYPES`](crate::NARROWING_TYPES)).
    pub fn accumulate_in(mut self, accumulator: DType) -> Self {
        self.accumulator = Some(accumulator);
        self
    }
    /// The types of a scan of `input` into `output` as this descriptor says.
    pub fn types(&self, input: DType, output: DType) -> ScanTypes {
        ScanTypes::new(input, output, self.accumulator)
    }
    /// What the descriptor says besides the operator, for a scan of `types` (the initial
    /// value checked against them).
    pub(crate) fn shape(&self, types: ScanTypes) -> Result<ScanShape> {
        Ok(ScanShape {
            inclusive: self.inclusive,
            init: self.init_bits(types)?.map(StateBytes::from_bits),
            algorithm: self.algorithm,
            direction: self.direction,
            deterministic: self.deterministic,
            segments: self.segments,
        })
    }
    /// The initial value's bits as the accumulator type, checked against it (and, for a
    /// scan written as an 8- or 16-bit integer, a value of that type).
    pub(crate) fn init_bits(&self, types: ScanTypes) -> Result<Option<u64>> {
        let accumulator = types.accumulator;
        let Some(v) = self.init else { return Ok(None) };
        if v.dtype() != accumulator {
            bail!(
                InvalidArgument,
                "the initial value is a {} but the scan accumulates in {}",
                v.dtype().c_name(),
                accumulator.c_name()
            );
        }
        if let Some((lowest, highest)) = types.narrowed_integer_range() {
            // The accumulator is a 32-bit integer of the output's signedness.
            let value = match accumulator {
                DType::I32 => v.bits() as u32 as i32 as i64,
                _ => v.bits() as u32 as i64,
            };
            if !(lowest..=highest).contains(&value) {
                bail!(
                    InvalidArgument,
                    "the initial value {value} does not fit the output type {}",
                    types.output.c_name()
                );
            }
        }
        Ok(Some(v.bits()))
    }
    /// Runs `algorithm` (else the fastest one that keeps the descriptor's promises).
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    /// Traverses from the last element to the first.
    pub fn backward(mut self) -> Self {
        self.direction = Direction::Backward;
        self
    }
    /// Asks for bitwise identical results on every run.
    pub fn deterministic(mut self) -> Self {
        self.deterministic = true;
        self
    }
    /// Restarts the scan at each segment, given as `segments` says.
    pub fn segmented(mut self, segments: Segments) -> Self {
        self.segments = segments;
        self
    }
    /// Whether the result can depend on the association order: float sums and products
    /// (`accumulator`: the type the operator combines in).
    pub fn order_sensitive(&self, accumulator: DType) -> bool {
        accumulator.is_float() && self.op.definition().float_order_sensitive
    }
}
