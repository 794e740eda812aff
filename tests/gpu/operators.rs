//! User-defined operators and the recipes on the GPU: thousands of randomized cases
//! against sequential loops (tests/common/operators.rs), every edge size around the
//! tiles, both directions, byte-flag and row segments, misaligned and in-place arrays,
//! deterministic and matrix algorithms; bad operators get a status with the compiler log.

use scanrt::{recipes, Algorithm, DType, OperatorDesc, ScanrtStatus};

use crate::common::operators::*;
use crate::common::*;

/// Lengths around one and many tiles of every operator shape (tiles of 128 x 1 .. 256 x 16).
fn sizes() -> Vec<usize> {
    let mut s = vec![
        1,
        2,
        3,
        31,
        127,
        128,
        129,
        1000,
        2047,
        2048,
        2049,
        4095,
        4096,
        4097,
        8191,
        8193,
        100_000,
        1 << 20,
    ];
    s.extend([(1 << 20) + 17, 3 << 19]);
    s
}

fn tally(results: impl Iterator<Item = Result<(), String>>, label: &str) {
    let failures: Vec<String> = results.filter_map(Result::err).collect();
    let shown: Vec<&String> = failures.iter().take(5).collect();
    assert!(
        failures.is_empty(),
        "{label}: {} failures, first: {shown:#?}",
        failures.len()
    );
}

pub fn recipes_match_sequential_loops() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let mut rng = Rng(0x21);
    let sizes = sizes();
    let cases = 300;
    for dtype in [DType::F32, DType::F64] {
        let op = ctx.create_operator(recipes::linear_recurrence(dtype).unwrap()).unwrap();
        let mut results: Vec<_> = (0..cases)
            .map(|_| {
                let shape = Shape::random(&mut rng, &sizes);
                check_recurrence(ctx, &stream, &op, dtype, &mut rng, shape)
            })
            .collect();
        for n in [1000, 100_000, 3 << 19] {
            results.push(check_recurrence_in_chunks(ctx, &stream, &op, dtype, &mut rng, n));
        }
        tally(results.into_iter(), &format!("linear recurrence {dtype:?}"));
        let adjoint = ctx
            .create_operator(recipes::linear_recurrence_adjoint(dtype).unwrap())
            .unwrap();
        let results = (0..cases).map(|_| {
            let shape = Shape::random(&mut rng, &sizes);
            check_recurrence_adjoint(ctx, &stream, &adjoint, dtype, &mut rng, shape)
        });
        tally(results, &format!("linear recurrence adjoint {dtype:?}"));
    }
    for dtype in [DType::F16, DType::BF16] {
        let results = sizes
            .iter()
            .flat_map(|&n| [(false, false), (true, false), (false, true), (true, true)].map(|shape| (n, shape)))
            .map(|(n, (backward, adjoint))| check_half_recurrence(ctx, &stream, dtype, &mut rng, n, backward, adjoint));
        tally(
            results,
            &format!("linear recurrence and adjoint {dtype:?} with f32 states"),
        );
    }
    for dtype in EXTREME_TYPES {
        for max in [true, false] {
            let op = ctx
                .create_operator(recipes::cumulative_extreme(dtype, max).unwrap())
                .unwrap();
            let results: Vec<_> = (0..cases)
                .map(|_| {
                    let shape = Shape::random(&mut rng, &sizes);
                    check_extreme_of(dtype, ctx, &stream, &op, max, &mut rng, shape)
                })
                .collect();
            tally(results.into_iter(), &format!("cumulative extreme {dtype:?} max={max}"));
        }
    }
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let op = ctx.create_operator(recipes::logcumsumexp(dtype).unwrap()).unwrap();
        let results: Vec<_> = (0..cases)
            .map(|_| {
                let shape = Shape::random(&mut rng, &sizes);
                check_logcumsumexp(ctx, &stream, &op, dtype, &mut rng, shape)
            })
            .collect();
        tally(results.into_iter(), &format!("logcumsumexp {dtype:?}"));
    }
}

pub fn examples_match_sequential_loops() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let mut rng = Rng(0x0e);
    let sizes = sizes();
    type Check = fn(&scanrt::Context, &scanrt::Stream, &scanrt::Operator, &mut Rng, Shape) -> Result<(), String>;
    let cases: [(&str, OperatorDesc, Check); 5] = [
        ("line of sight", examples::line_of_sight(), check_line_of_sight),
        (
            "fibonacci matrices",
            examples::fibonacci_matrix(),
            check_fibonacci_matrix,
        ),
        ("multi-precision additions", examples::carry_chain(), check_carry_chain),
        ("lexers", examples::lexer(), check_lexer),
        ("range histograms", examples::range_histogram(), check_range_histogram),
    ];
    for (name, desc, check) in cases {
        let op = ctx.create_operator(desc).unwrap();
        let results: Vec<_> = (0..400)
            .map(|_| {
                let shape = Shape::random(&mut rng, &sizes);
                check(ctx, &stream, &op, &mut rng, shape)
            })
            .collect();
        tally(results.into_iter(), name);
    }
    let recurrence = ctx
        .create_operator(recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    let results: Vec<_> = (0..300)
        .map(|_| {
            let (rows, terms) = (1 + rng.below(3000) as usize, 1 + rng.below(2000) as usize);
            check_polynomials(ctx, &stream, &recurrence, &mut rng, rows, terms)
        })
        .collect();
    tally(results.into_iter(), "polynomials");
}

pub fn wide_non_commutative_states_every_algorithm() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let mut rng = Rng(0x16);
    let op = ctx.create_operator(matrix_product()).unwrap();
    let sizes = sizes();
    let results: Vec<_> = (0..400)
        .map(|i| {
            let shape = Shape::random(&mut rng, &sizes);
            let algorithm = [Algorithm::Auto, Algorithm::Matrix, Algorithm::DeterministicSinglePass][i % 3];
            check_matrix_product(ctx, &stream, &op, &mut rng, shape, algorithm)
        })
        .collect();
    tally(results.into_iter(), "2x2 matrix products");
}

/// A 4-byte state built from two 4-byte arrays (a running sum of products, u32, exact):
/// its bulk-copy rows would be shorter than its register-staged ones, so it must scan on
/// a workspace counted in register-staged tiles at every size.
pub fn narrow_states_of_wide_arrays() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let desc = OperatorDesc::new(
        "sum_of_products",
        "__device__ uint32_t add(uint32_t a, uint32_t b) { return a + b; }\n\
         __device__ uint32_t product(int64_t, uint32_t a, uint32_t b) { return a * b; }\n",
        "uint32_t",
        4,
        4,
        "add",
        &[0; 4],
    )
    .with_load("product", &[DType::U32, DType::U32]);
    let op = ctx.create_operator(desc).unwrap();
    let mut rng = Rng(6);
    for n in [4097usize, (1 << 20) + 3, (1 << 22) + 1] {
        let (a, b): (Vec<u32>, Vec<u32>) = (0..n).map(|_| (rng.next_u64() as u32, rng.next_u64() as u32)).unzip();
        let (av, bv) = (
            scanrt::Buffer::from_slice(ctx, &stream, &a).unwrap(),
            scanrt::Buffer::from_slice(ctx, &stream, &b).unwrap(),
        );
        let output = scanrt::Buffer::new(ctx, DType::U32, n as u64).unwrap();
        // SAFETY: every buffer holds n u32 values.
        unsafe {
            op.scan_raw(
                &stream,
                &[av.addr(), bv.addr()],
                &[output.addr()],
                n as u64,
                0,
                &scanrt::OperatorScan::inclusive(),
                None,
            )
        }
        .unwrap_or_else(|e| panic!("n = {n}: {e}"));
        let got: Vec<u32> = output.download(&stream, n).unwrap();
        let mut running = 0u32;
        for i in 0..n {
            running = running.wrapping_add(a[i].wrapping_mul(b[i]));
            assert_eq!(got[i], running, "n = {n}, element {i}");
        }
    }
}

pub fn user_u32_sum_equals_the_built_in_sum() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let sum = OperatorDesc::new(
        "user_sum",
        "__device__ uint32_t add(uint32_t a, uint32_t b) { return a + b; }\n",
        "uint32_t",
        4,
        4,
        "add",
        &[0; 4],
    );
    let op = ctx.create_operator(sum).unwrap();
    let mut rng = Rng(5);
    for n in [1usize, 4096, 4097, 1 << 16, (1 << 20) + 3, 1 << 24, (1 << 26) + 5] {
        let x: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        let input = scanrt::Buffer::from_slice(ctx, &stream, &x).unwrap();
        let output = scanrt::Buffer::new(ctx, DType::U8, 4 * n as u64).unwrap();
        let bytes = |b: &scanrt::Buffer| b.addr();
        // SAFETY: both buffers hold n u32 values.
        unsafe {
            op.scan_raw(
                &stream,
                &[bytes(&input)],
                &[bytes(&output)],
                n as u64,
                0,
                &scanrt::OperatorScan::inclusive(),
                None,
            )
        }
        .unwrap();
        let got: Vec<u8> = output.download(&stream, 4 * n).unwrap();
        let mut running = 0u32;
        for (i, &v) in x.iter().enumerate() {
            running = running.wrapping_add(v);
            let g = u32::from_ne_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
            assert_eq!(g, running, "n = {n}, element {i}");
        }
    }
}

pub fn bad_operators_get_a_status_and_the_compiler_log() {
    let ctx = gpu();
    let bad = OperatorDesc::new(
        "my_op",
        "struct S { int x; };\n__device__ S f(S a, S b) { return a + b; }\n",
        "S",
        4,
        4,
        "f",
        &[0; 4],
    );
    let e = ctx.create_operator(bad).err().expect("a bad source must fail");
    assert_eq!(e.status, ScanrtStatus::CompileError);
    assert!(
        e.message.contains("my_op(2): error"),
        "the log cites the user's line: {}",
        e.message
    );
    let wrong_size = OperatorDesc::new(
        "sized",
        "struct S { int x, y; };\n__device__ S f(S a, S b) { return b; }\n",
        "S",
        4,
        4,
        "f",
        &[0; 4],
    );
    let e = ctx.create_operator(wrong_size).err().expect("a wrong size must fail");
    assert!(e.message.contains("state_size"), "{}", e.message);
    let too_big = OperatorDesc::new("big", "", "S", 68, 4, "f", &[0; 68]);
    assert_eq!(
        ctx.create_operator(too_big).err().unwrap().status,
        ScanrtStatus::InvalidArgument
    );
    // The context still scans.
    let stream = ctx.new_stream().unwrap();
    let op = ctx.create_operator(recipes::logcumsumexp(DType::F32).unwrap()).unwrap();
    let mut rng = Rng(1);
    check_logcumsumexp(ctx, &stream, &op, DType::F32, &mut rng, Shape::plain(5000)).unwrap();
}

/// Two operators of one name (and two recipes of one name for two types) keep their own
/// kernels: a context once handed the first one's module to the second.
pub fn operators_of_one_name_keep_their_own_kernels() {
    let (ctx, stream) = (gpu(), gpu().new_stream().unwrap());
    let op = |expression: &str| {
        let source = format!("__device__ uint32_t f(uint32_t a, uint32_t b) {{ return {expression}; }}\n");
        ctx.create_operator(OperatorDesc::new("same_name", &source, "uint32_t", 4, 4, "f", &[0; 4]))
            .unwrap()
    };
    let (sum, xor) = (op("a + b"), op("a ^ b"));
    let n = 10_000usize;
    let mut rng = Rng(9);
    let x: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    let input = scanrt::Buffer::from_slice(ctx, &stream, &x).unwrap();
    let folds: [(&scanrt::Operator, fn(u32, u32) -> u32); 2] = [(&sum, u32::wrapping_add), (&xor, |a, b| a ^ b)];
    for (op, fold) in folds {
        let output = scanrt::Buffer::new(ctx, DType::U32, n as u64).unwrap();
        // SAFETY: both buffers hold n u32 values.
        unsafe {
            op.scan_raw(
                &stream,
                &[input.addr()],
                &[output.addr()],
                n as u64,
                0,
                &scanrt::OperatorScan::inclusive(),
                None,
            )
        }
        .unwrap();
        let got: Vec<u32> = output.download(&stream, n).unwrap();
        let mut running = 0u32;
        for i in 0..n {
            running = fold(running, x[i]);
            assert_eq!(got[i], running, "element {i}");
        }
    }
}
