//! Recipes, the examples' operators and the operator space on the host backend.

use crate::common::*;
use scanrt::{Backend, Context, DType};

#[test]
fn recipes_and_user_operators_on_the_host_backend() {
    use crate::common::operators::*;
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(0x4057);
    let sizes = [1, 2, 3, 100, 1000, 4097];
    for dtype in [DType::F32, DType::F64] {
        let op = ctx
            .create_operator(scanrt::recipes::linear_recurrence(dtype).unwrap())
            .unwrap();
        for _ in 0..40 {
            let shape = Shape::random(&mut rng, &sizes);
            check_recurrence(&ctx, &stream, &op, dtype, &mut rng, shape).unwrap();
        }
        check_recurrence_in_chunks(&ctx, &stream, &op, dtype, &mut rng, 5000).unwrap();
        let adjoint = ctx
            .create_operator(scanrt::recipes::linear_recurrence_adjoint(dtype).unwrap())
            .unwrap();
        for _ in 0..40 {
            let shape = Shape::random(&mut rng, &sizes);
            check_recurrence_adjoint(&ctx, &stream, &adjoint, dtype, &mut rng, shape).unwrap();
        }
    }
    for dtype in [DType::F16, DType::BF16] {
        for (n, backward) in [(1, false), (1000, true), (5000, false)] {
            for adjoint in [false, true] {
                check_half_recurrence(&ctx, &stream, dtype, &mut rng, n, backward, adjoint).unwrap();
            }
        }
    }
    for dtype in EXTREME_TYPES {
        for max in [true, false] {
            let op = ctx
                .create_operator(scanrt::recipes::cumulative_extreme(dtype, max).unwrap())
                .unwrap();
            for _ in 0..40 {
                let shape = Shape::random(&mut rng, &sizes);
                check_extreme_of(dtype, &ctx, &stream, &op, max, &mut rng, shape).unwrap();
            }
        }
    }
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let op = ctx
            .create_operator(scanrt::recipes::logcumsumexp(dtype).unwrap())
            .unwrap();
        for _ in 0..40 {
            let shape = Shape::random(&mut rng, &sizes);
            check_logcumsumexp(&ctx, &stream, &op, dtype, &mut rng, shape).unwrap();
        }
    }
    let sight = ctx.create_operator(examples::line_of_sight()).unwrap();
    let fibonacci = ctx.create_operator(examples::fibonacci_matrix()).unwrap();
    let carries = ctx.create_operator(examples::carry_chain()).unwrap();
    let lexer = ctx.create_operator(examples::lexer()).unwrap();
    let histograms = ctx.create_operator(examples::range_histogram()).unwrap();
    let recurrence = ctx
        .create_operator(scanrt::recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    for _ in 0..40 {
        let shape = Shape::random(&mut rng, &sizes);
        check_line_of_sight(&ctx, &stream, &sight, &mut rng, shape).unwrap();
        let shape = Shape::random(&mut rng, &sizes);
        check_fibonacci_matrix(&ctx, &stream, &fibonacci, &mut rng, shape).unwrap();
        let shape = Shape::random(&mut rng, &sizes);
        check_carry_chain(&ctx, &stream, &carries, &mut rng, shape).unwrap();
        let shape = Shape::random(&mut rng, &sizes);
        check_lexer(&ctx, &stream, &lexer, &mut rng, shape).unwrap();
        let shape = Shape::random(&mut rng, &sizes);
        check_range_histogram(&ctx, &stream, &histograms, &mut rng, shape).unwrap();
        let (rows, terms) = (1 + rng.below(50) as usize, 1 + rng.below(100) as usize);
        check_polynomials(&ctx, &stream, &recurrence, &mut rng, rows, terms).unwrap();
    }
    // Without host functions the host backend refuses with a specific status.
    let op = ctx.create_operator(matrix_product()).unwrap();
    let shape = Shape::plain(10);
    let e = check_matrix_product(&ctx, &stream, &op, &mut rng, shape, scanrt::Algorithm::Auto).unwrap_err();
    assert!(e.contains("no host functions"), "{e}");
}

/// The operator space (tests/common/operator_space.rs) on the host backend: every state
/// width, load and output form, crossed with every combination of direction,
/// inclusive/exclusive, segment form and initial state, at small lengths.
#[test]
fn operator_space_on_the_host_backend() {
    use crate::common::operator_space::*;
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let seed = 0x5eed_0057;
    let mut rng = Rng(seed);
    let small = [1, 2, 3, 31, 33, 127, 128, 129, 1000, 4097];
    for lane_op in LaneOp::all() {
        let op = ctx.create_operator(lane_op.desc()).unwrap();
        for i in 0..sweep_length(&small) {
            let case = Case::nth(&lane_op, &small, i, &mut rng);
            check_case(&ctx, &stream, &op, &lane_op, &case).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        }
    }
}

/// An operator's plan, made once, runs on other arrays of its length (`execute_arrays`),
/// each result the sequential loop's; arrays of another count are refused.
#[test]
fn an_operator_plan_runs_on_any_arrays() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let op = ctx
        .create_operator(scanrt::recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    let n = 1000;
    let plan = op.plan(n as u64, &scanrt::OperatorScan::inclusive()).unwrap();
    let mut rng = Rng(0x91a7);
    for round in 0..3 {
        let a: Vec<f64> = (0..n).map(|_| (rng.below(2001) as f64 - 1000.0) / 1000.0).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.below(1000) as f64).collect();
        let mut h = vec![f64::NAN; n];
        // SAFETY: host arrays of n elements each, alive across the (synchronous) host scan.
        unsafe {
            plan.execute_arrays(
                &stream,
                &[a.as_ptr() as u64, b.as_ptr() as u64],
                &[h.as_mut_ptr() as u64],
                0,
                None,
            )
        }
        .unwrap();
        // The host functions may fuse or associate the multiply-add differently: a bound
        // far below any wrong element's error (|a| <= 1, so errors do not grow).
        let mut state = 0.0f64;
        for i in 0..n {
            state = a[i] * state + b[i];
            let tolerance = 1e-12 * state.abs().max(1.0);
            assert!(
                (h[i] - state).abs() <= tolerance,
                "round {round}, element {i}: {} against {state}",
                h[i]
            );
        }
        // SAFETY: refused before anything is read or written.
        let e = unsafe { plan.execute_arrays(&stream, &[a.as_ptr() as u64], &[h.as_mut_ptr() as u64], 0, None) }
            .unwrap_err();
        assert_eq!(e.status, scanrt::ScanrtStatus::InvalidArgument, "{}", e.message);
    }
}

/// A cumulative extreme keeps u32 indices: a sequence of more elements than they number
/// is refused (planned 1-D, batched as rows, or along an axis), never wrapped.
#[test]
fn cumulative_extremes_refuse_sequences_their_indices_cannot_number() {
    use scanrt::{ArrayView, OperatorScan, ScanrtStatus, Segments};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let limit = scanrt::recipes::EXTREME_INITIAL_INDEX as u64;
    let op = ctx
        .create_operator(scanrt::recipes::cumulative_extreme(DType::U8, true).unwrap())
        .unwrap();
    assert!(op.plan(limit, &OperatorScan::default()).is_ok());
    for scan in [
        OperatorScan::default(),
        OperatorScan {
            segments: Segments::Rows(1 << 20),
            ..OperatorScan::default()
        },
    ] {
        let e = op.plan(limit + 1, &scan).err().expect("a scan past the index limit");
        assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{}", e.message);
        assert!(e.message.contains("at most"), "{}", e.message);
    }
    // Along an axis the index counts along it: [2, limit + 1] (a zero stride repeats one
    // element, so no memory of that size is needed) is refused along axis 1, and the
    // message comes before any element is read.
    let x = [7u8];
    let mut values = [0u8; 1];
    let mut indices = [0u32; 1];
    // SAFETY: zero strides keep every view on its one element.
    let (input, out_v, out_i) = unsafe {
        (
            ArrayView::strided(x.as_ptr() as u64, DType::U8, &[2, limit + 1], &[0, 0]).unwrap(),
            ArrayView::strided(values.as_mut_ptr() as u64, DType::U8, &[2, limit + 1], &[0, 0]).unwrap(),
            ArrayView::strided(indices.as_mut_ptr() as u64, DType::U32, &[2, limit + 1], &[0, 0]).unwrap(),
        )
    };
    let e = op
        .scan_arrays_along(
            &stream,
            &[input],
            &[out_v, out_i],
            1,
            &OperatorScan::default(),
            &Default::default(),
        )
        .expect_err("a scan along an axis past the index limit");
    assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{}", e.message);
    assert!(e.message.contains("at most"), "{}", e.message);
}

/// The recipes' initial values refuse values of another type, and types the recipe
/// does not take, by status.
#[test]
fn recipe_initial_values_check_their_types() {
    use scanrt::{recipes, InitValue, ScanrtStatus};
    let e = recipes::cumulative_extreme_init(DType::F32, InitValue::of(1u32)).unwrap_err();
    assert_eq!(e.status, ScanrtStatus::InvalidArgument, "{}", e.message);
    let e = recipes::logcumsumexp_init(DType::I32, 1.0).unwrap_err();
    assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{}", e.message);
    // f16 values widen exactly into the state; the index marks the initial value.
    let state = recipes::cumulative_extreme_init(DType::F16, InitValue::of(scanrt::half::f16::from_f32(1.5))).unwrap();
    assert_eq!(state.len(), 8);
    assert_eq!(&state[..2], &scanrt::half::f16::from_f32(1.5).to_bits().to_ne_bytes());
    assert_eq!(&state[4..8], &recipes::EXTREME_INITIAL_INDEX.to_ne_bytes());
    assert_eq!(
        recipes::logcumsumexp_init(DType::BF16, 2.0).unwrap(),
        [2.0f32, 1.0].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>()
    );
}

/// A transform whose host functions lack its load or store is refused by the host
/// backend (its elements would be taken for states), with nothing written.
#[test]
fn host_scans_need_the_host_twin_of_every_load_and_store() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    for missing in ["load", "store"] {
        let mut desc = scanrt::recipes::linear_recurrence(DType::F64).unwrap();
        let host = desc.host.as_mut().unwrap();
        match missing {
            "load" => host.load = None,
            _ => host.store = None,
        }
        let op = ctx.create_operator(desc).unwrap();
        let plan = op.plan(4, &scanrt::OperatorScan::inclusive()).unwrap();
        let (a, b, mut h) = ([0.5f64; 4], [1.0f64; 4], [7.0f64; 4]);
        // SAFETY: host arrays of 4 elements, alive across the (synchronous) call.
        let e = unsafe {
            plan.execute_arrays(
                &stream,
                &[a.as_ptr() as u64, b.as_ptr() as u64],
                &[h.as_mut_ptr() as u64],
                0,
                None,
            )
        }
        .unwrap_err();
        assert_eq!(e.status, scanrt::ScanrtStatus::UnsupportedCombination, "{missing}: {e}");
        assert_eq!(h, [7.0; 4], "{missing}: a refused scan wrote its output");
    }
}
