//! The tuning rows' invariants: ordered rows with provenance, shapes whose buffers fit,
//! bulk tiles no shorter than register-staged ones.

use super::*;

#[test]
fn rows_are_ordered_and_say_where_they_come_from() {
    assert!(ROWS.windows(2).all(|w| w[0].min_arch < w[1].min_arch));
    assert!(ROWS.iter().all(|r| !r.provenance.is_empty()));
    assert!(
        ROWS.iter().all(|r| r.bulk_buffers == 0 || r.min_arch >= 90),
        "bulk copies need sm_90"
    );
    assert_eq!(row(86).min_arch, 80);
    assert_eq!(row(90).min_arch, 90);
    assert_eq!(row(120).min_arch, 100);
    assert_eq!(row(75).min_arch, 80);
}

#[test]
fn rescanning_transforms_take_rows_whose_blocks_fit() {
    // (state bytes, bulk element bytes, segmented) -> (bulk items, blocks per SM) on sm_90
    let shape = |state, elem, seg| {
        let s = operator_shape(90, state, false, seg, elem);
        (s.bulk_items, s.bulk_min_blocks_per_sm)
    };
    assert_eq!(shape(4, 2, false), (24, 4), "f16 and bf16 sums: 4 blocks of 24 rows");
    assert_eq!(shape(4, 2, true), (28, 2), "segmented: the row's 2 blocks fit 28");
    assert_eq!(shape(8, 4, false), (12, 4), "logcumsumexp f32 keeps its rows");
    assert_eq!(shape(8, 8, false).0, 12, "a recurrence f32 rescans nothing");
    assert_eq!(
        shape(16, 8, false),
        (12, 2),
        "the recurrence's adjoint f32: 2 blocks of 12 rows"
    );
}

#[test]
fn fixed_order_scans_stay_within_the_portable_cluster() {
    // (what the device holds, portable size, fixed order) -> most tiles in the cluster
    assert_eq!(cluster_max_blocks(16, 8, false), 16);
    assert_eq!(cluster_max_blocks(16, 8, true), 8);
    assert_eq!(cluster_max_blocks(4, 8, true), 4);
    assert_eq!(cluster_max_blocks(0, 8, false), 0);
    let s = tile_shape(90, DType::U32, DType::U32, false);
    assert_eq!(s.cluster_tile_elems() * s.cluster_max_blocks as u64, 1 << 16);
    let segmented = tile_shape(90, DType::U32, DType::U32, true);
    assert_eq!(
        segmented.cluster_tile_elems() * segmented.cluster_max_blocks as u64,
        1 << 16
    );
    assert_eq!(tile_shape(80, DType::U32, DType::U32, false).cluster_threads, 0);
}

#[test]
fn operator_bulk_tiles_are_no_shorter_and_fit_the_sm() {
    for state in [4usize, 8, 16] {
        for segmented in [false, true] {
            for bulk_element_bytes in 1..=48 {
                let s = operator_shape(90, state, false, segmented, bulk_element_bytes);
                let case = format!("state {state}, arrays {bulk_element_bytes} B, segmented {segmented}: {s:?}");
                if s.bulk_buffers == 0 {
                    assert!(s.threads * s.bulk_items < s.threads * s.items, "{case}");
                    continue;
                }
                // Bulk tiles at least as long as the register-staged ones (see above).
                assert!(s.bulk_tile_elems() >= s.tile_elems(), "{case}");
                // The blocks the kernel is built for fit in shared memory.
                let per_block = s.bulk_shared_bytes(bulk_element_bytes) + 2048;
                assert!(s.bulk_min_blocks_per_sm * per_block <= 228 * 1024, "{case}");
            }
        }
    }
    // logcumsumexp f32 (8-byte states, 4-byte arrays) rescans at four blocks per SM.
    assert_eq!(operator_shape(90, 8, false, false, 4).bulk_min_blocks_per_sm, 4);
}

#[test]
fn bulk_and_small_shapes_keep_their_invariants() {
    for input in DType::ALL {
        for output in DType::ALL {
            for segmented in [false, true] {
                let s = tile_shape(90, input, output, segmented);
                // Bulk tiles at least as long as the register-staged ones.
                assert!(s.bulk_items >= s.items, "{input:?} -> {output:?}: {s:?}");
                // Bulk-copy rows are read as 16-byte vectors (when input = output).
                assert_eq!(s.bulk_items * output.size() as u32 % 16, 0, "{input:?} -> {output:?}");
                if segmented {
                    assert_eq!(s.bulk_items, s.items, "segment heads come per 8 or 16 items");
                }
                if segmented && s.items > 32 {
                    // A lane's heads must fit one word in the striped kernels.
                    assert_eq!(s.wave_threads + s.cluster_threads, 0, "{s:?}");
                } else {
                    assert!(
                        s.wave_threads.is_multiple_of(32) && s.wave_threads >= s.threads,
                        "{s:?}"
                    );
                }
            }
            let regular = tile_shape(90, input, output, false);
            if let Some(small) = small_scan_shape(&regular, input.size() as u32, false) {
                assert!(small.items < regular.items && small.bulk_buffers == 0);
                assert_eq!(small.items * input.size() as u32 % 16, 0, "{input:?} -> {output:?}");
                assert_eq!(small.items * output.size() as u32 % 16, 0, "{input:?} -> {output:?}");
            }
            assert!(small_scan_shape(&regular, input.size() as u32, true).is_none());
        }
    }
    let u32_regular = tile_shape(90, DType::U32, DType::U32, false);
    let u32_small = small_scan_shape(&u32_regular, 4, false).unwrap();
    assert_eq!(u32_small.tile_elems(), 2048);
    assert!(!takes_small_shape(&u32_regular, &u32_small, 4096)); // one regular tile
    assert!(takes_small_shape(&u32_regular, &u32_small, 4097));
    assert!(takes_small_shape(&u32_regular, &u32_small, 1 << 16));
    assert!(!takes_small_shape(&u32_regular, &u32_small, (1 << 16) + 1));
    assert_eq!(u32_regular.bulk_tile_elems(), 7168);
    assert_eq!(u32_regular.wave_tile_elems(), 8192);
    assert_eq!(u32_regular.bulk_shared_bytes(4), 4 * 28 * 1024);
    assert_eq!(tile_shape(80, DType::U32, DType::U32, false).bulk_buffers, 0);
}
