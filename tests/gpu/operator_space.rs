//! The operator space swept on the GPU (tests/common/operator_space.rs): states of 4 to 64
//! bytes in steps of 4, each with a load and one or two outputs, or states in and out;
//! for each, every length across the kernels' tile boundaries crossed with every
//! combination of algorithm, direction, inclusive/exclusive, segment form and initial
//! state, then lengths from 2^20 to past 2^24. Four tests split the widths so that the
//! parallel runner (scripts/gpu-tests-parallel.sh) runs them side by side.

use scanrt::{compile_operator, Algorithm, Context, Operator};

use crate::common::operator_space::*;
use crate::common::*;

fn sm_count(ctx: &Context) -> usize {
    // "NAME (sm_90, 132 SMs)"
    let d = ctx.describe();
    d.rsplit(", ")
        .next()
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no SM count in {d:?}"))
}

fn arch(ctx: &Context) -> i32 {
    let d = ctx.describe();
    let at = d.find("(sm_").expect("an architecture") + 4;
    d[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The operators of `widths`, each compiled (every kernel set, on parallel threads, into
/// the disk cache) before the sweep needs it.
fn operators(ctx: &Context, widths: std::ops::RangeInclusive<usize>) -> Vec<(LaneOp, Operator)> {
    let ops: Vec<LaneOp> = LaneOp::all()
        .into_iter()
        .filter(|o| widths.contains(&o.width))
        .collect();
    let arch = arch(ctx);
    std::thread::scope(|s| {
        for op in &ops {
            s.spawn(move || compile_operator(&op.desc(), arch).unwrap_or_else(|e| panic!("{}: {e}", op.name())));
        }
    });
    ops.into_iter()
        .map(|op| (op, ctx.create_operator(op.desc()).unwrap()))
        .collect()
}

fn sweep(widths: std::ops::RangeInclusive<usize>, seed: u64) {
    let ctx = gpu();
    let stream = ctx.new_stream().unwrap();
    let mut rng = Rng(seed);
    eprintln!("operator space, widths {widths:?}: seed {seed:#x}");
    let sizes = boundary_sizes(sm_count(ctx));
    let mut failures = Vec::new();
    let mut cases = 0;
    for (lane_op, op) in operators(ctx, widths) {
        for i in 0..sweep_length(&sizes) {
            let case = Case::nth(&lane_op, &sizes, i, &mut rng);
            cases += 1;
            if let Err(e) = check_case(ctx, &stream, &op, &lane_op, &case) {
                failures.push(e);
            }
        }
        // Large lengths, built by a load (the shape of the reported failures), in random
        // combinations, and the reported one itself: forward, inclusive, automatic.
        if lane_op.load {
            for (i, &n) in LARGE_SIZES.iter().enumerate() {
                let mut case = Case::nth(&lane_op, &LARGE_SIZES, i, &mut rng);
                if i % 2 == 0 {
                    case = Case {
                        algorithm: Algorithm::Auto,
                        deterministic: false,
                        backward: false,
                        exclusive: false,
                        ..case
                    };
                }
                cases += 1;
                if let Err(e) = check_case(ctx, &stream, &op, &lane_op, &Case { n, ..case }) {
                    failures.push(e);
                }
            }
        }
    }
    eprintln!("{cases} cases, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed (seed {seed:#x}); first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(8)]
    );
}

pub fn operator_space_states_of_4_to_16_bytes() {
    sweep(4..=16, 0x5eed_0416);
}

pub fn operator_space_states_of_20_to_32_bytes() {
    sweep(20..=32, 0x5eed_2032);
}

pub fn operator_space_states_of_36_to_48_bytes() {
    sweep(36..=48, 0x5eed_3648);
}

pub fn operator_space_states_of_52_to_64_bytes() {
    sweep(52..=64, 0x5eed_5264);
}
