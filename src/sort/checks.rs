//! The checks of a sort's arrays: types, lengths, the bit range and overlaps. Nothing is
//! launched or written before they pass.

use crate::array::ArrayView;
use crate::error::{bail, Result};
use crate::sort::desc::SortDesc;
use crate::sort::kernels::SortSpec;
use crate::sort::SortArrays;
use crate::types::DType;

/// A checked sort.
pub(crate) struct Checked {
    pub n: u64,
    pub begin: u32,
    pub end: u32,
    pub spec: SortSpec,
    /// The values are the keys' indices (an argsort).
    pub indices: bool,
}

pub(crate) fn check(a: &SortArrays, desc: &SortDesc) -> Result<Checked> {
    let key = a.keys_in.dtype();
    let n = a.keys_in.flat_len("keys of a sort")?;
    let (begin, end) = desc.bits(key)?;
    let at_least = |v: &ArrayView, what: &str| -> Result<()> {
        let len = v.flat_len(&format!("{what} of a sort"))?;
        if len < n {
            bail!(BufferTooSmall, "the {what} hold {len} elements; the sort has {n}");
        }
        if !v.writable {
            bail!(InvalidArgument, "the {what} are written: pass a mutable view");
        }
        Ok(())
    };
    at_least(&a.keys_out, "output keys")?;
    if a.keys_out.dtype() != key {
        bail!(
            InvalidArgument,
            "the output keys are {}; the keys are {}",
            a.keys_out.dtype().c_name(),
            key.c_name()
        );
    }
    let (value, indices) = match (&a.values_in, &a.values_out) {
        (None, None) => (None, false),
        (Some(input), Some(output)) => {
            if input.flat_len("values of a sort")? < n {
                bail!(BufferTooSmall, "the values are fewer than the {n} keys");
            }
            at_least(output, "output values")?;
            if input.dtype() != output.dtype() {
                bail!(
                    InvalidArgument,
                    "the output values are {}; the values are {}",
                    output.dtype().c_name(),
                    input.dtype().c_name()
                );
            }
            (Some(input.dtype()), false)
        }
        (None, Some(indices)) => {
            at_least(indices, "indices")?;
            match indices.dtype() {
                DType::U64 => {}
                DType::U32 if n <= u32::MAX as u64 + 1 => {}
                DType::U32 => bail!(LengthOverflow, "indices of {n} keys do not fit U32: use U64"),
                other => bail!(InvalidArgument, "indices are U32 or U64, not {}", other.c_name()),
            }
            (Some(indices.dtype()), true)
        }
        (Some(_), None) => bail!(InvalidArgument, "values to sort need an output array"),
    };
    ArrayView::check_all_aligned(&[
        (Some(&a.keys_in), "keys"),
        (Some(&a.keys_out), "output keys"),
        (a.values_in.as_ref(), "values"),
        (a.values_out.as_ref(), "output values"),
    ])?;
    check_overlaps(a)?;
    Ok(Checked {
        n,
        begin,
        end,
        spec: SortSpec {
            key,
            descending: desc.order == crate::sort::desc::SortOrder::Descending,
            value_bytes: value.map_or(0, |v| v.size() as u32),
        },
        indices,
    })
}

/// Keys and values may each be sorted in place (output = input); nothing else may share
/// memory.
fn check_overlaps(a: &SortArrays) -> Result<()> {
    let arrays: Vec<(&str, &ArrayView)> = [
        ("keys", Some(&a.keys_in)),
        ("output keys", Some(&a.keys_out)),
        ("values", a.values_in.as_ref()),
        ("output values", a.values_out.as_ref()),
        ("temporary memory", a.temp.as_ref()),
    ]
    .into_iter()
    .filter_map(|(w, v)| v.map(|v| (w, v)))
    .collect();
    for (i, (what, x)) in arrays.iter().enumerate() {
        for (other, y) in &arrays[i + 1..] {
            let in_place = matches!((*what, *other), ("keys", "output keys") | ("values", "output values"))
                && x.addr() == y.addr();
            if !in_place && x.overlaps(y) {
                bail!(PartialOverlap, "the {other} overlap the {what}");
            }
        }
    }
    Ok(())
}
