//! Built-in recipes on user-defined operators ([`crate::Operator`]): each returns the
//! operator's description (CUDA source and host functions), which
//! [`Context::create_operator`](crate::Context::create_operator) compiles once.
//!
//! * [`linear_recurrence`]: `h[i] = a[i] * h[i-1] + b[i]` (backward: `h[i] = a[i] *
//!   h[i+1] + b[i]`), states `(A, B)` composing affine maps; reads `a` and `b`, writes `h`
//!   (f32 or f64; f16 and bf16 arrays with f32 states).
//!   An initial state `h0` is the initial value [`recurrence_init`]; the final state is
//!   the last element written (the first, backward).
//! * [`linear_recurrence_adjoint`]: `lam[i] = g[i] + a[j] * lam[j]`, `j` the element
//!   before `i`: the recurrence's gradients, with the coefficient read at the neighbour
//!   (no shifted copy of `a`).
//! * [`cumulative_extreme`]: running max or min with the index of the extreme (the first
//!   in traversal order on ties); NaN propagates, as in the built-in min and max: from
//!   the first NaN of a segment on, the extreme is that NaN and its index. Reads `x`,
//!   writes the value and index.
//! * [`logcumsumexp`]: `y[i] = log(sum_{j <= i} exp(x[j]))` without overflow: states
//!   `(m, s)` mean `m + log(s)` with `m` the running maximum, so no exponential exceeds 1.

use std::sync::Arc;

use crate::error::{bail, Result};
use crate::operator::{HostOperator, OperatorDesc};
use crate::types::DType;

fn float_type(recipe: &str, dtype: DType) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok("float"),
        DType::F64 => Ok("double"),
        _ => bail!(
            UnsupportedCombination,
            "{recipe} takes f32 or f64, not {}",
            dtype.c_name()
        ),
    }
}

/// Evaluates `$body` with `$t` the Rust type of a scannable value type.
macro_rules! host_values {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype {
            DType::I32 => {
                type $t = i32;
                $body
            }
            DType::U32 => {
                type $t = u32;
                $body
            }
            DType::I64 => {
                type $t = i64;
                $body
            }
            DType::U64 => {
                type $t = u64;
                $body
            }
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            DType::U8 | DType::I8 | DType::U16 | DType::I16 | DType::F16 | DType::BF16 => {
                unreachable!("cumulative_extreme refuses 1- and 2-byte types before this")
            }
        }
    };
}

macro_rules! host_floats {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $t = f32;
                $body
            }
            _ => {
                type $t = f64;
                $body
            }
        }
    };
}

// After the macros above, which it uses.
mod recurrence;
pub use recurrence::{linear_recurrence, linear_recurrence_adjoint, recurrence_adjoint_init, recurrence_init};

fn read<T: Copy>(bytes: &[u8], i: usize) -> T {
    // SAFETY: callers pass slices holding at least (i + 1) values of T (state layouts).
    unsafe { std::ptr::read_unaligned((bytes.as_ptr() as *const T).add(i)) }
}
fn write<T: Copy>(bytes: &mut [u8], i: usize, v: T) {
    // SAFETY: as `read`.
    unsafe { std::ptr::write_unaligned((bytes.as_mut_ptr() as *mut T).add(i), v) }
}

/// Running maximum (`max`) or minimum of `dtype` values with the index of the extreme:
/// input `x`, outputs the extreme (`dtype`) and its index (u32: n < 2^32 - 1). Ties keep
/// the first index in traversal order; a NaN is the extreme from where it appears (the
/// first NaN's index stays), as NumPy's `maximum.accumulate` and torch's `cummax`
/// propagate NaN (torch moves the index to each later NaN and, on ties, to the later
/// element).
pub fn cumulative_extreme(dtype: DType, max: bool) -> Result<OperatorDesc> {
    if dtype.size() < 4 {
        bail!(
            UnsupportedCombination,
            "cumulative_extreme takes 4- and 8-byte values, not {}",
            dtype.c_name()
        );
    }
    let t = dtype.info().cuda;
    let wins = if max { ">" } else { "<" };
    let source = format!(
        r#"struct Extreme {{ {t} value; uint32_t index; {pad} }};
// The later operand wins only when strictly better: the first extreme is kept on ties.
// NaN is better than every number and a NaN is never displaced, so the first NaN wins
// whatever the grouping (associative). The identity (index 0xffffffff) loses to every
// operand, ties included. `v != v` only for NaN (integers fold it away).
__device__ Extreme better(Extreme first, Extreme then) {{
    const bool then_better = first.value == first.value && (then.value {wins} first.value || then.value != then.value);
    return first.index == 0xffffffffu || (then.index != 0xffffffffu && then_better) ? then : first;
}}
__device__ Extreme make_candidate(int64_t i, {t} x) {{ return Extreme{{x, (uint32_t)i}}; }}
__device__ void write_extreme(const Extreme& e, {t}& value, uint32_t& index) {{ value = e.value; index = e.index; }}
"#,
        pad = if dtype.size() == 8 { "uint32_t unused;" } else { "" }
    );
    let size = if dtype.size() == 8 { 16 } else { 8 };
    // The identity loses to every value: -inf / +inf, or the integer extremes (index 0).
    let identity = extreme_identity(dtype, max, size);
    let vs = dtype.size();
    let host = HostOperator {
        combine: Arc::new(move |l, r, out| {
            let empty = |s: &[u8]| s[vs..vs + 4] == [0xff; 4];
            let better = empty(l)
                || !empty(r)
                    && host_values!(dtype, |T| {
                        let (first, then) = (read::<T>(l, 0), read::<T>(r, 0));
                        #[allow(clippy::eq_op)] // x != x: NaN (never for integers)
                        let (first_nan, then_nan) = (first != first, then != then);
                        !first_nan && (then_nan || if max { then > first } else { then < first })
                    });
            out.copy_from_slice(if better { r } else { l });
        }),
        load: Some(Arc::new(move |i, x, out| {
            out.fill(0);
            out[..vs].copy_from_slice(x[0]);
            out[vs..vs + 4].copy_from_slice(&(i as u32).to_ne_bytes());
        })),
        store: Some(Arc::new(move |s, y| {
            y[0].copy_from_slice(&s[..vs]);
            y[1].copy_from_slice(&s[vs..vs + 4]);
        })),
    };
    let name = if max { "cummax_with_index" } else { "cummin_with_index" };
    Ok(
        OperatorDesc::new(name, &source, "Extreme", size, vs.max(4), "better", &identity)
            .with_load("make_candidate", &[dtype])
            .with_store("write_extreme", &[dtype, DType::U32])
            .with_host(host),
    )
}

/// The identity of a cumulative extreme: the type's extreme (infinities for floats) with
/// index 0xffffffff, which marks it as empty: it loses every comparison, ties included.
fn extreme_identity(dtype: DType, max: bool, size: usize) -> Vec<u8> {
    use crate::ops::Accumulator;
    use crate::scalar::Scalar;
    use crate::tables::Op;
    let op = if max { Op::Max } else { Op::Min };
    let mut bytes = vec![0u8; size];
    let value = host_values!(dtype, |T| Scalar::to_bits(<T as Accumulator>::identity(op)));
    bytes[..dtype.size()].copy_from_slice(&value.to_ne_bytes()[..dtype.size()]);
    bytes[dtype.size()..dtype.size() + 4].copy_from_slice(&[0xff; 4]);
    bytes
}

/// `y[i] = log(exp(x[0]) + ... + exp(x[i]))` over f32 or f64, numerically stable.
pub fn logcumsumexp(dtype: DType) -> Result<OperatorDesc> {
    let t = float_type("logcumsumexp", dtype)?;
    // f32 takes the hardware's approximate exp2 and log2 (a few ulp here: exp2 of
    // arguments <= 0, log2 of arguments >= 1), without their subnormal fix-ups, and
    // sm_80's NaN-propagating maximum.
    let (exp, log, max_nan) = if dtype == DType::F32 {
        (
            "float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.44269504f)); return y;",
            "float y; asm(\"lg2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y * 0.693147181f;",
            r#"
#if __CUDA_ARCH__ >= 800
    float m; asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b)); return m;
#else
    return a != a || b != b ? a + b : fmaxf(a, b);
#endif
"#,
        )
    } else {
        (
            "return exp(x);",
            "return log(x);",
            "return a != a || b != b ? a + b : fmax(a, b);",
        )
    };
    let source = format!(
        r#"struct LogSum {{ {t} max, scaled; }};  // log(sum) = max + log(scaled), scaled >= 1
__device__ {t} exp_of({t} x) {{ {exp} }}  // x <= 0
__device__ {t} log_of({t} x) {{ {log} }}
__device__ {t} max_nan({t} a, {t} b) {{ {max_nan} }}  // NaN when either is
__device__ LogSum log_add(LogSum first, LogSum then) {{
    // Rescales the sum with the smaller maximum to the larger one, so no exponential
    // exceeds 1, without branches (the scan's chains are latency-bound): only the max
    // is a chain from element to element. Equal maxima scale by 1; so do equal
    // infinities, whose NaN distance fmin drops: the empty sum (-inf, 0) is the
    // identity, and sums at infinity stay there. A NaN maximum stays NaN, so the output.
    const {t} factor = exp_of(fmin(-fabs(first.max - then.max), {t}(0)));
    const bool first_larger = first.max >= then.max;
    const {t} kept = first_larger ? first.scaled : then.scaled, rescaled = first_larger ? then.scaled : first.scaled;
    return LogSum{{max_nan(first.max, then.max), fma(rescaled, factor, kept)}};
}}
__device__ LogSum make_term(int64_t, {t} x) {{ return LogSum{{x, 1}}; }}
__device__ void write_log_sum(const LogSum& s, {t}& y) {{ y = s.max + log_of(s.scaled); }}
"#
    );
    let identity = host_floats!(dtype, |T| [T::NEG_INFINITY, 0.0 as T]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect::<Vec<u8>>());
    let host = host_floats!(dtype, |T| HostOperator {
        combine: Arc::new(|l, r, out| {
            let (first, then) = ((read::<T>(l, 0), read::<T>(l, 1)), (read::<T>(r, 0), read::<T>(r, 1)));
            let distance = first.0 - then.0;
            let factor = if distance.is_nan() {
                1.0
            } else {
                (-distance.abs()).exp()
            };
            let max = if first.0.is_nan() || then.0.is_nan() {
                T::NAN
            } else {
                first.0.max(then.0)
            };
            let (kept, rescaled) = if first.0 >= then.0 {
                (first.1, then.1)
            } else {
                (then.1, first.1)
            };
            let result = (max, rescaled.mul_add(factor, kept));
            write(out, 0, result.0);
            write(out, 1, result.1);
        }),
        load: Some(Arc::new(|_, x, out| {
            write(out, 0, read::<T>(x[0], 0));
            write(out, 1, 1.0 as T);
        })),
        store: Some(Arc::new(|s, y| write(y[0], 0, read::<T>(s, 0) + read::<T>(s, 1).ln()))),
    });
    Ok(OperatorDesc::new(
        "logcumsumexp",
        &source,
        "LogSum",
        2 * dtype.size(),
        dtype.size(),
        "log_add",
        &identity,
    )
    .with_load("make_term", &[dtype])
    .with_store("write_log_sum", &[dtype])
    .with_host(host))
}
