//! Carries in memory against sequential loops, shared by the host and GPU suites: the
//! initial value read from memory and the total written to memory, for built-in
//! operators (exact types: u32, i64 and f64 sums of multiples of 1/8) and user-defined
//! ones (a 16-byte linear-recurrence state), every algorithm, both directions,
//! inclusive and exclusive, each carry form (in only, out only, both, one element for
//! both), at the sizes the caller names (the kernels' tile boundaries, 0 included); and
//! a long array scanned in random chunks that chain through one carry element.

use scanrt::{
    recipes, Algorithm, ArrayView, Buffer, Carries, CarryViews, Context, DType, Direction, Op, OperatorScan, ScanDesc,
    Stream,
};

use super::select::{download_bits, upload_bits};
use super::{Rng, TestInput, TestOutput};

/// Which carries a case passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarryForm {
    InOnly,
    OutOnly,
    Both,
    /// One element is the carry in and receives the carry out.
    Same,
}

pub const FORMS: [CarryForm; 4] = [CarryForm::InOnly, CarryForm::OutOnly, CarryForm::Both, CarryForm::Same];
pub const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Auto,
    Algorithm::SinglePass,
    Algorithm::DeterministicSinglePass,
    Algorithm::Matrix,
];

/// The running value after every element, in traversal order (the total).
fn total<T: TestOutput>(input: &[T], op: Op, init: T, backward: bool) -> T {
    let fold = |acc: T, x: &T| T::combine(op, acc, *x);
    if backward {
        input.iter().rev().fold(init, fold)
    } else {
        input.iter().fold(init, fold)
    }
}

/// One built-in scan of `n` random `T` with carries as `form` says; checks the output and
/// the total against sequential loops.
#[allow(clippy::too_many_arguments)]
pub fn builtin_case<T: TestInput + TestOutput + scanrt::Widen<T>>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    op: Op,
    n: usize,
    desc: ScanDesc,
    form: CarryForm,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let input: Vec<T> = super::random_vec(rng, op, n);
    let carry = T::random_init(rng, op);
    let sentinel = T::random_init(rng, op);
    let has_in = form != CarryForm::OutOnly;
    let has_out = form != CarryForm::InOnly;
    let carries_host: Vec<T> = vec![carry, sentinel];
    let carry_buf = Buffer::from_slice(ctx, stream, &carries_host).map_err(e)?;
    let in_buf = Buffer::from_slice(ctx, stream, &input).map_err(e)?;
    let mut out_buf = Buffer::new(ctx, T::DTYPE, n as u64).map_err(e)?;
    let element = |i: u64| {
        // SAFETY: element i < 2 of a live buffer of this context.
        unsafe { ArrayView::contiguous(carry_buf.addr() + i * T::DTYPE.size() as u64, T::DTYPE, &[1]) }
    };
    let (carry_in, carry_out) = (
        element(0).map_err(e)?,
        element(if form == CarryForm::Same { 0 } else { 1 }).map_err(e)?,
    );
    let carries = CarryViews {
        carry_in: has_in.then_some(&carry_in),
        carry_out: has_out.then_some(&carry_out),
    };
    ctx.scan_array_carried(
        stream,
        &ArrayView::of_buffer(&in_buf),
        &ArrayView::of_buffer_mut(&mut out_buf),
        -1,
        &desc,
        &carries,
    )
    .map_err(e)?;
    let got: Vec<T> = out_buf.download(stream, n).map_err(e)?;
    let got_carries: Vec<T> = carry_buf.download(stream, 2).map_err(e)?;
    let init = if has_in { carry } else { T::identity(op) };
    let reference_desc = ScanDesc {
        init: Some(scanrt::InitValue::of(init)),
        ..desc
    };
    super::compare(&input, &reference_desc, &got, super::gpu_depth(n.max(1)))?;
    let backward = desc.direction == Direction::Backward;
    let want_total = total(&input, op, init, backward);
    let (want0, want1) = match form {
        CarryForm::InOnly => (carry, sentinel),
        CarryForm::OutOnly | CarryForm::Both => (carry, want_total),
        CarryForm::Same => (want_total, sentinel),
    };
    if got_carries[0].to_bits() != want0.to_bits() || got_carries[1].to_bits() != want1.to_bits() {
        return Err(format!("carries: got {:?}, want [{want0:?}, {want1:?}]", got_carries));
    }
    Ok(())
}

/// A u64 sum of `n` elements scanned in random chunks, each chunk's carry in being the
/// last one's carry out (one element of device memory), against one sequential scan.
pub fn chained_chunks(ctx: &Context, stream: &Stream, rng: &mut Rng, n: usize, desc: ScanDesc) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let input: Vec<u64> = (0..n).map(|_| rng.below(1 << 40)).collect();
    let init = rng.next_u64();
    let in_buf = Buffer::from_slice(ctx, stream, &input).map_err(e)?;
    let out_buf = Buffer::new(ctx, DType::U64, n as u64).map_err(e)?;
    let carry_buf = Buffer::from_slice(ctx, stream, &[init]).map_err(e)?;
    let backward = desc.direction == Direction::Backward;
    let mut done = 0;
    while done < n {
        let len = (rng.below((n / 3).max(2) as u64) as usize + 1).min(n - done);
        // Backward scans chain from the end of the array.
        let start = if backward { n - done - len } else { done };
        // SAFETY: [start, start + len) lies inside both live buffers.
        let (input_view, output_view, carry) = unsafe {
            (
                ArrayView::contiguous(in_buf.addr() + 8 * start as u64, DType::U64, &[len as u64]).map_err(e)?,
                ArrayView::contiguous(out_buf.addr() + 8 * start as u64, DType::U64, &[len as u64]).map_err(e)?,
                ArrayView::contiguous(carry_buf.addr(), DType::U64, &[1]).map_err(e)?,
            )
        };
        let carries = CarryViews {
            carry_in: Some(&carry),
            carry_out: Some(&carry),
        };
        ctx.scan_array_carried(stream, &input_view, &output_view, -1, &desc, &carries)
            .map_err(e)?;
        done += len;
    }
    let got: Vec<u64> = out_buf.download(stream, n).map_err(e)?;
    let got_total: Vec<u64> = carry_buf.download(stream, 1).map_err(e)?;
    let want = scanrt::reference_scan::<u64, u64>(
        &input,
        &ScanDesc {
            init: Some(scanrt::InitValue::of(init)),
            ..desc
        },
    );
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        return Err(format!("element {i}: got {}, want {}", got[i], want[i]));
    }
    let want_total = input.iter().fold(init, |a, &x| a.wrapping_add(x));
    if got_total[0] != want_total {
        return Err(format!("total: got {}, want {want_total}", got_total[0]));
    }
    Ok(())
}

/// A linear recurrence (16-byte states `(A, B)`: h -> A h + B) of `n` f64 steps with
/// carries as `form` says, through a plan's raw entry point; checks `h` and the total
/// state against a sequential loop. Steps are exact: a = +-1, b a small integer.
pub fn recurrence_case(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    n: usize,
    scan: &OperatorScan,
    form: CarryForm,
) -> Result<(), String> {
    let e = |e: scanrt::Error| e.to_string();
    let op = ctx
        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
        .map_err(e)?;
    let a: Vec<f64> = (0..n).map(|_| if rng.below(2) == 0 { 1.0 } else { -1.0 }).collect();
    let b: Vec<f64> = (0..n).map(|_| rng.below(17) as f64 - 8.0).collect();
    // Carry in (A0, B0), then a sentinel state.
    let states = [-1.0, rng.below(100) as f64, 7.0, 7.0];
    let bits: Vec<u64> = states.iter().map(|v: &f64| v.to_bits()).collect();
    let carry_buf = upload_bits(ctx, stream, DType::U64, &bits).map_err(e)?;
    let a_buf = Buffer::from_slice(ctx, stream, &a).map_err(e)?;
    let b_buf = Buffer::from_slice(ctx, stream, &b).map_err(e)?;
    let h_buf = Buffer::new(ctx, DType::F64, n as u64).map_err(e)?;
    let has_in = form != CarryForm::OutOnly;
    let out_at = if form == CarryForm::Same { 0 } else { 16 };
    let carries = Carries {
        carry_in: if has_in { carry_buf.addr() } else { 0 },
        carry_out: if form == CarryForm::InOnly {
            0
        } else {
            carry_buf.addr() + out_at
        },
    };
    let plan = op.plan(n as u64, scan).map_err(e)?;
    // SAFETY: live buffers of n elements and two 16-byte states.
    unsafe {
        plan.execute_carried(stream, &[a_buf.addr(), b_buf.addr()], &[h_buf.addr()], 0, carries, None)
            .map_err(e)?;
    }
    let got: Vec<f64> = h_buf.download(stream, n).map_err(e)?;
    let got_states: Vec<f64> = download_bits(&carry_buf, stream, 4)
        .map_err(e)?
        .into_iter()
        .map(f64::from_bits)
        .collect();
    let (mut big_a, mut big_b) = if has_in { (states[0], states[1]) } else { (1.0, 0.0) };
    let backward = scan.direction == Direction::Backward;
    let mut want = vec![0.0; n];
    for i in 0..n {
        let p = if backward { n - 1 - i } else { i };
        let before = big_b;
        (big_a, big_b) = (big_a * a[p], a[p] * big_b + b[p]);
        want[p] = if scan.inclusive { big_b } else { before };
    }
    if let Some(p) = (0..n).find(|&p| got[p].to_bits() != want[p].to_bits()) {
        return Err(format!("h[{p}]: got {}, want {}", got[p], want[p]));
    }
    let want_states = match form {
        CarryForm::InOnly => [states[0], states[1], 7.0, 7.0],
        CarryForm::OutOnly | CarryForm::Both => [states[0], states[1], big_a, big_b],
        CarryForm::Same => [big_a, big_b, 7.0, 7.0],
    };
    if got_states != want_states {
        return Err(format!("states: got {got_states:?}, want {want_states:?}"));
    }
    Ok(())
}

/// Every case over `sizes`; returns the failures, each naming its case.
pub fn sweep_carries(ctx: &Context, stream: &Stream, seed: u64, sizes: &[usize]) -> Vec<String> {
    eprintln!("carries: seed {seed:#x}");
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut cases = 0;
    for &n in sizes {
        for algorithm in ALGORITHMS {
            for backward in [false, true] {
                for inclusive in [true, false] {
                    for (k, form) in FORMS.into_iter().enumerate() {
                        let mut desc = ScanDesc {
                            inclusive,
                            algorithm,
                            ..ScanDesc::inclusive(Op::Sum)
                        };
                        if backward {
                            desc = desc.backward();
                        }
                        // One type and operator per form, in turn.
                        let result = match k {
                            0 => builtin_case::<u32>(ctx, stream, &mut rng, Op::Sum, n, desc, form),
                            1 => builtin_case::<i64>(
                                ctx,
                                stream,
                                &mut rng,
                                Op::Max,
                                n,
                                ScanDesc { op: Op::Max, ..desc },
                                form,
                            ),
                            2 => builtin_case::<f64>(ctx, stream, &mut rng, Op::Sum, n, desc, form),
                            _ => builtin_case::<u32>(
                                ctx,
                                stream,
                                &mut rng,
                                Op::BitXor,
                                n,
                                ScanDesc { op: Op::BitXor, ..desc },
                                form,
                            ),
                        };
                        let scan = OperatorScan {
                            inclusive,
                            algorithm,
                            direction: desc.direction,
                            ..Default::default()
                        };
                        let recurrence = recurrence_case(ctx, stream, &mut rng, n, &scan, form);
                        cases += 2;
                        for (what, r) in [("built-in", result), ("recurrence", recurrence)] {
                            if let Err(msg) = r {
                                failures.push(format!(
                                    "{what} n={n} {algorithm:?} backward={backward} inclusive={inclusive} {form:?}: {msg}"
                                ));
                            }
                        }
                    }
                }
            }
        }
        for backward in [false, true] {
            let desc = if backward {
                ScanDesc::inclusive(Op::Sum).backward()
            } else {
                ScanDesc::inclusive(Op::Sum)
            };
            if n > 0 {
                cases += 1;
                if let Err(msg) = chained_chunks(ctx, stream, &mut rng, n, desc) {
                    failures.push(format!("chained n={n} backward={backward}: {msg}"));
                }
            }
        }
    }
    eprintln!("carries: {cases} cases, {} failures", failures.len());
    failures
}
