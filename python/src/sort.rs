//! Sorts: keys, key-value pairs and argsorts of 1-D arrays.

use pyo3::prelude::*;
use scanrt::{SortArrays, SortDesc, SortOrder};

use crate::arrays::{context, device_of, stream, ArrayArg};
use crate::errors::IntoPy;

/// Sorts `keys` into `keys_out`; `values` travel into `values_out`, or, with `values`
/// None, `values_out` receives the keys' indices. `bits`: the bit range `begin..end` of
/// the ordered keys the sort looks at (`end` None: the key's width).
#[pyfunction]
#[pyo3(signature = (*, keys, keys_out, values=None, values_out=None, descending=false, stream, bits=(0, None)))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort(
    py: Python<'_>,
    keys: ArrayArg,
    keys_out: ArrayArg,
    values: Option<ArrayArg>,
    values_out: Option<ArrayArg>,
    descending: bool,
    stream: usize,
    bits: (u32, Option<u32>),
) -> PyResult<()> {
    let mut all = vec![&keys, &keys_out];
    all.extend(values.iter().chain(values_out.iter()));
    let device = device_of(&all)?;
    let ctx = context(device)?;
    let s = self::stream(&ctx, device, stream)?;
    // SAFETY: the Python caller keeps every array referenced during the call.
    let arrays = unsafe {
        SortArrays {
            keys_in: keys.view(false)?,
            keys_out: keys_out.view(true)?,
            values_in: values.as_ref().map(|v| v.view(false)).transpose()?,
            values_out: values_out.as_ref().map(|v| v.view(true)).transpose()?,
            temp: None,
        }
    };
    let desc = SortDesc {
        order: if descending {
            SortOrder::Descending
        } else {
            SortOrder::Ascending
        },
        begin_bit: bits.0,
        end_bit: bits.1,
    };
    py.allow_threads(|| ctx.sort(&s, &arrays, &desc)).py_err()?;
    Ok(())
}
