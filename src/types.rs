//! Element types, operators and the scan description.

use crate::error::{bail, Result};

/// Element types. Discriminants are the C ABI values.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 8-bit unsigned integer (input only).
    U8 = 0,
    /// 32-bit signed integer.
    I32 = 1,
    /// 32-bit unsigned integer.
    U32 = 2,
    /// 64-bit signed integer.
    I64 = 3,
    /// 64-bit unsigned integer.
    U64 = 4,
    /// IEEE-754 binary32.
    F32 = 5,
    /// IEEE-754 binary64.
    F64 = 6,
}

impl DType {
    /// Every element type.
    ///
    /// cbindgen:ignore
    pub const ALL: [DType; 7] = [
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    /// The CUDA C++ spelling used in kernel specialisations (see kernels/util/types.cuh).
    pub fn cuda_name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    /// The C enum constant's name (`SCANRT_DTYPE_F32`), as error messages spell it.
    pub fn c_name(self) -> &'static str {
        match self {
            DType::U8 => "SCANRT_DTYPE_U8",
            DType::I32 => "SCANRT_DTYPE_I32",
            DType::U32 => "SCANRT_DTYPE_U32",
            DType::I64 => "SCANRT_DTYPE_I64",
            DType::U64 => "SCANRT_DTYPE_U64",
            DType::F32 => "SCANRT_DTYPE_F32",
            DType::F64 => "SCANRT_DTYPE_F64",
        }
    }
    pub(crate) fn from_raw(v: i32) -> Result<DType> {
        Ok(match v {
            0 => DType::U8,
            1 => DType::I32,
            2 => DType::U32,
            3 => DType::I64,
            4 => DType::U64,
            5 => DType::F32,
            6 => DType::F64,
            _ => bail!(InvalidArgument, "unknown dtype value {v}"),
        })
    }
}

/// Scan operators. Discriminants are the C ABI values and the kernels' `SCANRT_OP_*`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Addition (integers wrap).
    Sum = 0,
    /// Multiplication (integers wrap).
    Product = 1,
    /// Minimum (keeps the earlier operand on ties and NaN).
    Min = 2,
    /// Maximum (keeps the earlier operand on ties and NaN).
    Max = 3,
    /// Bitwise and (integers only).
    BitAnd = 4,
    /// Bitwise or (integers only).
    BitOr = 5,
    /// Bitwise xor (integers only).
    BitXor = 6,
}

impl Op {
    /// Every operator.
    ///
    /// cbindgen:ignore
    pub const ALL: [Op; 7] = [
        Op::Sum,
        Op::Product,
        Op::Min,
        Op::Max,
        Op::BitAnd,
        Op::BitOr,
        Op::BitXor,
    ];
    pub fn is_bitwise(self) -> bool {
        matches!(self, Op::BitAnd | Op::BitOr | Op::BitXor)
    }
    /// The C enum constant's name (`SCANRT_OP_BIT_XOR`), as error messages spell it.
    pub fn c_name(self) -> &'static str {
        match self {
            Op::Sum => "SCANRT_OP_SUM",
            Op::Product => "SCANRT_OP_PRODUCT",
            Op::Min => "SCANRT_OP_MIN",
            Op::Max => "SCANRT_OP_MAX",
            Op::BitAnd => "SCANRT_OP_BIT_AND",
            Op::BitOr => "SCANRT_OP_BIT_OR",
            Op::BitXor => "SCANRT_OP_BIT_XOR",
        }
    }
    pub(crate) fn from_raw(v: i32) -> Result<Op> {
        Ok(match v {
            0 => Op::Sum,
            1 => Op::Product,
            2 => Op::Min,
            3 => Op::Max,
            4 => Op::BitAnd,
            5 => Op::BitOr,
            6 => Op::BitXor,
            _ => bail!(InvalidArgument, "unknown operator value {v}"),
        })
    }
}

/// Which algorithm runs a scan.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// scanrt picks; the scan reports what it picked and why (a choice reason).
    #[default]
    Auto = 0,
    /// Single-pass decoupled look-back (one launch, ~2n traffic).
    SinglePass = 1,
    /// Matrix reduce-then-scan (three launches, ~3n traffic, timing-independent order).
    Matrix = 2,
    /// The CPU backend (only reported, never requested on a GPU context).
    Host = 3,
    /// Single-pass look-back whose association order is fixed (anchor tiles): bitwise
    /// reproducible float results at near single-pass speed.
    DeterministicSinglePass = 4,
}

impl Algorithm {
    pub(crate) fn from_raw(v: i32) -> Result<Algorithm> {
        Ok(match v {
            0 => Algorithm::Auto,
            1 => Algorithm::SinglePass,
            2 => Algorithm::Matrix,
            3 => Algorithm::Host,
            4 => Algorithm::DeterministicSinglePass,
            _ => bail!(InvalidArgument, "unknown algorithm value {v}"),
        })
    }
}

/// Why a scan ran the algorithm it ran (reported beside the algorithm after every call).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChoiceReason {
    /// The descriptor named the algorithm.
    Requested = 0,
    /// `SCANRT_ALGORITHM_AUTO`: the single-pass look-back is the fastest path at every size.
    Fastest = 1,
    /// `SCANRT_ALGORITHM_AUTO` with `deterministic`: the result does not depend on association order
    /// (integers, min, max, bitwise), so the regular single pass is already reproducible.
    OrderIndependent = 2,
    /// `deterministic` on a float sum or product (with `SCANRT_ALGORITHM_AUTO`, or
    /// `SCANRT_ALGORITHM_SINGLE_PASS`, which cannot keep the promise): the fixed-order
    /// single pass, faster than the matrix scan.
    Deterministic = 3,
    /// The context runs on the host backend.
    HostBackend = 4,
}

/// The order in which elements are combined.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    #[default]
    /// From the first element to the last.
    Forward = 0,
    /// From the last element to the first: `out[i]` folds `in[n-1] .. in[i]`, in that
    /// order (operands keep traversal order).
    Backward = 1,
}

/// How a segmented scan is told where segments start. The data (flags or keys, one
/// entry per element, in memory order) travels beside the input: [`RawScan::segments`].
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
}

impl Segments {
    /// Bytes of segment data for `n` elements (None when it overflows).
    pub fn data_bytes(self, n: u64) -> Option<u64> {
        match self {
            Segments::None => Some(0),
            Segments::ByteFlags => Some(n),
            Segments::BitFlags => n.div_ceil(32).checked_mul(4),
            Segments::Keys(k) => n.checked_mul(k.size() as u64),
        }
    }
    pub(crate) fn check(self) -> Result<()> {
        if let Segments::Keys(k) = self {
            if !matches!(k, DType::I32 | DType::U32 | DType::I64 | DType::U64) {
                bail!(
                    UnsupportedCombination,
                    "keys of type {} are not supported; use u32, i32, u64 or i64 keys",
                    k.c_name()
                );
            }
        }
        Ok(())
    }
    /// The C enum constant's name, as error messages spell it (keys name their type).
    pub fn c_name(self) -> String {
        match self {
            Segments::None => "SCANRT_SEGMENTS_NONE".into(),
            Segments::ByteFlags => "SCANRT_SEGMENTS_BYTE_FLAGS".into(),
            Segments::BitFlags => "SCANRT_SEGMENTS_BIT_FLAGS".into(),
            Segments::Keys(k) => format!("SCANRT_SEGMENTS_KEYS of {}", k.c_name()),
        }
    }
    /// Required alignment of the segment data, in bytes.
    pub fn alignment(self) -> u64 {
        match self {
            Segments::None | Segments::ByteFlags => 1,
            Segments::BitFlags => 4,
            Segments::Keys(k) => k.size() as u64,
        }
    }
}

/// What to compute: `out[i] = init . in[0] . ... . in[i]` (inclusive) or
/// `out[i] = init . in[0] . ... . in[i-1]` (exclusive, `out[0] = init`), where `.` is
/// `op` in the output type and `init` defaults to the operator's identity. Backward
/// scans run the same recurrence from the last element; segmented scans run it within
/// each segment, every segment starting from `init`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanDesc {
    pub op: Op,
    pub inclusive: bool,
    /// The initial value; `None` = the operator's identity. Its type must be the output
    /// type (checked when the scan is validated).
    pub init: Option<InitValue>,
    pub algorithm: Algorithm,
    pub direction: Direction,
    /// Bitwise identical results on every run (same GPU architecture and library
    /// version), whatever the scheduling. Costs nothing where the operator does not
    /// depend on association order.
    pub deterministic: bool,
    pub segments: Segments,
}

impl Default for ScanDesc {
    fn default() -> Self {
        ScanDesc {
            op: Op::Sum,
            inclusive: true,
            init: None,
            algorithm: Algorithm::Auto,
            direction: Direction::Forward,
            deterministic: false,
            segments: Segments::None,
        }
    }
}

impl ScanDesc {
    pub fn inclusive(op: Op) -> Self {
        ScanDesc {
            op,
            ..Default::default()
        }
    }
    pub fn exclusive(op: Op) -> Self {
        ScanDesc {
            op,
            inclusive: false,
            ..Default::default()
        }
    }
    /// Starts the scan (every segment of a segmented scan) from `init`, a value of the
    /// scan's output type: a scan whose output type differs fails with `InvalidArgument`.
    pub fn with_init<T: Scalar>(mut self, init: T) -> Self {
        self.init = Some(InitValue::of(init));
        self
    }
    /// The initial value's bits as the output type, checked against it.
    pub(crate) fn init_bits(&self, output: DType) -> Result<Option<u64>> {
        match self.init {
            None => Ok(None),
            Some(v) if v.dtype == output => Ok(Some(v.bits)),
            Some(v) => bail!(
                InvalidArgument,
                "the initial value is a {} but the scan's output type is {}",
                v.dtype.c_name(),
                output.c_name()
            ),
        }
    }
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    pub fn backward(mut self) -> Self {
        self.direction = Direction::Backward;
        self
    }
    pub fn deterministic(mut self) -> Self {
        self.deterministic = true;
        self
    }
    pub fn segmented(mut self, segments: Segments) -> Self {
        self.segments = segments;
        self
    }
    /// Whether the result can depend on the association order: float sums and products.
    pub fn order_sensitive(&self, output: DType) -> bool {
        output.is_float() && matches!(self.op, Op::Sum | Op::Product)
    }
}

/// Checks that `op` makes sense for the output type and that `input` can be accumulated
/// in `output`: the same type, or a widening that keeps every value (u8 into any
/// integer, u32 into u64/i64, i32 into i64, f32 into f64).
pub fn check_types(input: DType, output: DType, op: Op) -> Result<()> {
    use DType::*;
    if output == U8 {
        bail!(
            UnsupportedCombination,
            "SCANRT_DTYPE_U8 is an input type only; accumulate it into SCANRT_DTYPE_U32, _U64, _I32 or _I64"
        );
    }
    if op.is_bitwise() && output.is_float() {
        bail!(
            UnsupportedCombination,
            "operator {} is not defined on floating-point type {}",
            op.c_name(),
            output.c_name()
        );
    }
    let ok = input == output
        || matches!(
            (input, output),
            (U8, I32 | U32 | I64 | U64) | (U32, U64 | I64) | (I32, I64) | (F32, F64)
        );
    if !ok {
        bail!(
            UnsupportedCombination,
            "input type {} cannot be accumulated in output type {}",
            input.c_name(),
            output.c_name()
        );
    }
    Ok(())
}

/// A typed initial value: a value of one element type, kept as its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitValue {
    dtype: DType,
    bits: u64,
}

impl InitValue {
    /// The initial value `v`.
    pub fn of<T: Scalar>(v: T) -> InitValue {
        InitValue {
            dtype: T::DTYPE,
            bits: v.to_bits(),
        }
    }
    /// A value of `dtype` given as its bits (the low bytes for 4-byte types).
    pub(crate) fn from_bits(dtype: DType, bits: u64) -> InitValue {
        InitValue { dtype, bits }
    }
    /// The value's element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The value as `T`, when it is a `T`.
    pub fn value<T: Scalar>(&self) -> Option<T> {
        (T::DTYPE == self.dtype).then(|| T::from_bits(self.bits))
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Rust element types usable with the typed API: exactly the types of [`DType`]. Sealed,
/// because buffer copies trust `DTYPE` to give the size of `Self`.
pub trait Scalar: sealed::Sealed + Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// The element type `Self` is.
    const DTYPE: DType;
    /// The value's bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value whose bits are the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! scalar {
    ($t:ty, $d:ident, $to:expr, $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn to_bits(self) -> u64 {
                ($to)(self)
            }
            fn from_bits(bits: u64) -> Self {
                ($from)(bits)
            }
        }
    };
}
scalar!(u8, U8, |v: u8| v as u64, |b: u64| b as u8);
scalar!(i32, I32, |v: i32| v as u32 as u64, |b: u64| b as u32 as i32);
scalar!(u32, U32, |v: u32| v as u64, |b: u64| b as u32);
scalar!(i64, I64, |v: i64| v as u64, |b: u64| b as i64);
scalar!(u64, U64, |v: u64| v, |b: u64| b);
scalar!(f32, F32, |v: f32| v.to_bits() as u64, |b: u64| {
    f32::from_bits(b as u32)
});
scalar!(f64, F64, |v: f64| v.to_bits(), f64::from_bits);

// Every size of element the typed API copies is the size its dtype names.
const _: () = {
    assert!(std::mem::size_of::<u8>() == 1 && std::mem::size_of::<i32>() == 4 && std::mem::size_of::<f64>() == 8);
};
