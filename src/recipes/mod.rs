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
//!   writes the value and index (every type). An initial value is
//!   [`cumulative_extreme_init`].
//! * [`logcumsumexp`]: `y[i] = log(sum_{j <= i} exp(x[j]))` without overflow: states
//!   `(m, s)` mean `m + log(s)` with `m` the running maximum, so no exponential exceeds 1
//!   (f32, f64; f16 and bf16 arrays with f32 states). An initial value is
//!   [`logcumsumexp_init`].

use std::sync::Arc;

use crate::error::{bail, Result};
use crate::operator::{HostOperator, OperatorDesc};
use crate::scalar::InitValue;
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
                unreachable!("cumulative extremes hold 1- and 2-byte values as 4-byte ones")
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

/// Element 0 of an array of `dtype` (f16, bf16, f32 or f64) as f64, exactly.
fn element(dtype: DType, x: &[u8]) -> f64 {
    match dtype {
        DType::F16 => half::f16::from_bits(read(x, 0)).to_f64(),
        DType::BF16 => half::bf16::from_bits(read(x, 0)).to_f64(),
        DType::F32 => read::<f32>(x, 0) as f64,
        _ => read::<f64>(x, 0),
    }
}

/// Writes `v` (a value of the state's float type) as element 0 of an array of `dtype`,
/// rounded once.
fn put_element(dtype: DType, y: &mut [u8], v: f64) {
    match dtype {
        DType::F16 => write(y, 0, half::f16::from_f64(v).to_bits()),
        DType::BF16 => write(y, 0, half::bf16::from_f64(v).to_bits()),
        DType::F32 => write(y, 0, v as f32),
        _ => write(y, 0, v),
    }
}

/// The index an initial value of a cumulative extreme carries ([`cumulative_extreme_init`]):
/// results whose extreme is the initial value read it. The identity's, `u32::MAX`, marks
/// the empty state (an exclusive scan's first result). Element indices stay below both.
pub const EXTREME_INITIAL_INDEX: u32 = u32::MAX - 1;

/// The type an extreme's state holds `dtype` values in: 1- and 2-byte types widen to 4
/// bytes (every value kept exactly), so the state is a value and a u32 index.
fn extreme_value_type(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        DType::I8 | DType::I16 => DType::I32,
        DType::U8 | DType::U16 => DType::U32,
        other => other,
    }
}

/// A `dtype` value (its bits) as the bits of the same value in the extreme's value type.
fn widen_extreme(dtype: DType, bits: u64) -> u64 {
    match dtype {
        DType::F16 => half::f16::from_bits(bits as u16).to_f32().to_bits() as u64,
        DType::BF16 => half::bf16::from_bits(bits as u16).to_f32().to_bits() as u64,
        DType::I8 => bits as u8 as i8 as i32 as u32 as u64,
        DType::I16 => bits as u16 as i16 as i32 as u32 as u64,
        _ => bits,
    }
}

/// The inverse of [`widen_extreme`] (exact: the state's values came from `dtype` values).
fn narrow_extreme(dtype: DType, bits: u64) -> u64 {
    match dtype {
        DType::F16 => half::f16::from_f32(f32::from_bits(bits as u32)).to_bits() as u64,
        DType::BF16 => half::bf16::from_f32(f32::from_bits(bits as u32)).to_bits() as u64,
        DType::I8 | DType::U8 => bits & 0xff,
        DType::I16 | DType::U16 => bits & 0xffff,
        _ => bits,
    }
}

/// Running maximum (`max`) or minimum of `dtype` values (every type; 1- and 2-byte ones
/// are compared as 4-byte values) with the index of the extreme: input `x`, outputs the
/// extreme (`dtype`) and its index (u32: the element's index, below
/// [`EXTREME_INITIAL_INDEX`]). Ties keep the first index in traversal order; a NaN is the
/// extreme from where it appears (the first NaN's index stays), as NumPy's
/// `maximum.accumulate` and torch's `cummax` propagate NaN (torch moves the index to each
/// later NaN and, on ties, to the later element). The empty state (an exclusive scan's
/// first result) has the type's extreme (infinities for floats) and index `u32::MAX`.
pub fn cumulative_extreme(dtype: DType, max: bool) -> Result<OperatorDesc> {
    let value = extreme_value_type(dtype);
    let (t, io) = (value.info().cuda, dtype.info().cuda);
    let wins = if max { ">" } else { "<" };
    // The same text as before widening existed for 4- and 8-byte types (cached kernels).
    let (widen, narrow) = if value == dtype {
        ("x".to_string(), "e.value".to_string())
    } else {
        (format!("({t})x"), format!("{io}(e.value)"))
    };
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
__device__ Extreme make_candidate(int64_t i, {io} x) {{ return Extreme{{{widen}, (uint32_t)i}}; }}
__device__ void write_extreme(const Extreme& e, {io}& value, uint32_t& index) {{ value = {narrow}; index = e.index; }}
"#,
        pad = if value.size() == 8 { "uint32_t unused;" } else { "" }
    );
    let size = if value.size() == 8 { 16 } else { 8 };
    // The identity loses to every value: -inf / +inf, or the integer extremes (index 0).
    let identity = extreme_identity(dtype, max, size);
    let (vs, io_size) = (value.size(), dtype.size());
    let host = HostOperator {
        combine: Arc::new(move |l, r, out| {
            let empty = |s: &[u8]| s[vs..vs + 4] == [0xff; 4];
            let better = empty(l)
                || !empty(r)
                    && host_values!(value, |T| {
                        let (first, then) = (read::<T>(l, 0), read::<T>(r, 0));
                        #[allow(clippy::eq_op)] // x != x: NaN (never for integers)
                        let (first_nan, then_nan) = (first != first, then != then);
                        !first_nan && (then_nan || if max { then > first } else { then < first })
                    });
            out.copy_from_slice(if better { r } else { l });
        }),
        load: Some(Arc::new(move |i, x, out| {
            out.fill(0);
            let mut bits = [0u8; 8];
            bits[..io_size].copy_from_slice(x[0]);
            let wide = widen_extreme(dtype, u64::from_le_bytes(bits));
            out[..vs].copy_from_slice(&wide.to_le_bytes()[..vs]);
            out[vs..vs + 4].copy_from_slice(&(i as u32).to_ne_bytes());
        })),
        store: Some(Arc::new(move |s, y| {
            let mut bits = [0u8; 8];
            bits[..vs].copy_from_slice(&s[..vs]);
            let narrow = narrow_extreme(dtype, u64::from_le_bytes(bits));
            y[0].copy_from_slice(&narrow.to_le_bytes()[..io_size]);
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

/// The initial value of a [`cumulative_extreme`] scan of `dtype` arrays: `value` (of
/// `dtype`), which every segment starts from and which wins ties (it comes first), with
/// index [`EXTREME_INITIAL_INDEX`].
pub fn cumulative_extreme_init(dtype: DType, value: InitValue) -> Result<Vec<u8>> {
    if value.dtype() != dtype {
        bail!(
            InvalidArgument,
            "the initial value of a cumulative extreme of {} is a {} value, not {}",
            dtype.c_name(),
            dtype.c_name(),
            value.dtype().c_name()
        );
    }
    let vs = extreme_value_type(dtype).size();
    let mut state = vec![0u8; if vs == 8 { 16 } else { 8 }];
    state[..vs].copy_from_slice(&widen_extreme(dtype, value.bits()).to_le_bytes()[..vs]);
    state[vs..vs + 4].copy_from_slice(&EXTREME_INITIAL_INDEX.to_ne_bytes());
    Ok(state)
}

/// The identity of a cumulative extreme of `dtype` arrays: the type's extreme (infinities
/// for floats) with index 0xffffffff, which marks it as empty: it loses every comparison,
/// ties included.
fn extreme_identity(dtype: DType, max: bool, size: usize) -> Vec<u8> {
    use crate::ops::Accumulator;
    use crate::scalar::Scalar;
    use crate::tables::Op;
    let op = if max { Op::Max } else { Op::Min };
    let value = extreme_value_type(dtype);
    // The narrow integers' own extremes, widened (the widened type's would not narrow back).
    let narrow = |min: i64, max_value: i64| (if max { min } else { max_value }) as i32 as u32 as u64;
    let bits = match dtype {
        DType::I8 => narrow(i8::MIN.into(), i8::MAX.into()),
        DType::I16 => narrow(i16::MIN.into(), i16::MAX.into()),
        DType::U8 => narrow(0, u8::MAX.into()),
        DType::U16 => narrow(0, u16::MAX.into()),
        _ => host_values!(value, |T| Scalar::to_bits(<T as Accumulator>::identity(op))),
    };
    let mut bytes = vec![0u8; size];
    bytes[..value.size()].copy_from_slice(&bits.to_ne_bytes()[..value.size()]);
    bytes[value.size()..value.size() + 4].copy_from_slice(&[0xff; 4]);
    bytes
}

/// `y[i] = log(exp(x[0]) + ... + exp(x[i]))` over f32 or f64, numerically stable; f16 and
/// bf16 arrays run with f32 states, each `y` rounded once as it is written.
pub fn logcumsumexp(dtype: DType) -> Result<OperatorDesc> {
    let state = dtype.default_accumulator();
    let t = float_type("logcumsumexp", state)?;
    let io = dtype.info().cuda;
    // The same text as before half arrays existed for f32 and f64 (cached kernels).
    let (widen, narrow) = if state == dtype {
        ("x".to_string(), "s.max + log_of(s.scaled)".to_string())
    } else {
        (format!("({t})x"), format!("{io}(s.max + log_of(s.scaled))"))
    };
    // f32 takes the hardware's approximate exp2 and log2 (a few ulp here: exp2 of
    // arguments <= 0, log2 of arguments >= 1), without their subnormal fix-ups, and
    // sm_80's NaN-propagating maximum.
    let (exp, log, max_nan) = if state == DType::F32 {
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
__device__ LogSum make_term(int64_t, {io} x) {{ return LogSum{{{widen}, 1}}; }}
__device__ void write_log_sum(const LogSum& s, {io}& y) {{ y = {narrow}; }}
"#
    );
    let identity = host_floats!(state, |T| [T::NEG_INFINITY, 0.0 as T]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect::<Vec<u8>>());
    let host = host_floats!(state, |T| HostOperator {
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
        load: Some(Arc::new(move |_, x, out| {
            write(out, 0, element(dtype, x[0]) as T);
            write(out, 1, 1.0 as T);
        })),
        store: Some(Arc::new(move |s, y| {
            let log_sum = read::<T>(s, 0) + read::<T>(s, 1).ln();
            put_element(dtype, y[0], f64::from(log_sum))
        })),
    });
    Ok(OperatorDesc::new(
        "logcumsumexp",
        &source,
        "LogSum",
        2 * state.size(),
        state.size(),
        "log_add",
        &identity,
    )
    .with_load("make_term", &[dtype])
    .with_store("write_log_sum", &[dtype])
    .with_host(host))
}

/// The initial value of a [`logcumsumexp`] scan of `dtype` arrays: `value`, one more term
/// before every segment (`y[i] = log(exp(value) + exp(x[0]) + ... + exp(x[i]))`).
pub fn logcumsumexp_init(dtype: DType, value: f64) -> Result<Vec<u8>> {
    let state = dtype.default_accumulator();
    float_type("logcumsumexp", state)?;
    Ok(host_floats!(state, |T| [value as T, 1.0 as T]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect()))
}
