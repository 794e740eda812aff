//! The host backend of the radix sort: the same order (the ordered key words of
//! `desc::ordered_key`, in the bit range), by a stable comparison sort of the indices.

use rayon::slice::ParallelSliceMut;

use crate::error::Result;
use crate::sort::desc::{ordered_key, SortDesc, SortOrder};
use crate::sort::SortArrays;
use crate::types::DType;

/// Reads element `i` of `dtype` at `addr` as its bits, zero-extended.
///
/// # Safety
/// `addr` holds at least `i + 1` elements of `dtype`.
unsafe fn bits_at(addr: u64, dtype: DType, i: usize) -> u64 {
    let p = addr as *const u8;
    match dtype.size() {
        1 => *p.add(i) as u64,
        2 => (p as *const u16).add(i).read_unaligned() as u64,
        4 => (p as *const u32).add(i).read_unaligned() as u64,
        _ => (p as *const u64).add(i).read_unaligned(),
    }
}

/// Sorts `n` checked elements.
///
/// # Safety
/// The views are host memory valid for `n` elements (checked by the caller).
pub(crate) unsafe fn sort(a: &SortArrays, desc: &SortDesc, n: usize, begin: u32, end: u32) -> Result<()> {
    if n == 0 {
        // Nothing to write, and an empty array's address may be NULL.
        return Ok(());
    }
    let dtype = a.keys_in.dtype();
    let mask = if end - begin == 64 {
        u64::MAX
    } else {
        (1u64 << (end - begin)) - 1
    };
    // An empty range (end == begin) has mask 0: every word ranks equal.
    let ranked: Vec<u64> = (0..n)
        .map(|i| (ordered_key(dtype, bits_at(a.keys_in.addr(), dtype, i)) >> begin.min(63)) & mask)
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    // Stable sorts: equal words keep their input order in both directions.
    match desc.order {
        SortOrder::Ascending => order.par_sort_by_key(|&i| ranked[i]),
        SortOrder::Descending => order.par_sort_by_key(|&i| std::cmp::Reverse(ranked[i])),
    }
    // Gather from copies: the outputs may be the inputs.
    let gather = |from: u64, to: u64, size: usize| {
        let source = std::slice::from_raw_parts(from as *const u8, n * size).to_vec();
        let target = std::slice::from_raw_parts_mut(to as *mut u8, n * size);
        for (slot, &i) in order.iter().enumerate() {
            target[slot * size..(slot + 1) * size].copy_from_slice(&source[i * size..(i + 1) * size]);
        }
    };
    gather(a.keys_in.addr(), a.keys_out.addr(), dtype.size());
    match (&a.values_in, &a.values_out) {
        (Some(input), Some(output)) => gather(input.addr(), output.addr(), input.dtype().size()),
        (None, Some(indices)) => {
            let out = indices.addr() as *mut u8;
            for (slot, &i) in order.iter().enumerate() {
                match indices.dtype() {
                    DType::U32 => (out as *mut u32).add(slot).write_unaligned(i as u32),
                    _ => (out as *mut u64).add(slot).write_unaligned(i as u64),
                }
            }
        }
        _ => {}
    }
    Ok(())
}
