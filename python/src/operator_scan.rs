//! The run of an operator's scan that user-defined operators (operator.rs) and the
//! recipes (scan.rs) share: views in and out, segment data, carries of whole states, the
//! GIL released around the device work.

use pyo3::prelude::*;
use scanrt::{CarryViews, Operator, OperatorScan};

use crate::arrays::{state_carry_views, ArrayArg};
use crate::errors::IntoPy;

/// Runs an operator's scan of views with the GIL released: along `axis` where given,
/// else of 1-D arrays (with the segment data, if any); `carries` are arrays of whole
/// states.
///
/// # Safety
/// The descriptions are of live arrays the caller keeps referenced during the call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run_scan(
    py: Python<'_>,
    op: &Operator,
    stream: &scanrt::Stream,
    (ins, outs): (&[scanrt::ArrayView], &[scanrt::ArrayView]),
    segments: Option<ArrayArg>,
    scan: &OperatorScan,
    [carry_in, carry_out]: [Option<ArrayArg>; 2],
    axis: Option<isize>,
) -> PyResult<()> {
    let data = segments.map(|d| d.view(false)).transpose()?;
    let [carry_in, carry_out] = state_carry_views(carry_in, carry_out)?;
    let carries = CarryViews {
        carry_in: carry_in.as_ref(),
        carry_out: carry_out.as_ref(),
    };
    py.allow_threads(|| match axis {
        Some(axis) => op.scan_arrays_along(stream, ins, outs, axis, scan, &carries),
        None => op.scan_arrays_carried(stream, ins, outs, data.as_ref(), scan, &carries),
    })
    .py_err()?;
    Ok(())
}
