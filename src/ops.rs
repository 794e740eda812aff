//! What each built-in operator computes, in one place: its CUDA definition (which kernel
//! specialisations instantiate) and its host semantics (the host backend and the
//! reference scan). Adding an operator: a row in src/tables.rs and an arm in each match
//! below.
//!
//! Semantics: integer sum and product wrap; min and max keep the earlier operand on ties
//! and propagate NaN, as NumPy's `minimum`/`maximum` and torch's `cummin`/`cummax` do: a
//! NaN operand is the result (the earlier one when both are), so a scan's running extreme
//! is NaN from the first NaN on. Both rules pick one element of the sequence whatever
//! the grouping (the first NaN, else the first extreme), so min and max stay associative
//! with NaN and every algorithm gives the sequential loop's bits. Identities are 0 (-0.0
//! for floats, the identity of IEEE addition), 1, the type's max / min (+-inf for
//! floats), all-ones and 0.

use crate::scalar::Scalar;
use crate::tables::Op;

/// An operator as the kernels see it, and what scans may assume about it.
#[derive(Debug, Clone, Copy)]
pub struct OpDefinition {
    /// CUDA expression of `combine(T a, T b)`; `a` comes first in sequence order. `T` is
    /// the accumulator type and `U` its unsigned twin for integers (wrapping arithmetic).
    pub cuda_combine: &'static str,
    /// CUDA expression of the identity, of type `T` (`Limits<T>` gives the extremes).
    pub cuda_identity: &'static str,
    /// Defined on integers only.
    pub integers_only: bool,
    /// The result on floats depends on the association order (it does not on integers).
    pub float_order_sensitive: bool,
}

impl Op {
    /// The operator's definition.
    pub const fn definition(self) -> OpDefinition {
        let (cuda_combine, cuda_identity, integers_only, float_order_sensitive) = match self {
            Op::Sum => ("T(U(a) + U(b))", "T(-T(0))", false, true),
            Op::Product => ("T(U(a) * U(b))", "T(1)", false, true),
            // `x != x` only for NaN (integers fold it away).
            Op::Min => (
                "(b < a || b != b) && a == a ? b : a",
                "Limits<T>::highest()",
                false,
                false,
            ),
            Op::Max => (
                "(a < b || b != b) && a == a ? b : a",
                "Limits<T>::lowest()",
                false,
                false,
            ),
            Op::BitAnd => ("a & b", "T(~T(0))", true, false),
            Op::BitOr => ("a | b", "T(0)", true, false),
            Op::BitXor => ("a ^ b", "T(0)", true, false),
        };
        OpDefinition {
            cuda_combine,
            cuda_identity,
            integers_only,
            float_order_sensitive,
        }
    }
}

/// An accumulator (= output) type on the host.
pub trait Accumulator: Scalar {
    /// The value `op` leaves every other value unchanged with.
    fn identity(op: Op) -> Self;
    /// `a op b`, `a` first in sequence order.
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
                    Op::Sum => -0.0, // -0 + x = x for every x, -0 too
                    Op::Product => 1.0,
                    Op::Min => <$t>::INFINITY,
                    Op::Max => <$t>::NEG_INFINITY,
                    _ => unreachable!("integer-only operators on floats are rejected by check_types"),
                }
            }
            #[inline(always)]
            fn combine(op: Op, a: Self, b: Self) -> Self {
                match op {
                    Op::Sum => a + b,
                    Op::Product => a * b,
                    Op::Min => if (b < a || b.is_nan()) && !a.is_nan() { b } else { a },
                    Op::Max => if (a < b || b.is_nan()) && !a.is_nan() { b } else { a },
                    _ => unreachable!("integer-only operators on floats are rejected by check_types"),
                }
            }
        }
    )*};
}
float_acc!(f32, f64);

/// Evaluates `$body` with the const `$K` bound to the operator's index in `Op::ALL`, so
/// that host loops are monomorphised per operator (`op_at::<K>()` gives it back).
macro_rules! dispatch_op {
    ($op:expr, |$K:ident| $body:expr) => {{
        use $crate::tables::Op;
        match $op {
            Op::Sum => {
                const $K: usize = 0;
                $body
            }
            Op::Product => {
                const $K: usize = 1;
                $body
            }
            Op::Min => {
                const $K: usize = 2;
                $body
            }
            Op::Max => {
                const $K: usize = 3;
                $body
            }
            Op::BitAnd => {
                const $K: usize = 4;
                $body
            }
            Op::BitOr => {
                const $K: usize = 5;
                $body
            }
            Op::BitXor => {
                const $K: usize = 6;
                $body
            }
        }
    }};
}
pub(crate) use dispatch_op;

/// The operator `dispatch_op!` bound to `K`.
pub(crate) const fn op_at<const K: usize>() -> Op {
    Op::ALL[K]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_op_indexes_the_table() {
        for op in Op::ALL {
            assert_eq!(dispatch_op!(op, |K| op_at::<K>()), op);
        }
    }
}
