//! Operator semantics on the host, shared by the host backend and the reference scan.
//! They define what every backend computes (kernels/util/types.cuh mirrors them):
//! integer sum/product wrap, min/max keep the earlier operand on ties and NaN
//! (`b < a ? b : a`), identities are 0 (-0.0 for floats), 1, the type's max/min (+-inf for floats),
//! all-ones and 0.

use crate::types::{Op, Scalar};

/// An accumulator (= output) type.
pub trait Accumulator: Scalar {
    fn identity(op: Op) -> Self;
    fn combine(op: Op, a: Self, b: Self) -> Self;
}

macro_rules! int_acc {
    ($($t:ty),*) => {$(
        impl Accumulator for $t {
            #[inline(always)]
            fn identity(op: Op) -> Self {
                match op {
                    Op::Sum | Op::BitOr | Op::BitXor => 0,
                    Op::Product => 1,
                    Op::Min => <$t>::MAX,
                    Op::Max => <$t>::MIN,
                    Op::BitAnd => !0,
                }
            }
            #[inline(always)]
            fn combine(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a.wrapping_add(b),
                    Op::Product => a.wrapping_mul(b),
                    Op::Min => if b < a { b } else { a },
                    Op::Max => if a < b { b } else { a },
                    Op::BitAnd => a & b,
                    Op::BitOr => a | b,
                    Op::BitXor => a ^ b,
                }
            }
        }
    )*};
}
int_acc!(i32, u32, i64, u64);

macro_rules! float_acc {
    ($($t:ty),*) => {$(
        impl Accumulator for $t {
            #[inline(always)]
            fn identity(op: Op) -> Self {
                match op {
                    Op::Sum => -0.0, // the identity of IEEE addition: -0 + x = x for every x, -0 too
                    Op::Product => 1.0,
                    Op::Min => <$t>::INFINITY,
                    Op::Max => <$t>::NEG_INFINITY,
                    _ => unreachable!("bitwise operators on floats are rejected by check_types"),
                }
            }
            #[inline(always)]
            fn combine(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a + b,
                    Op::Product => a * b,
                    Op::Min => if b < a { b } else { a },
                    Op::Max => if a < b { b } else { a },
                    _ => unreachable!("bitwise operators on floats are rejected by check_types"),
                }
            }
        }
    )*};
}
float_acc!(f32, f64);

/// Lossless conversion of an input element into the accumulator type.
pub trait Widen<O> {
    fn widen(self) -> O;
}
macro_rules! widen {
    ($($i:ty => $($o:ty),+);* $(;)?) => {$($(
        impl Widen<$o> for $i {
            #[inline(always)]
            fn widen(self) -> $o { self as $o }
        }
    )+)*};
}
widen! {
    u8 => i32, u32, i64, u64;
    i32 => i32, i64;
    u32 => u32, u64, i64;
    i64 => i64;
    u64 => u64;
    f32 => f32, f64;
    f64 => f64;
}

/// Calls `$body` with type aliases `$I`/`$O` bound to the Rust types of a supported
/// (input, output) dtype pair. Keep in step with `types::check_types`.
macro_rules! dispatch_pair {
    ($input:expr, $output:expr, |$I:ident, $O:ident| $body:expr) => {{
        use $crate::types::DType::*;
        match ($input, $output) {
            (U8, I32) => {
                type $I = u8;
                type $O = i32;
                $body
            }
            (U8, U32) => {
                type $I = u8;
                type $O = u32;
                $body
            }
            (U8, I64) => {
                type $I = u8;
                type $O = i64;
                $body
            }
            (U8, U64) => {
                type $I = u8;
                type $O = u64;
                $body
            }
            (I32, I32) => {
                type $I = i32;
                type $O = i32;
                $body
            }
            (I32, I64) => {
                type $I = i32;
                type $O = i64;
                $body
            }
            (U32, U32) => {
                type $I = u32;
                type $O = u32;
                $body
            }
            (U32, U64) => {
                type $I = u32;
                type $O = u64;
                $body
            }
            (U32, I64) => {
                type $I = u32;
                type $O = i64;
                $body
            }
            (I64, I64) => {
                type $I = i64;
                type $O = i64;
                $body
            }
            (U64, U64) => {
                type $I = u64;
                type $O = u64;
                $body
            }
            (F32, F32) => {
                type $I = f32;
                type $O = f32;
                $body
            }
            (F32, F64) => {
                type $I = f32;
                type $O = f64;
                $body
            }
            (F64, F64) => {
                type $I = f64;
                type $O = f64;
                $body
            }
            (i, o) => unreachable!("unsupported pair {:?} -> {:?} passed validation", i, o),
        }
    }};
}
pub(crate) use dispatch_pair;
