//! Element types: their properties, the Rust types that carry them, initial values, and
//! the one table of (input, output) pairs a scan accepts. The `DType` enum itself is a
//! row of src/tables.rs.

use crate::error::{bail, Result};
pub use crate::tables::DType;

/// What kind of number an element type holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    /// Unsigned integers.
    Unsigned,
    /// Two's complement integers.
    Signed,
    /// IEEE 754 floating point.
    Float,
}

/// The properties of an element type.
#[derive(Debug, Clone, Copy)]
pub struct DTypeInfo {
    /// Bytes per element.
    pub size: usize,
    /// What kind of number.
    pub kind: NumberKind,
    /// The CUDA C++ spelling in kernel specialisations (kernels/util/types.cuh).
    pub cuda: &'static str,
    /// The name NumPy, PyTorch and JAX give it (the Python package's dtype names).
    pub name: &'static str,
    /// DLPack's type code (`kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, `kDLBfloat` 4); its bits
    /// are `8 * size`, one lane.
    pub dlpack_code: u8,
}

impl DType {
    /// The element type's properties: **the one table of element types**, one row per
    /// type, that every layer reads (kernel sources, DLPack views, the Python package).
    pub const fn info(self) -> DTypeInfo {
        use NumberKind::*;
        const INT: u8 = 0;
        const UINT: u8 = 1;
        const FLOAT: u8 = 2;
        const BFLOAT: u8 = 4;
        let (size, kind, cuda, name, dlpack_code) = match self {
            DType::U8 => (1, Unsigned, "u8", "uint8", UINT),
            DType::I32 => (4, Signed, "i32", "int32", INT),
            DType::U32 => (4, Unsigned, "u32", "uint32", UINT),
            DType::I64 => (8, Signed, "i64", "int64", INT),
            DType::U64 => (8, Unsigned, "u64", "uint64", UINT),
            DType::F32 => (4, Float, "float", "float32", FLOAT),
            DType::F64 => (8, Float, "double", "float64", FLOAT),
            DType::I8 => (1, Signed, "i8", "int8", INT),
            DType::U16 => (2, Unsigned, "u16", "uint16", UINT),
            DType::I16 => (2, Signed, "i16", "int16", INT),
            DType::F16 => (2, Float, "f16", "float16", FLOAT),
            DType::BF16 => (2, Float, "bf16", "bfloat16", BFLOAT),
        };
        DTypeInfo {
            size,
            kind,
            cuda,
            name,
            dlpack_code,
        }
    }
    /// The type NumPy, PyTorch and JAX call `name` (`bool` arrays are read as `u8`).
    pub fn named(name: &str) -> Option<DType> {
        let name = if name == "bool" { "uint8" } else { name };
        DType::ALL.into_iter().find(|t| t.info().name == name)
    }
    /// The type of DLPack's `(code, bits, lanes)`.
    pub fn of_dlpack(code: u8, bits: u8, lanes: u16) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|t| lanes == 1 && t.info().dlpack_code == code && 8 * t.size() == bits as usize)
    }
    /// Bytes per element.
    pub const fn size(self) -> usize {
        self.info().size
    }
    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        self.info().kind == NumberKind::Float
    }
    /// Whether it is a 16-bit float (f16, bf16): a storage type that scans read into and
    /// write from an f32 accumulator, never one they compute in.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
    /// The accumulator of a scan written as `self` unless it asks for another: the type
    /// itself, f32 for the half types, 32 bits for 8- and 16-bit integers.
    pub fn default_accumulator(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            DType::U8 | DType::U16 => DType::U32,
            DType::I8 | DType::I16 => DType::I32,
            _ => self,
        }
    }
}

/// Calls `$callback!` with the table of supported (input, output) pairs: a scan
/// accumulates its input in its output type, the same type or a widening that keeps
/// every value. Rows: `(InputDType, input_rust_type, OutputDType, output_rust_type)`.
/// Everything that lists pairs ([`TYPE_PAIRS`], [`dispatch_pair!`], the `Widen` impls)
/// is generated from here.
#[doc(hidden)]
#[macro_export]
macro_rules! with_type_pairs {
    ($callback:ident ! $args:tt) => {
        $crate::$callback! { $args
            (U8, u8, I32, i32) (U8, u8, U32, u32) (U8, u8, I64, i64) (U8, u8, U64, u64)
            (I8, i8, I32, i32) (I8, i8, I64, i64)
            (U16, u16, I32, i32) (U16, u16, U32, u32) (U16, u16, I64, i64) (U16, u16, U64, u64)
            (I16, i16, I32, i32) (I16, i16, I64, i64)
            (I32, i32, I32, i32) (I32, i32, I64, i64)
            (U32, u32, U32, u32) (U32, u32, U64, u64) (U32, u32, I64, i64)
            (I64, i64, I64, i64)
            (U64, u64, U64, u64)
            (F32, f32, F32, f32) (F32, f32, F64, f64)
            (F64, f64, F64, f64)
            (F16, $crate::half::f16, F32, f32) (BF16, $crate::half::bf16, F32, f32)
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! type_pair_array {
    (() $(($i:ident, $it:ty, $o:ident, $ot:ty))*) => {
        [$(($crate::DType::$i, $crate::DType::$o)),*]
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! type_pair_count {
    (() $(($i:ident, $it:ty, $o:ident, $ot:ty))*) => {
        <[&str]>::len(&[$(stringify!($i)),*])
    };
}

/// Every (input, output) type pair scanrt accepts.
pub const TYPE_PAIRS: [(DType, DType); with_type_pairs!(type_pair_count!())] = with_type_pairs!(type_pair_array!());

/// Evaluates `$body` with the type alias `$T` bound to the Rust type of a `DType`.
///
/// ```
/// let bytes = scanrt::dispatch_dtype!(scanrt::DType::I16, |T| std::mem::size_of::<T>());
/// assert_eq!(bytes, 2);
/// ```
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
        }
    };
}

/// Evaluates `$body` with the type aliases `$I` and `$O` bound to the Rust types of a
/// supported (input, output) pair of `DType`s; panics for a pair outside [`TYPE_PAIRS`]
/// (check it with [`check_types`] first).
///
/// ```
/// let bytes = scanrt::dispatch_pair!(scanrt::DType::U8, scanrt::DType::U64, |I, O| {
///     std::mem::size_of::<I>() + std::mem::size_of::<O>()
/// });
/// assert_eq!(bytes, 9);
/// ```
#[macro_export]
macro_rules! dispatch_pair {
    ($input:expr, $output:expr, |$I:ident, $O:ident| $body:expr) => {
        $crate::with_type_pairs!(dispatch_pair_rows!($input, $output, $I, $O, $body))
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! dispatch_pair_rows {
    (($input:expr, $output:expr, $I:ident, $O:ident, $body:expr) $(($i:ident, $it:ty, $o:ident, $ot:ty))*) => {
        match ($input, $output) {
            $(($crate::DType::$i, $crate::DType::$o) => {
                #[allow(dead_code)]
                type $I = $it;
                #[allow(dead_code)]
                type $O = $ot;
                $body
            })*
            (i, o) => panic!("{:?} -> {:?} is not a supported type pair", i, o),
        }
    };
}

/// Lossless conversion of an input element into the accumulator type.
pub trait Widen<O> {
    /// The value as the wider type.
    fn widen(self) -> O;
}

#[doc(hidden)]
#[macro_export]
macro_rules! widen_impls {
    (() $(($i:ident, $it:ty, $o:ident, $ot:ty))*) => {$(
        impl $crate::Widen<$ot> for $it {
            #[inline(always)]
            fn widen(self) -> $ot {
                <$ot>::from(self)
            }
        }
    )*};
}
with_type_pairs!(widen_impls!());

/// Calls `$callback!` with the table of accumulators wider than the output: elements are
/// read as the input type, combined in the accumulator and narrowed when written. Rows:
/// `(Input, input_rust_type, Accumulator, accumulator_rust_type, Output, output_rust_type)`.
/// (f32 sums in f64 lose no precision to the length of the scan; the half types are
/// storage types, always accumulated in f32; 8- and 16-bit integers accumulate in 32
/// bits, whose wrapping sums and products narrow to the same bits as their own would.)
#[doc(hidden)]
#[macro_export]
macro_rules! with_narrowing_types {
    ($callback:ident ! $args:tt) => {
        $crate::$callback! { $args
            (F32, f32, F64, f64, F32, f32)
            (F16, $crate::half::f16, F32, f32, F16, $crate::half::f16)
            (BF16, $crate::half::bf16, F32, f32, BF16, $crate::half::bf16)
            (U8, u8, U32, u32, U8, u8) (I8, i8, I32, i32, I8, i8)
            (U16, u16, U32, u32, U16, u16) (I16, i16, I32, i32, I16, i16)
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! narrowing_type_array {
    (() $(($i:ident, $it:ty, $a:ident, $at:ty, $o:ident, $ot:ty))*) => {
        [$($crate::ScanTypes { input: $crate::DType::$i, accumulator: $crate::DType::$a, output: $crate::DType::$o }),*]
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! narrowing_type_count {
    (() $(($i:ident, $it:ty, $a:ident, $at:ty, $o:ident, $ot:ty))*) => {
        <[&str]>::len(&[$(stringify!($i)),*])
    };
}

/// Every (input, accumulator, output) triple whose accumulator is wider than its output.
pub const NARROWING_TYPES: [ScanTypes; with_narrowing_types!(narrowing_type_count!())] =
    with_narrowing_types!(narrowing_type_array!());

/// The three types of a built-in scan: elements are read as `input`, combined in
/// `accumulator` (the type of the initial value and of the carries between tiles) and
/// written as `output`. The accumulator is the output type unless a scan asks for a
/// wider one ([`NARROWING_TYPES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScanTypes {
    /// The element type read.
    pub input: DType,
    /// The type the operator combines in.
    pub accumulator: DType,
    /// The element type written.
    pub output: DType,
}

impl ScanTypes {
    /// The types of a scan of `input` into `output`, accumulating in `accumulator`
    /// (`None`: the output type's [`DType::default_accumulator`]).
    pub fn new(input: DType, output: DType, accumulator: Option<DType>) -> ScanTypes {
        ScanTypes {
            input,
            accumulator: accumulator.unwrap_or(output.default_accumulator()),
            output,
        }
    }
    /// Whether one type runs throughout (read, accumulated and written): the scans whose
    /// arrays a bulk copy moves as they are.
    pub(crate) fn one_type(&self) -> bool {
        self.input == self.accumulator && self.accumulator == self.output
    }
    /// Whether results are narrowed from a wider accumulator when written.
    pub fn narrows(&self) -> bool {
        self.accumulator != self.output
    }
    /// The identity of `op` where the accumulator's own would not do: min and max of 8-
    /// and 16-bit integers accumulated in 32 bits start from the output type's extreme (an
    /// exclusive scan writes it, and the accumulator's would narrow to another value).
    pub(crate) fn narrowed_identity(&self, op: crate::Op) -> Option<i64> {
        let out = self.output;
        if !self.narrows() || out.is_float() {
            return None;
        }
        let bits = 8 * out.size() as u32;
        let signed = out.info().kind == NumberKind::Signed;
        let (lowest, highest) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        match op {
            crate::Op::Min => Some(highest),
            crate::Op::Max => Some(lowest),
            _ => None,
        }
    }
    /// Checks the triple for `op`: a pair of [`TYPE_PAIRS`] accumulating in its output
    /// type, or a row of [`NARROWING_TYPES`], with `op` defined on the accumulator.
    pub fn check(&self, op: crate::Op) -> Result<()> {
        if !self.narrows() {
            return check_types(self.input, self.output, op);
        }
        if !NARROWING_TYPES.contains(self) {
            bail!(
                UnsupportedCombination,
                "{} input cannot be accumulated in {} and written as {}; a wider accumulator is offered for {}",
                self.input.c_name(),
                self.accumulator.c_name(),
                self.output.c_name(),
                NARROWING_TYPES
                    .iter()
                    .map(|t| format!(
                        "{} -> {} -> {}",
                        t.input.c_name(),
                        t.accumulator.c_name(),
                        t.output.c_name()
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        check_types(self.input, self.accumulator, op)
    }
}

/// Evaluates `$body` with the type aliases `$I`, `$A` and `$O` bound to the Rust types of
/// a checked [`ScanTypes`] (a pair of [`TYPE_PAIRS`] with `$A = $O`, or a row of
/// [`NARROWING_TYPES`]); panics for any other triple.
#[macro_export]
macro_rules! dispatch_scan_types {
    ($types:expr, |$I:ident, $A:ident, $O:ident| $body:expr) => {{
        let types: $crate::ScanTypes = $types;
        if types.narrows() {
            $crate::with_narrowing_types!(dispatch_narrowing_rows!(types, $I, $A, $O, $body))
        } else {
            $crate::dispatch_pair!(types.input, types.output, |$I, $O| {
                #[allow(dead_code)]
                type $A = $O;
                $body
            })
        }
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! dispatch_narrowing_rows {
    (($types:expr, $I:ident, $A:ident, $O:ident, $body:expr) $(($i:ident, $it:ty, $a:ident, $at:ty, $o:ident, $ot:ty))*) => {
        match ($types.input, $types.accumulator, $types.output) {
            $(($crate::DType::$i, $crate::DType::$a, $crate::DType::$o) => {
                #[allow(dead_code)]
                type $I = $it;
                #[allow(dead_code)]
                type $A = $at;
                #[allow(dead_code)]
                type $O = $ot;
                $body
            })*
            (i, a, o) => panic!("{:?} -> {:?} -> {:?} is not a supported triple", i, a, o),
        }
    };
}

/// Conversion of an accumulator into the output type: the identity where they are the
/// same type, a rounding conversion for the rows of [`NARROWING_TYPES`].
pub trait Narrow<O> {
    /// The value as the output type.
    fn narrow(self) -> O;
}

impl<T> Narrow<T> for T {
    #[inline(always)]
    fn narrow(self) -> T {
        self
    }
}

// One conversion per row of `with_narrowing_types!`, each rounding to nearest even (as the
// kernels' conversions do).
impl Narrow<f32> for f64 {
    #[inline(always)]
    fn narrow(self) -> f32 {
        self as f32
    }
}
impl Narrow<half::f16> for f32 {
    #[inline(always)]
    fn narrow(self) -> half::f16 {
        half::f16::from_f32(self)
    }
}
impl Narrow<half::bf16> for f32 {
    #[inline(always)]
    fn narrow(self) -> half::bf16 {
        half::bf16::from_f32(self)
    }
}
// Integers keep their low bits, as the kernels' conversions do.
macro_rules! narrow_integers {
    ($($a:ty => $o:ty),*) => {$(
        impl Narrow<$o> for $a {
            #[inline(always)]
            fn narrow(self) -> $o {
                self as $o
            }
        }
    )*};
}
narrow_integers!(u32 => u8, i32 => i8, u32 => u16, i32 => i16);

/// Checks that `op` is defined on the output type and that `input` can be accumulated in
/// `output` (a pair of [`TYPE_PAIRS`]).
pub fn check_types(input: DType, output: DType, op: crate::Op) -> Result<()> {
    if output != output.default_accumulator() {
        bail!(
            UnsupportedCombination,
            "{} is a storage type: a scan written as {} accumulates in {}",
            output.c_name(),
            output.c_name(),
            output.default_accumulator().c_name()
        );
    }
    if op.definition().integers_only && output.is_float() {
        bail!(
            UnsupportedCombination,
            "operator {} is not defined on floating-point type {}",
            op.c_name(),
            output.c_name()
        );
    }
    if !TYPE_PAIRS.contains(&(input, output)) {
        bail!(
            UnsupportedCombination,
            "input type {} cannot be accumulated in output type {}",
            input.c_name(),
            output.c_name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's names and DLPack codes find each type again, and no other.
    #[test]
    fn names_and_dlpack_codes_find_their_type() {
        for t in DType::ALL {
            let info = t.info();
            assert_eq!(DType::named(info.name), Some(t));
            assert_eq!(DType::of_dlpack(info.dlpack_code, 8 * info.size as u8, 1), Some(t));
            assert_eq!(DType::of_dlpack(info.dlpack_code, 8 * info.size as u8, 2), None);
            assert_eq!(
                t.c_name().trim_start_matches("SCANRT_DTYPE_").to_lowercase(),
                t.describe()
            );
        }
        assert_eq!(DType::named("bool"), Some(DType::U8));
        assert_eq!(DType::named("complex64"), None);
    }

    /// Every pair widens without loss: the output type holds every input value.
    #[test]
    fn type_pairs_keep_every_value() {
        use NumberKind::*;
        for (i, o) in TYPE_PAIRS {
            let (i, o) = (i.info(), o.info());
            let ok = match (i.kind, o.kind) {
                (Float, Float) => o.size >= i.size,
                (Unsigned, Unsigned) | (Signed, Signed) => o.size >= i.size,
                (Unsigned, Signed) => o.size > i.size,
                _ => false,
            };
            assert!(ok, "{i:?} -> {o:?}");
        }
    }
}
