//! Compiles every kernel set (type pair x operator x direction x segmented, each with its
//! small-scan shape) with NVRTC for sm_90 (no GPU needed), on every core. Reports
//! "ignored" when libnvrtc is not on the library path. Through the disk cache, so the
//! same run fills a cache for a machine with that NVRTC version (scripts/stage.sh).

#[allow(dead_code)]
mod common;

use common::harness::{self, tests};
use rayon::prelude::*;
use scanrt::{check_types, compile_specialization, DType, Op, ScanDesc, Segments, TYPE_PAIRS};

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
    let mut cases = Vec::new();
    for (input, output) in TYPE_PAIRS {
        for op in Op::ALL.into_iter().filter(|&op| check_types(input, output, op).is_ok()) {
            for backward in [false, true] {
                for segmented in [false, true] {
                    let mut desc = ScanDesc::inclusive(op);
                    if backward {
                        desc = desc.backward();
                    }
                    if segmented {
                        desc = desc.segmented(Segments::ByteFlags);
                    }
                    cases.push((input, output, desc));
                }
            }
        }
    }
    let failures: Vec<String> = cases
        .par_iter()
        .filter_map(
            |(input, output, desc)| match compile_specialization(*input, *output, desc, 90) {
                Ok(bytes) if bytes > 1000 => None,
                Ok(bytes) => Some(format!(
                    "{input:?} -> {output:?} {desc:?}: suspiciously small image ({bytes} bytes)"
                )),
                Err(e) => Some(format!("{input:?} -> {output:?} {desc:?}: {e}")),
            },
        )
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("compiled {} kernel sets for sm_90", cases.len());
    assert!(cases.len() >= 4 * 80, "only {} kernel sets", cases.len());
}
