//! Compiles every built-in kernel set (type pair x operator x direction x segmented, each
//! with its small-scan shape), every kernel set of the operator space the GPU suite
//! sweeps (tests/common/operator_space.rs) and of every recipe of every type it takes
//! with NVRTC for sm_90 (no GPU needed). Reports
//! "ignored" when libnvrtc is not on the library path. Through the disk cache, so the
//! same run fills a cache for a machine with that NVRTC version (scripts/stage.sh).
//!
//! `SCANRT_KERNEL_SETS=diagonal` compiles one variant of each type pair, operator and
//! key type instead, the variants taken in turn (`KernelCoverage::Diagonal`; an operator's
//! variant is a direction, segmentation and algorithm): every type, operator and
//! variant, in about a quarter of the time. CI sets it (two cores).

#[allow(dead_code)]
mod common;

use common::harness::{self, tests};
use scanrt::{
    compile_kernel_sets, compile_operator_set, compile_specialization, recipes, Algorithm, DType, Direction,
    KernelCoverage, Op, OperatorDesc, ScanDesc,
};

fn main() {
    harness::run(
        tests![
            every_specialization_compiles_with_nvrtc,
            the_operator_space_compiles_with_nvrtc,
            the_recipes_compile_with_nvrtc,
            the_examples_operators_compile_with_nvrtc
        ],
        no_nvrtc,
    )
}

/// Why NVRTC cannot compile here, if it cannot.
fn no_nvrtc() -> Option<String> {
    match compile_specialization(DType::U32, DType::U32, &ScanDesc::inclusive(Op::Sum), 90) {
        Err(e) if e.message.contains("could not be loaded") => Some(format!("NVRTC not found ({})", e.message)),
        _ => None,
    }
}

/// The kernel sets this run compiles: `SCANRT_KERNEL_SETS` (`every`, the default, or
/// `diagonal`).
fn kernel_coverage() -> KernelCoverage {
    match std::env::var("SCANRT_KERNEL_SETS").as_deref() {
        Err(_) | Ok("every") => KernelCoverage::Every,
        Ok("diagonal") => KernelCoverage::Diagonal,
        Ok(other) => panic!("SCANRT_KERNEL_SETS={other:?}: expected every or diagonal"),
    }
}

fn every_specialization_compiles_with_nvrtc() {
    let coverage = kernel_coverage();
    let images = compile_kernel_sets(90, coverage).unwrap_or_else(|e| panic!("{e}"));
    let small = images.iter().filter(|&&bytes| bytes <= 1000).count();
    assert_eq!(small, 0, "{small} suspiciously small images");
    eprintln!("compiled {} kernel sets for sm_90 ({coverage:?})", images.len());
    let least = match coverage {
        KernelCoverage::Every => 4 * 80,
        KernelCoverage::Diagonal => 80,
    };
    assert!(images.len() >= least, "only {} kernel sets", images.len());
}

/// Every state width, load and output form of the operator space, every kernel set.
fn the_operator_space_compiles_with_nvrtc() {
    let ops = common::operator_space::LaneOp::all();
    compile_all(&ops.iter().map(|op| op.desc()).collect::<Vec<_>>());
}

/// Every recipe over every type it takes, every kernel set: the kernels the recipes' GPU
/// tests and Python's functions run.
fn the_recipes_compile_with_nvrtc() {
    let floats = [DType::F16, DType::BF16, DType::F32, DType::F64];
    let mut descs = Vec::new();
    for dtype in floats {
        descs.push(recipes::linear_recurrence(dtype).unwrap());
        descs.push(recipes::linear_recurrence_adjoint(dtype).unwrap());
        descs.push(recipes::logcumsumexp(dtype).unwrap());
    }
    use DType::*;
    for dtype in [U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64] {
        for max in [true, false] {
            descs.push(recipes::cumulative_extreme(dtype, max).unwrap());
        }
    }
    compile_all(&descs);
}

/// The examples' operators, every variant whatever the coverage (they are few): user
/// source next to the translation unit's own names (a state named `Carry`, say).
fn the_examples_operators_compile_with_nvrtc() {
    use common::operators::examples;
    for desc in [
        examples::line_of_sight(),
        examples::fibonacci_matrix(),
        examples::carry_chain(),
        examples::lexer(),
        examples::range_histogram(),
    ] {
        for direction in [Direction::Forward, Direction::Backward] {
            for segmented in [false, true] {
                compile_operator_set(&desc, 90, direction, segmented, Algorithm::Auto)
                    .unwrap_or_else(|e| panic!("{} {direction:?} segmented={segmented}: {e}", desc.name));
            }
        }
    }
}

/// Compiles the kernel sets of `descs` on every core: each operator's every variant, or
/// with `KernelCoverage::Diagonal` the `i`-th operator's variant `i` (modulo their number).
fn compile_all(descs: &[OperatorDesc]) {
    let coverage = kernel_coverage();
    let mut variants = Vec::new();
    for direction in [Direction::Forward, Direction::Backward] {
        for segmented in [false, true] {
            for algorithm in [Algorithm::SinglePass, Algorithm::Matrix] {
                variants.push((direction, segmented, algorithm));
            }
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(desc) = descs.get(i) else { break };
                let mut bytes = 0;
                for (v, &(direction, segmented, algorithm)) in variants.iter().enumerate() {
                    if coverage.keeps(i, v, variants.len()) {
                        bytes += compile_operator_set(desc, 90, direction, segmented, algorithm).unwrap_or_else(|e| {
                            panic!("{} {direction:?} segmented={segmented} {algorithm:?}: {e}", desc.name)
                        });
                    }
                }
                assert!(bytes > 1000, "{}: {bytes} bytes of images", desc.name);
            });
        }
    });
    eprintln!(
        "compiled the kernel sets of {} operators for sm_90 ({coverage:?})",
        descs.len()
    );
}
