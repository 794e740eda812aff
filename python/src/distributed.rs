//! Scans across the GPUs of this process: one chunk per GPU, in rank order, through the
//! crate's `MultiGpu` (NCCL communicators made once per set of devices and kept).

use std::collections::HashMap;
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use scanrt::{GpuPart, MultiGpu, Stream};

use crate::arrays::{context, stream, ArrayArg};
use crate::errors::IntoPy;
use crate::scan::builtin_desc;

/// The ranks over `devices`, made on first use.
fn ranks(devices: &[i64]) -> PyResult<Arc<MultiGpu>> {
    static GROUPS: Lazy<Mutex<HashMap<Vec<i64>, Arc<MultiGpu>>>> = Lazy::new(|| Mutex::new(HashMap::new()));
    let mut all = GROUPS.lock();
    if let Some(g) = all.get(devices) {
        return Ok(g.clone());
    }
    let contexts = devices.iter().map(|&d| context(d)).collect::<PyResult<Vec<_>>>()?;
    let group = Arc::new(MultiGpu::new(&contexts).py_err()?);
    all.insert(devices.to_vec(), group.clone());
    Ok(group)
}

/// Scans the logical array made of `chunks` (1-D, one per GPU, in order) into `outs`
/// with a built-in operator, each on its device's stream in `streams`; `totals` (one
/// one-element array per GPU) receive the whole array's total.
#[pyfunction]
#[pyo3(signature = (*, chunks, outs, op, inclusive=true, reverse=false, initial=None, deterministic=false, streams, totals=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_across(
    py: Python<'_>,
    chunks: Vec<ArrayArg>,
    outs: Vec<ArrayArg>,
    op: &str,
    inclusive: bool,
    reverse: bool,
    initial: Option<Bound<'_, PyAny>>,
    deterministic: bool,
    streams: Vec<usize>,
    totals: Option<Vec<ArrayArg>>,
) -> PyResult<()> {
    if chunks.is_empty()
        || outs.len() != chunks.len()
        || streams.len() != chunks.len()
        || totals.as_ref().is_some_and(|t| t.len() != chunks.len())
    {
        return Err(PyValueError::new_err(
            "one chunk, output and stream (and total, if any) per GPU",
        ));
    }
    let devices: Vec<i64> = chunks.iter().map(|c| c.device).collect();
    if devices.iter().any(|&d| d < 0) || outs.iter().zip(&devices).any(|(o, &d)| o.device != d) {
        return Err(PyValueError::new_err(
            "every chunk and its output are on one CUDA device",
        ));
    }
    let group = ranks(&devices)?;
    let desc = builtin_desc(op, inclusive, reverse, initial, deterministic, outs[0].dtype()?)?;
    let streams: Vec<Stream> = group
        .contexts()
        .iter()
        .zip(&devices)
        .zip(&streams)
        .map(|((ctx, &d), &raw)| stream(ctx, d, raw))
        .collect::<PyResult<_>>()?;
    let mut parts = Vec::with_capacity(chunks.len());
    for (r, (chunk, out)) in chunks.iter().zip(&outs).enumerate() {
        // SAFETY: the Python caller keeps the arrays referenced during the call.
        let (input, output, total) = unsafe {
            (
                chunk.view(false)?,
                out.view(true)?,
                totals.as_ref().map(|t| t[r].view(true)).transpose()?,
            )
        };
        parts.push(GpuPart {
            stream: &streams[r],
            input,
            output,
            total,
        });
    }
    py.allow_threads(|| group.scan(&parts, &desc)).py_err()
}
