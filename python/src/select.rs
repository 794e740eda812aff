//! Selections: compaction by byte or bit flags, a comparison with a value, not-NaN,
//! nonzero or a user predicate (values or indices, at most a capacity), stable
//! partitions, and run-length encoding; the count is written to a one-element array on
//! the device.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use scanrt::{Comparison, DType, Predicate, SelectArrays, SelectDesc, SelectOutput, Selection};

use crate::arrays::{context, device_of, stream, ArrayArg};
use crate::errors::IntoPy;
use crate::operator_host::{number, HostFailure};

/// A user predicate from Python: CUDA source defining `__device__ bool function(T x)`, and
/// optionally a Python callable for the host backend (one call per element).
type PythonPredicate = (String, String, Option<PyObject>);

/// Which elements `rule` keeps: "mask" (the bytes of the flags), "bits" (U32 words of
/// flags), "nonzero", "not_nan", "run_heads", a comparison ("==", "!=", "<", "<=", ">",
/// ">=") with `operand`, or "predicate".
fn selection_of(
    rule: &str,
    dtype: DType,
    operand: Option<&Bound<'_, PyAny>>,
    predicate: Option<PythonPredicate>,
    failure: &HostFailure,
) -> PyResult<Selection> {
    if let Some(selection) = rule_without_operand(rule) {
        return Ok(selection);
    }
    let comparison = match rule {
        "predicate" => {
            let (source, function, host) =
                predicate.ok_or_else(|| PyValueError::new_err("a predicate selection needs its predicate"))?;
            return Ok(Selection::Predicate(Predicate {
                source,
                function,
                host: host.map(|f| host_predicate(f, dtype, failure.clone())),
            }));
        }
        rule => comparison_named(rule).ok_or_else(|| PyValueError::new_err(format!("no selection {rule:?}")))?,
    };
    let operand = operand.ok_or_else(|| PyValueError::new_err(format!("the comparison {rule} needs a value")))?;
    Ok(Selection::Compare(
        comparison,
        crate::scan::value_of(dtype, operand, "operand")?,
    ))
}

/// The rules that need neither an operand nor a predicate: "mask", "bits", "nonzero",
/// "not_nan", "run_heads". Without the GIL (XLA's handlers).
pub(crate) fn rule_without_operand(rule: &str) -> Option<Selection> {
    Some(match rule {
        "mask" => Selection::ByteFlags,
        "bits" => Selection::BitFlags,
        "nonzero" => Selection::NonZero,
        "not_nan" => Selection::NotNan,
        "run_heads" => Selection::RunHeads,
        _ => return None,
    })
}

/// The comparison Python spells `op` ("==", "!=", "<", "<=", ">", ">=").
pub(crate) fn comparison_named(op: &str) -> Option<Comparison> {
    Some(match op {
        "==" => Comparison::Equal,
        "!=" => Comparison::NotEqual,
        "<" => Comparison::Less,
        "<=" => Comparison::LessEqual,
        ">" => Comparison::Greater,
        ">=" => Comparison::GreaterEqual,
        _ => return None,
    })
}

/// What a selection writes: a partition of values ("reversed", "two"), a run-length
/// encoding (with lengths), indices or values.
pub(crate) fn output_of(partition: Option<&str>, indices: bool, lengths: bool) -> Result<SelectOutput, String> {
    Ok(match (partition, indices, lengths) {
        (Some("reversed"), false, false) => SelectOutput::PartitionReversed,
        (Some("two"), false, false) => SelectOutput::PartitionTwo,
        (Some(other), _, _) => return Err(format!("no partition {other:?} (\"reversed\" or \"two\", of values)")),
        (None, _, true) => SelectOutput::RunLengths,
        (None, true, false) => SelectOutput::Indices,
        (None, false, false) => SelectOutput::Values,
    })
}

/// The host backend's test calling `f(x)` with the GIL held; its first exception is kept
/// in `failure` (the element is then rejected) and raised once the selection returns.
fn host_predicate(f: PyObject, dtype: DType, failure: HostFailure) -> Arc<dyn Fn(u64) -> bool + Send + Sync> {
    Arc::new(move |bits| {
        if failure.failed() {
            return false;
        }
        Python::with_gil(|py| {
            let kept = number(py, dtype, &bits.to_le_bytes()[..dtype.size()])
                .and_then(|x| f.bind(py).call1((x,)))
                .and_then(|r| r.is_truthy());
            kept.unwrap_or_else(|e| {
                failure.keep(e);
                false
            })
        })
    })
}

/// Selects from `x` into `out` as `rule` says (`selection_of`; `mask` holds the flags),
/// values or (`indices`) their positions, writing the count to `count` (one uint64).
/// With `lengths`, a run-length encoding. `partition`: "reversed" writes the rejected
/// elements after the selected ones from the end backwards, "two" writes them in order to
/// `rejected`.
#[pyfunction]
#[pyo3(signature = (*, x, mask=None, out, lengths=None, count, rule, indices=false, capacity=None, stream, operand=None, predicate=None, partition=None, rejected=None))]
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
    operand: Option<Bound<'_, PyAny>>,
    predicate: Option<PythonPredicate>,
    partition: Option<&str>,
    rejected: Option<ArrayArg>,
) -> PyResult<()> {
    let mut all = vec![&x, &out, &count];
    all.extend(mask.iter().chain(lengths.iter()).chain(rejected.iter()));
    let device = device_of(&all)?;
    let ctx = context(device)?;
    let failure = HostFailure::default();
    let selection = selection_of(rule, x.dtype()?, operand.as_ref(), predicate, &failure)?;
    let output = output_of(partition, indices, lengths.is_some()).map_err(PyValueError::new_err)?;
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
            rejected: rejected.as_ref().map(|r| r.view(true)).transpose()?,
            lengths: lengths.as_ref().map(|l| l.view(true)).transpose()?,
            num_selected: count.view(true)?,
        }
    };
    py.allow_threads(|| ctx.select(&s, &arrays, &desc)).py_err()?;
    match failure.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
