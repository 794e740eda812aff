//! Compiles every kernel specialisation (type pair x operator x direction x segmented)
//! with NVRTC for sm_90 (no GPU needed). Skips, saying so, when libnvrtc is not on the
//! library path.

use scanrt::{check_types, compile_specialization, Op, ScanDesc, Segments, TYPE_PAIRS};

#[test]
fn every_specialization_compiles_with_nvrtc() {
    let mut compiled = 0;
    for (input, output) in TYPE_PAIRS {
        for op in Op::ALL {
            if check_types(input, output, op).is_err() {
                continue;
            }
            for backward in [false, true] {
                for segmented in [false, true] {
                    let mut desc = ScanDesc::inclusive(op);
                    if backward {
                        desc = desc.backward();
                    }
                    if segmented {
                        desc = desc.segmented(Segments::ByteFlags);
                    }
                    match compile_specialization(input, output, &desc, 90) {
                        Ok(bytes) => {
                            assert!(
                                bytes > 1000,
                                "suspiciously small image for {input:?}->{output:?} {desc:?}"
                            );
                            compiled += 1;
                        }
                        Err(e) if e.message.contains("could not be loaded") => {
                            eprintln!("skipped: NVRTC not found ({})", e.message);
                            return;
                        }
                        Err(e) => panic!("{input:?} -> {output:?} {desc:?}: {e}"),
                    }
                }
            }
        }
    }
    eprintln!("compiled {compiled} specialisations for sm_90");
    assert!(compiled >= 4 * 80, "only {compiled} specialisations");
}
