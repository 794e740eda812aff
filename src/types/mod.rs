//! The types of a scan: the one table of (input, output) pairs a scan accepts, the table
//! of wider accumulators, and the triple (`ScanTypes`) a plan is made for. The element
//! types themselves are `table`'s.

mod table;

pub use table::{DTypeInfo, NumberKind};

use crate::error::{bail, Result};
pub use crate::tables::DType;

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
    /// The values a scan written as an 8- or 16-bit integer holds, `(lowest, highest)`:
    /// its initial value must be one of them (`ScanDesc::init_bits`), so that the
    /// extremes' identities below stay identities of every value combined.
    pub(crate) fn narrowed_integer_range(&self) -> Option<(i64, i64)> {
        let out = self.output;
        if !self.narrows() || out.is_float() {
            return None;
        }
        let bits = 8 * out.size() as u32;
        Some(if out.info().kind == NumberKind::Signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        })
    }
    /// The identity of `op` where the accumulator's own would not do: min and max of 8-
    /// and 16-bit integers accumulated in 32 bits start from the output type's extreme (an
    /// exclusive scan writes it, and the accumulator's would narrow to another value).
    pub(crate) fn narrowed_identity(&self, op: crate::Op) -> Option<i64> {
        let (lowest, highest) = self.narrowed_integer_range()?;
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
