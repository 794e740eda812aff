//! Compiles every built-in kernel set (type pair x operator x direction x segmented, each
//! with its small-scan shape) with NVRTC for sm_90 (no GPU needed), on every core. Reports
//! "ignored" when libnvrtc is not on the library path. Through the disk cache, so the
//! same run fills a cache for a machine with that NVRTC version (scripts/stage.sh).

#[allow(dead_code)]
mod common;

use common::harness::{self, tests};
use scanrt::{compile_kernel_sets, compile_specialization, DType, Op, ScanDesc};

fn main() {
    harness::run(tests![every_specialization_compiles_with_nvrtc], no_nvrtc)
}

/// Why NVRTC cannot compile here, if it cannot.
fn no_nvrtc() -> Option<String> {
    match compile_specialization(DType::U32, DType::U32, &ScanDesc::inclusive(Op::Sum), 90) {
        Err(e) if e.message.contains("could not be loaded") => Some(format!("NVRTC not found ({})", e.message)),
        _ => None,
    }
}

fn every_specialization_compiles_with_nvrtc() {
    let images = compile_kernel_sets(90).unwrap_or_else(|e| panic!("{e}"));
    let small = images.iter().filter(|&&bytes| bytes <= 1000).count();
    assert_eq!(small, 0, "{small} suspiciously small images");
    eprintln!("compiled {} kernel sets for sm_90", images.len());
    assert!(images.len() >= 4 * 80, "only {} kernel sets", images.len());
}
