//! The linear recurrence and its adjoint, the recurrence its gradients follow.

// `host_floats!` expands each host function for f32 and for f64 states: the conversions
// to f64 that the f32 expansion needs are no-ops in the f64 one.
#![allow(clippy::useless_conversion)]

use std::sync::Arc;

use super::{element, float_type, put_element, read, write};
use crate::error::Result;
use crate::operator::{HostOperator, OperatorDesc};
use crate::types::DType;

/// A state of `values` of the state's float type (f32 for f16, bf16 and f32 arrays).
fn state_bytes(dtype: DType, values: &[f64]) -> Result<Vec<u8>> {
    let state = dtype.default_accumulator();
    float_type("a recurrence", state)?;
    Ok(host_floats!(state, |T| values
        .iter()
        .flat_map(|&v| (v as T).to_ne_bytes())
        .collect()))
}

/// The linear recurrence `h = a * h_prev + b` over f32 or f64 (`dtype`): inputs `a`, `b`,
/// output `h`. For f16 and bf16 arrays the state is f32: `a` and `b` are widened as they
/// are read and each `h` rounded once as it is written (the final state stays f32).
pub fn linear_recurrence(dtype: DType) -> Result<OperatorDesc> {
    let state = dtype.default_accumulator();
    let t = float_type("linear_recurrence", state)?;
    let io = dtype.info().cuda;
    let source = format!(
        r#"struct Affine {{ {t} a, b; }};  // h -> a * h + b
__device__ Affine compose(Affine first, Affine then) {{
    return Affine{{first.a * then.a, fma(then.a, first.b, then.b)}};
}}
__device__ Affine make_step(int64_t, {io} a, {io} b) {{ return Affine{{({t})a, ({t})b}}; }}
__device__ void write_state(const Affine& s, {io}& h) {{ h = {io}(s.b); }}
"#
    );
    let host = host_floats!(state, |T| HostOperator {
        combine: Arc::new(|l, r, out| {
            let (la, lb, ra, rb) = (read::<T>(l, 0), read::<T>(l, 1), read::<T>(r, 0), read::<T>(r, 1));
            write(out, 0, la * ra);
            write(out, 1, ra.mul_add(lb, rb));
        }),
        load: Some(Arc::new(move |_, x, out| {
            write(out, 0, element(dtype, x[0]) as T);
            write(out, 1, element(dtype, x[1]) as T);
        })),
        store: Some(Arc::new(move |s, y| put_element(
            dtype,
            y[0],
            f64::from(read::<T>(s, 1))
        ))),
    });
    Ok(OperatorDesc::new(
        "linear_recurrence",
        &source,
        "Affine",
        2 * state.size(),
        state.size(),
        "compose",
        &state_bytes(dtype, &[1.0, 0.0])?,
    )
    .with_load("make_step", &[dtype, dtype])
    .with_store("write_state", &[dtype])
    .with_host(host))
}

/// The initial value of a [`linear_recurrence`] scan of `dtype` arrays starting from
/// state `h0` (an f32 state for f16 and bf16 arrays).
pub fn recurrence_init(dtype: DType, h0: f64) -> Result<Vec<u8>> {
    state_bytes(dtype, &[1.0, h0])
}

/// The adjoint of [`linear_recurrence`]: `lam[i] = g[i] + a[j] * lam[j]`, `j` the element
/// before `i` in traversal order (none at a segment's start): inputs `a`, `g`, output
/// `lam`; f32 or f64 (f16 and bf16 arrays with f32 states), as the recurrence.
///
/// It is the recurrence's gradient, scanned in the other direction: for `h[i] = a[i] *
/// h[i-1] + b[i]` and `g` the gradient of `h`, `lam` is the gradient of `b`, `lam[i] *
/// h[i-1]` that of `a[i]`, and `a[0] * lam[0]` that of `h0`. The coefficient comes from
/// the neighbour, so the gradient needs no shifted copy of `a`.
///
/// A state is what a run of elements does with what the element before it passes in,
/// `u`: its last element's `lam` is `p + q * u`, and that element passes on `a * lam`
/// (`has` is 0 for the empty run, the identity). An initial value of
/// [`recurrence_adjoint_init`] passes `u` to the first element (the gradient of the final
/// state); a total state passes on the gradient of `h0`, `a * p` (its fields 2 and 1).
pub fn linear_recurrence_adjoint(dtype: DType) -> Result<OperatorDesc> {
    let state = dtype.default_accumulator();
    let t = float_type("linear_recurrence_adjoint", state)?;
    let io = dtype.info().cuda;
    let source = format!(
        r#"struct Adjoint {{ {t} q, p, a, has; }};  // lam = p + q * u; passes a * lam
__device__ Adjoint chain(Adjoint first, Adjoint then) {{
    if (then.has == 0) return first;
    // What `first` passes on, as u_p + u_q * u.
    const {t} u_p = first.a * first.p, u_q = first.a * first.q;
    return Adjoint{{then.q * u_q, fma(then.q, u_p, then.p), then.a, 1}};
}}
__device__ Adjoint make_link(int64_t, {io} a, {io} g) {{ return Adjoint{{1, ({t})g, ({t})a, 1}}; }}
__device__ void write_lambda(const Adjoint& s, {io}& lam) {{ lam = {io}(s.p); }}
"#
    );
    let host = host_floats!(state, |T| HostOperator {
        combine: Arc::new(|l, r, out| {
            if read::<T>(r, 3) == 0.0 {
                out.copy_from_slice(l);
                return;
            }
            let (u_p, u_q) = (read::<T>(l, 2) * read::<T>(l, 1), read::<T>(l, 2) * read::<T>(l, 0));
            let (q, p) = (read::<T>(r, 0), read::<T>(r, 1));
            write(out, 0, q * u_q);
            write(out, 1, q.mul_add(u_p, p));
            write(out, 2, read::<T>(r, 2));
            write(out, 3, 1.0 as T);
        }),
        load: Some(Arc::new(move |_, x, out| {
            write(out, 0, 1.0 as T);
            write(out, 1, element(dtype, x[1]) as T);
            write(out, 2, element(dtype, x[0]) as T);
            write(out, 3, 1.0 as T);
        })),
        store: Some(Arc::new(move |s, y| put_element(
            dtype,
            y[0],
            f64::from(read::<T>(s, 1))
        ))),
    });
    Ok(OperatorDesc::new(
        "linear_recurrence_adjoint",
        &source,
        "Adjoint",
        4 * state.size(),
        state.size(),
        "chain",
        &state_bytes(dtype, &[1.0, 0.0, 1.0, 0.0])?,
    )
    .with_load("make_link", &[dtype, dtype])
    .with_store("write_lambda", &[dtype])
    .with_host(host))
}

/// The initial value of a [`linear_recurrence_adjoint`] scan of `dtype` arrays that passes
/// `u` to its first element: the gradient of the recurrence's final state.
pub fn recurrence_adjoint_init(dtype: DType, u: f64) -> Result<Vec<u8>> {
    state_bytes(dtype, &[0.0, u, 1.0, 1.0])
}
