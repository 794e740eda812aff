//! Selections: compaction by a byte mask or of the nonzero elements (values or indices),
//! and run-length encoding; the count is written to a one-element array on the device.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use scanrt::{SelectArrays, SelectDesc, SelectOutput, Selection};

use crate::arrays::{context, device_of, stream, ArrayArg};
use crate::errors::IntoPy;

/// Selects from `x` into `out` as `rule` says ("mask": by the bytes of `mask`;
/// "nonzero"; "run_heads": unique consecutive), values or (`indices`) their positions,
/// writing the count to `count` (one uint64). With `lengths`, a run-length encoding.
#[pyfunction]
#[pyo3(signature = (x, mask, out, lengths, count, rule, indices, capacity, stream))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn select(
    py: Python<'_>,
    x: ArrayArg,
    mask: Option<ArrayArg>,
    out: ArrayArg,
    lengths: Option<ArrayArg>,
    count: ArrayArg,
    rule: &str,
    indices: bool,
    capacity: Option<u64>,
    stream: usize,
) -> PyResult<()> {
    let mut all = vec![&x, &out, &count];
    all.extend(mask.iter().chain(lengths.iter()));
    let device = device_of(&all)?;
    let ctx = context(device)?;
    let selection = match rule {
        "mask" => Selection::ByteFlags,
        "nonzero" => Selection::NonZero,
        "run_heads" => Selection::RunHeads,
        other => return Err(PyValueError::new_err(format!("no selection {other:?}"))),
    };
    let output = match (indices, lengths.is_some()) {
        (_, true) => SelectOutput::RunLengths,
        (true, false) => SelectOutput::Indices,
        (false, false) => SelectOutput::Values,
    };
    let desc = SelectDesc {
        selection,
        output,
        capacity,
    };
    let s = self::stream(&ctx, device, stream)?;
    // SAFETY: the Python caller keeps every array referenced during the call.
    let arrays = unsafe {
        SelectArrays {
            input: x.view(false)?,
            flags: mask.as_ref().map(|m| m.view(false)).transpose()?,
            output: out.view(true)?,
            rejected: None,
            lengths: lengths.as_ref().map(|l| l.view(true)).transpose()?,
            num_selected: count.view(true)?,
        }
    };
    py.allow_threads(|| ctx.select(&s, &arrays, &desc)).py_err()?;
    Ok(())
}
