//! Strided scans on the host backend: the shared sweep of `common::strided` (every
//! layout, type pair, operator, direction and carry form) at small shapes, empty ones
//! included.

use scanrt::{Backend, Context};

use crate::common::strided::sweep;

#[test]
fn strided_layouts_match_the_reference() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (2, 3, 5), (1, 65, 33), (3, 100, 2), (2, 0, 3), (1, 7, 0)];
    let failures = sweep(&ctx, &stream, 0x57_81DE, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn summed_area_tables_match_nested_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (1, 7, 5), (2, 13, 40), (1, 0, 3), (1, 9, 70)];
    let failures = crate::common::summed_area::summed_area_tables(&ctx, &stream, 0x5A7, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn user_operators_along_an_axis_match_sequential_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (2, 3, 5), (1, 65, 33), (3, 40, 2), (2, 0, 3), (1, 7, 0)];
    let failures = crate::common::strided_operators::sweep(&ctx, &stream, 0x0957_81DE, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A summed-area table whose column pass would be refused writes nothing: the row pass
/// does not run first. Each refused case's row pass alone is accepted (so a call that
/// ran it before checking the column pass would have written its rows).
#[test]
fn summed_area_tables_refused_by_their_column_pass_write_nothing() {
    use scanrt::{Algorithm, ArrayView, DType, ScanDesc, ScanrtStatus};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let input = vec![1u32; 190];
    let mut out = vec![9u32; 190];
    let mut scratch = vec![9u32; 190];
    let sum = ScanDesc::default();
    // SAFETY: every view reaches at most the 190 elements of its vector.
    unsafe {
        let square_in = ArrayView::contiguous(input.as_ptr() as u64, DType::U32, &[8, 8]).unwrap();
        let square_out = ArrayView::contiguous(out.as_mut_ptr() as u64, DType::U32, &[8, 8]).unwrap();
        let square_scratch = ArrayView::contiguous(scratch.as_mut_ptr() as u64, DType::U32, &[8, 8]).unwrap();
        // The matrix scan: the rows of a contiguous table take it, the strided column pass not.
        let matrix = ScanDesc::default().with_algorithm(Algorithm::Matrix);
        ctx.scan_array(&stream, &square_in, &square_scratch, -1, &matrix)
            .unwrap();
        let e = ctx
            .summed_area_table(&stream, &square_in, &square_out, &matrix)
            .unwrap_err();
        assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{e}");
        // Views whose other axes nest into one stride of columns and one of batches along
        // the rows (axis 3), but not along the columns (axis 2): there axis 3's stride 3
        // over extent 5 does not reach axis 0's... axis 1's 16.
        let shape = [2, 3, 4, 5];
        let strides = [1, 16, 48, 3];
        let tensor_in = ArrayView::strided(input.as_ptr() as u64, DType::U32, &shape, &strides).unwrap();
        let odd_out = ArrayView::strided(out.as_mut_ptr() as u64, DType::U32, &shape, &strides).unwrap();
        let odd_scratch = ArrayView::strided(scratch.as_mut_ptr() as u64, DType::U32, &shape, &strides).unwrap();
        ctx.scan_array(&stream, &tensor_in, &odd_scratch, -1, &sum).unwrap();
        let e = ctx.summed_area_table(&stream, &tensor_in, &odd_out, &sum).unwrap_err();
        assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{e}");
    }
    assert!(
        out.iter().all(|&x| x == 9),
        "a refused summed-area table wrote its output"
    );
}

/// A scan along an axis takes user-defined states of at most 48 bytes (what the GPU's
/// strided kernels hold): 52 is refused by status on every backend, writing nothing;
/// 48 scans.
#[test]
fn wide_states_along_an_axis_are_refused_by_status() {
    use crate::common::operator_space::LaneOp;
    use scanrt::{ArrayView, DType, OperatorScan, ScanrtStatus};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let x: Vec<u32> = (1..=12).collect();
    for (width, accepted) in [(48, true), (52, false)] {
        let op = ctx
            .create_operator(
                LaneOp {
                    width,
                    load: true,
                    outputs: 1,
                }
                .desc(),
            )
            .unwrap();
        let mut out = vec![7u32; 12];
        // SAFETY: row-major [3, 4] views of the two 12-element vectors, alive until the end.
        let (input, output) = unsafe {
            (
                ArrayView::contiguous(x.as_ptr() as u64, DType::U32, &[3, 4]).unwrap(),
                ArrayView::contiguous(out.as_mut_ptr() as u64, DType::U32, &[3, 4]).unwrap(),
            )
        };
        let result = op.scan_arrays_along(
            &stream,
            &[input],
            &[output],
            0,
            &OperatorScan::default(),
            &Default::default(),
        );
        if accepted {
            result.unwrap();
            assert_ne!(out, vec![7u32; 12], "{width}-byte states: nothing written");
        } else {
            let e = result.expect_err("52-byte states along an axis");
            assert_eq!(e.status, ScanrtStatus::UnsupportedCombination, "{}", e.message);
            assert!(e.message.contains("at most 48 bytes"), "{}", e.message);
            assert_eq!(out, vec![7u32; 12], "a refused scan wrote");
        }
    }
}

/// Carries of a scan along an axis follow the flat scan's overlap rules: a carry over the
/// output, a carry out over the input, or a carry out over part of the carry in is
/// refused (`PARTIAL_OVERLAP`) before anything is written; the carry in as the carry out
/// itself, one state per sequence, chains in place.
#[test]
fn overlapping_carries_along_an_axis_are_refused() {
    use scanrt::{ArrayView, CarryViews, DType, ScanDesc, ScanrtStatus};
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let sum = ScanDesc::default();
    // A [6, 2] u32 matrix scanned along dim 0 (its two columns), into mem[0..12]; the
    // carries (two states each) elsewhere in mem.
    let mut x: Vec<u32> = (1..=12).collect();
    let mut mem = vec![7u32; 40];
    let base = mem.as_mut_ptr() as u64;
    // SAFETY: every view lies within `x` or `mem`, both alive until the end.
    let at = |offset: u64, len: u64| unsafe { ArrayView::contiguous(base + 4 * offset, DType::U32, &[len]).unwrap() };
    let input = unsafe { ArrayView::contiguous(x.as_mut_ptr() as u64, DType::U32, &[6, 2]).unwrap() };
    let output = unsafe { ArrayView::contiguous(base, DType::U32, &[6, 2]).unwrap() };
    let over_input = unsafe { ArrayView::contiguous(x.as_mut_ptr() as u64 + 4, DType::U32, &[2]).unwrap() };
    let (over_output, apart, shifted) = (at(11, 2), at(20, 2), at(21, 2));
    let refused = [
        (None, Some(&over_output), "carry out over the output"),
        (Some(&over_output), None, "carry in over the output"),
        (None, Some(&over_input), "carry out over the input"),
        (Some(&apart), Some(&shifted), "carry out over part of the carry in"),
    ];
    for (carry_in, carry_out, what) in refused {
        let carries = CarryViews { carry_in, carry_out };
        let e = ctx
            .scan_array_carried(&stream, &input, &output, 0, &sum, &carries)
            .expect_err(what);
        assert_eq!(e.status, ScanrtStatus::PartialOverlap, "{what}: {e}");
    }
    assert!(mem.iter().all(|&v| v == 7), "a refused scan wrote");
    // mem[20..22] = (7, 7): each column starts from 7 and ends at 7 + its sum there.
    let carries = CarryViews {
        carry_in: Some(&apart),
        carry_out: Some(&apart),
    };
    ctx.scan_array_carried(&stream, &input, &output, 0, &sum, &carries)
        .unwrap();
    assert_eq!(&mem[20..22], &[7 + 1 + 3 + 5 + 7 + 9 + 11, 7 + 2 + 4 + 6 + 8 + 10 + 12]);
    assert_eq!(&mem[..2], &[8, 9]);
}
