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
                unreachable!("the extremes take the identities of 1- and 2-byte types apart")
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

/// Where a cumulative extreme's state keeps the element's index (after the value, at
/// least 4 bytes in), and the state's size: 8 bytes, 16 for 8-byte values. The value is
/// kept as it was read, so results are its exact bits (NaN payloads included).
fn extreme_layout(dtype: DType) -> (usize, usize) {
    let index_at = dtype.size().max(4);
    (index_at, if dtype.size() == 8 { 16 } else { 8 })
}

/// A `dtype` value (its bits) as a number every value of its type converts to exactly,
/// for the host's comparisons: f64 for floats, i128 for integers.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum ExtremeKey {
    Float(f64),
    Int(i128),
}

fn extreme_key(dtype: DType, bits: u64) -> ExtremeKey {
    use ExtremeKey::{Float, Int};
    match dtype {
        DType::F16 => Float(half::f16::from_bits(bits as u16).to_f64()),
        DType::BF16 => Float(half::bf16::from_bits(bits as u16).to_f64()),
        DType::F32 => Float(f32::from_bits(bits as u32) as f64),
        DType::F64 => Float(f64::from_bits(bits)),
        DType::I8 => Int(bits as u8 as i8 as i128),
        DType::I16 => Int(bits as u16 as i16 as i128),
        DType::I32 => Int(bits as u32 as i32 as i128),
        DType::I64 => Int(bits as i64 as i128),
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => Int(bits as i128),
    }
}

/// The first `bytes` bytes of `s` as the low bytes of a u64.
fn low_bits(s: &[u8], bytes: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes].copy_from_slice(&s[..bytes]);
    u64::from_le_bytes(b)
}

/// Running maximum (`max`) or minimum of `dtype` values (every type) with the index of the
/// extreme: input `x`, outputs the extreme (`dtype`, its bits as read) and its index
/// (u32: the element's index, below [`EXTREME_INITIAL_INDEX`]; longer scans are refused,
/// [`OperatorDesc::max_length`]). Ties keep the first
/// index in traversal order; a NaN is the extreme from where it appears (the first NaN's
/// index stays), as NumPy's `maximum.accumulate` and torch's `cummax` propagate NaN
/// (torch moves the index to each later NaN and, on ties, to the later element). The
/// empty state (an exclusive scan's first result) has the type's extreme (infinities for
/// floats) and index `u32::MAX`.
pub fn cumulative_extreme(dtype: DType, max: bool) -> Result<OperatorDesc> {
    let t = dtype.info().cuda;
    let wins = if max { ">" } else { "<" };
    let (index_at, size) = extreme_layout(dtype);
    // 1- and 2-byte values compare as int or float (exact); 4- and 8-byte ones as
    // themselves, in the text the kernels had before narrow types (cached kernels).
    let compare = match dtype {
        DType::F16 | DType::BF16 => Some("float"),
        DType::I8 | DType::U8 | DType::I16 | DType::U16 => Some("int"),
        _ => None,
    };
    let then_better = match compare {
        None => format!(
            "const bool then_better = first.value == first.value && (then.value {wins} first.value || then.value != \
             then.value)"
        ),
        Some(c) => format!(
            "const {c} f = ({c})first.value, t = ({c})then.value; const bool then_better = f == f && (t {wins} f || t != t)"
        ),
    };
    let source = format!(
        r#"struct Extreme {{ {t} value; uint32_t index; {pad} }};
// The later operand wins only when strictly better: the first extreme is kept on ties.
// NaN is better than every number and a NaN is never displaced, so the first NaN wins
// whatever the grouping (associative). The identity (index 0xffffffff) loses to every
// operand, ties included. `v != v` only for NaN (integers fold it away).
__device__ Extreme better(Extreme first, Extreme then) {{
    {then_better};
    return first.index == 0xffffffffu || (then.index != 0xffffffffu && then_better) ? then : first;
}}
__device__ Extreme make_candidate(int64_t i, {t} x) {{ return Extreme{{x, (uint32_t)i}}; }}
__device__ void write_extreme(const Extreme& e, {t}& value, uint32_t& index) {{ value = e.value; index = e.index; }}
"#,
        pad = if dtype.size() == 8 { "uint32_t unused;" } else { "" }
    );
    let identity = extreme_identity(dtype, max);
    let vs = dtype.size();
    let host = HostOperator {
        combine: Arc::new(move |l, r, out| {
            let empty = |s: &[u8]| s[index_at..index_at + 4] == [0xff; 4];
            let (first, then) = (extreme_key(dtype, low_bits(l, vs)), extreme_key(dtype, low_bits(r, vs)));
            #[allow(clippy::eq_op)] // x != x: NaN
            let (first_nan, then_nan) = (first != first, then != then);
            let then_better = !first_nan && (then_nan || if max { then > first } else { then < first });
            let better = empty(l) || !empty(r) && then_better;
            out.copy_from_slice(if better { r } else { l });
        }),
        load: Some(Arc::new(move |i, x, out| {
            out.fill(0);
            out[..vs].copy_from_slice(x[0]);
            out[index_at..index_at + 4].copy_from_slice(&(i as u32).to_ne_bytes());
        })),
        store: Some(Arc::new(move |s, y| {
            y[0].copy_from_slice(&s[..vs]);
            y[1].copy_from_slice(&s[index_at..index_at + 4]);
        })),
    };
    let name = if max { "cummax_with_index" } else { "cummin_with_index" };
    Ok(
        OperatorDesc::new(name, &source, "Extreme", size, vs.max(4), "better", &identity)
            .with_load("make_candidate", &[dtype])
            .with_store("write_extreme", &[dtype, DType::U32])
            .with_host(host)
            .with_max_length(EXTREME_INITIAL_INDEX as u64),
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
    Ok(extreme_state(dtype, value.bits(), EXTREME_INITIAL_INDEX))
}

/// A cumulative extreme's state: the `dtype` value of `bits` and `index`.
fn extreme_state(dtype: DType, bits: u64, index: u32) -> Vec<u8> {
    let (index_at, size) = extreme_layout(dtype);
    let mut state = vec![0u8; size];
    state[..dtype.size()].copy_from_slice(&bits.to_le_bytes()[..dtype.size()]);
    state[index_at..index_at + 4].copy_from_slice(&index.to_ne_bytes());
    state
}

/// The identity of a cumulative extreme of `dtype` arrays: the type's extreme (infinities
/// for floats) with index `u32::MAX`, which marks it as empty: it loses every
/// comparison, ties included.
fn extreme_identity(dtype: DType, max: bool) -> Vec<u8> {
    use crate::ops::Accumulator;
    use crate::scalar::Scalar;
    use crate::tables::Op;
    let op = if max { Op::Max } else { Op::Min };
    let pick = |lowest: u64, highest: u64| if max { lowest } else { highest };
    let bits = match dtype {
        DType::F16 => pick(
            half::f16::NEG_INFINITY.to_bits().into(),
            half::f16::INFINITY.to_bits().into(),
        ),
        DType::BF16 => pick(
            half::bf16::NEG_INFINITY.to_bits().into(),
            half::bf16::INFINITY.to_bits().into(),
        ),
        DType::I8 => pick(i8::MIN as u8 as u64, i8::MAX as u64),
        DType::I16 => pick(i16::MIN as u16 as u64, i16::MAX as u64),
        DType::U8 => pick(0, u8::MAX.into()),
        DType::U16 => pick(0, u16::MAX.into()),
        _ => host_values!(dtype, |T| Scalar::to_bits(<T as Accumulator>::identity(op))),
    };
    extreme_state(dtype, bits, u32::MAX)
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
            #[allow(clippy::useless_conversion)] // f64 states expand this too
            let wide = f64::from(log_sum);
            put_element(dtype, y[0], wide)
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
