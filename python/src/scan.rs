//! Scans: the built-in operators along the last axis (`scan`), and the recipes that are
//! user-defined operators in the crate (`recipe_scan`: cumulative extremes with their
//! indices, logcumsumexp, the linear recurrence), whose batched rows run as a segmented
//! scan by rows.

use std::collections::HashMap;

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use scanrt::{
    recipes, CarryViews, Context, DType, Direction, InitValue, Op, Operator, OperatorScan, ScanDesc, ScanTypes,
    ScanrtStatus, Segments,
};

use crate::arrays::{context, device_of, dtype_named, segment_data, stream, ArrayArg, SegmentData};
use crate::errors::IntoPy;
use crate::operator_scan::run_scan;

/// The built-in operator Python calls `name`.
pub(crate) fn op_named(name: &str) -> Option<Op> {
    Some(match name {
        "sum" => Op::Sum,
        "prod" => Op::Product,
        "min" => Op::Min,
        "max" => Op::Max,
        _ => return None,
    })
}

fn op_of(name: &str) -> PyResult<Op> {
    op_named(name).ok_or_else(|| PyValueError::new_err(format!("no scan operator {name:?}")))
}

/// Whether a built-in scan reads `input` values and writes `output` ones with `op` (in the
/// output type's accumulator): Python converts the input first where it does not.
#[pyfunction]
pub(crate) fn scan_takes(input: &str, output: &str, op: &str) -> PyResult<bool> {
    let types = ScanTypes::new(dtype_named(input)?, dtype_named(output)?, None);
    Ok(types.check(op_of(op)?).is_ok())
}

/// The descriptor of a built-in scan whose results are `output` values.
pub(crate) fn builtin_desc(
    op: &str,
    inclusive: bool,
    reverse: bool,
    initial: Option<Bound<'_, PyAny>>,
    deterministic: bool,
    output: DType,
) -> PyResult<ScanDesc> {
    let op = op_of(op)?;
    let mut desc = if inclusive {
        ScanDesc::inclusive(op)
    } else {
        ScanDesc::exclusive(op)
    };
    if reverse {
        desc = desc.backward();
    }
    if deterministic {
        desc = desc.deterministic();
    }
    if let Some(v) = initial {
        desc.init = Some(value_of(output.default_accumulator(), &v, "initial")?);
    }
    Ok(desc)
}

/// Scans `x` along `axis` (the last by default; any axis of any strides, in one pass)
/// into `out` (the same shape, the output type) with a built-in operator, on `stream` of
/// the arrays' device.
/// With `segments` (1-D arrays only): a segmented scan, a new segment starting at each
/// nonzero byte of `segments` (uint8 or bool); with `offsets`, at each offset below the
/// length (a CSR array of int32, int64, uint32 or uint64 offsets); with `keys`, at each
/// key that differs from the one before. `carry_in` (instead of `initial`) and
/// `carry_out`: arrays of the accumulator type on the same device, the initial value read
/// from memory and the total written there (one element for a 1-D scan; one per segment
/// with `offsets`; for more dimensions one total per sequence and one initial value for
/// all or per sequence).
#[pyfunction]
#[pyo3(signature = (*, x, out, op, inclusive=true, reverse=false, initial=None, deterministic=false, stream, segments=None, carry_in=None, carry_out=None, offsets=None, axis=-1, keys=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan(
    py: Python<'_>,
    x: ArrayArg,
    out: ArrayArg,
    op: &str,
    inclusive: bool,
    reverse: bool,
    initial: Option<Bound<'_, PyAny>>,
    deterministic: bool,
    stream: usize,
    segments: Option<ArrayArg>,
    carry_in: Option<ArrayArg>,
    carry_out: Option<ArrayArg>,
    offsets: Option<ArrayArg>,
    axis: isize,
    keys: Option<ArrayArg>,
) -> PyResult<()> {
    let device = device_of(&[&x, &out])?;
    let ctx = context(device)?;
    let mut desc = builtin_desc(op, inclusive, reverse, initial, deterministic, out.dtype()?)?;
    let s = self::stream(&ctx, device, stream)?;
    // SAFETY: the Python caller keeps the arrays referenced during the call.
    let (input, output) = unsafe { (x.view(false)?, out.view(true)?) };
    if carry_in.is_some() || carry_out.is_some() {
        for c in carry_in.iter().chain(&carry_out) {
            device_of(&[&x, c])?;
        }
        // SAFETY: as above.
        let carry_in = carry_in.map(|c| unsafe { c.view(false) }).transpose()?;
        let carry_out = carry_out.map(|c| unsafe { c.view(true) }).transpose()?;
        let carries = CarryViews {
            carry_in: carry_in.as_ref(),
            carry_out: carry_out.as_ref(),
        };
        // Carries of a scan by offsets are one per segment.
        if let Some((data, kind)) = segment_data((segments, offsets))? {
            device_of(&[&x, &data])?;
            let desc = desc.segmented(kind);
            // SAFETY: as above.
            let data = unsafe { data.view(false)? };
            return py
                .allow_threads(|| ctx.scan_array_segmented_carried(&s, &input, &data, &output, &desc, &carries))
                .py_err()
                .map(|_| ());
        }
        return py
            .allow_threads(|| ctx.scan_array_carried(&s, &input, &output, axis, &desc, &carries))
            .py_err()
            .map(|_| ());
    }
    let data = SegmentData {
        flags: segments,
        offsets,
        keys,
    };
    match segment_data(data)? {
        Some((data, kind)) => {
            device_of(&[&x, &data])?;
            desc = desc.segmented(kind);
            // SAFETY: as above.
            let data = unsafe { data.view(false)? };
            py.allow_threads(|| ctx.scan_array_segmented(&s, &input, &data, &output, &desc))
        }
        None => py.allow_threads(|| ctx.scan_array(&s, &input, &output, axis, &desc)),
    }
    .py_err()?;
    Ok(())
}

/// The summed-area table of `x` over its last two axes (earlier axes a batch of tables)
/// into `out` (the same shape, the output type) with a built-in operator, on `stream` of
/// the arrays' device: one pass over the data on the GPU where the table is inclusive
/// (`Context::summed_area_table`).
#[pyfunction]
#[pyo3(signature = (*, x, out, op, inclusive=true, reverse=false, deterministic=false, stream))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn summed_area_table(
    py: Python<'_>,
    x: ArrayArg,
    out: ArrayArg,
    op: &str,
    inclusive: bool,
    reverse: bool,
    deterministic: bool,
    stream: usize,
) -> PyResult<()> {
    let device = device_of(&[&x, &out])?;
    let ctx = context(device)?;
    let desc = builtin_desc(op, inclusive, reverse, None, deterministic, out.dtype()?)?;
    let s = self::stream(&ctx, device, stream)?;
    // SAFETY: the Python caller keeps the arrays referenced during the call.
    let (input, output) = unsafe { (x.view(false)?, out.view(true)?) };
    py.allow_threads(|| ctx.summed_area_table(&s, &input, &output, &desc))
        .py_err()
        .map(|_| ())
}

/// The recipes' operators, compiled once per (context, recipe, type). Without the GIL
/// (XLA's handlers call it too).
pub(crate) fn recipe_operator(ctx: &Context, device: i64, recipe: &str, dtype: DType) -> scanrt::Result<Operator> {
    type Operators = Mutex<HashMap<(i64, String, DType), Operator>>;
    static OPERATORS: Lazy<Operators> = Lazy::new(|| Mutex::new(HashMap::new()));
    let key = (device, recipe.to_string(), dtype);
    if let Some(op) = OPERATORS.lock().get(&key) {
        return Ok(op.clone());
    }
    let desc = match recipe {
        "cummax" => recipes::cumulative_extreme(dtype, true),
        "cummin" => recipes::cumulative_extreme(dtype, false),
        "logcumsumexp" => recipes::logcumsumexp(dtype),
        "linear_recurrence" => recipes::linear_recurrence(dtype),
        "linear_recurrence_adjoint" => recipes::linear_recurrence_adjoint(dtype),
        other => {
            return Err(scanrt::Error::new(
                ScanrtStatus::InvalidArgument,
                format!("no recipe {other:?}"),
            ))
        }
    }?;
    let op = ctx.create_operator(desc)?;
    OPERATORS.lock().insert(key, op.clone());
    Ok(op)
}

/// A recipe's initial state: the recurrence's h0, the adjoint's final-state gradient or
/// logcumsumexp's extra term from `number`, the extremes' starting value `exact` (of the
/// array type).
pub(crate) fn recipe_init_state(recipe: &str, dtype: DType, number: f64, exact: InitValue) -> scanrt::Result<Vec<u8>> {
    match recipe {
        "linear_recurrence" => recipes::recurrence_init(dtype, number),
        "linear_recurrence_adjoint" => recipes::recurrence_adjoint_init(dtype, number),
        "logcumsumexp" => recipes::logcumsumexp_init(dtype, number),
        "cummax" | "cummin" => recipes::cumulative_extreme_init(dtype, exact),
        _ => Err(scanrt::Error::new(
            ScanrtStatus::InvalidArgument,
            format!("{recipe} takes no initial value"),
        )),
    }
}

/// A recipe's initial state from a Python number (integers exactly for the extremes).
fn recipe_init(recipe: &str, dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    recipe_init_state(recipe, dtype, value.extract()?, value_of(dtype, value, "initial")?).py_err()
}

/// A Python number as a value of `dtype`, the argument `what` (integers exactly, or a
/// `ValueError` naming the argument; floats rounded once).
pub(crate) fn value_of(dtype: DType, value: &Bound<'_, PyAny>, what: &str) -> PyResult<InitValue> {
    let exact = || -> PyResult<InitValue> {
        Ok(match dtype {
            DType::F16 => InitValue::of(scanrt::half::f16::from_f64(value.extract()?)),
            DType::BF16 => InitValue::of(scanrt::half::bf16::from_f64(value.extract()?)),
            DType::F32 => InitValue::of(value.extract::<f64>()? as f32),
            DType::F64 => InitValue::of(value.extract::<f64>()?),
            DType::I8 => InitValue::of(value.extract::<i8>()?),
            DType::U8 => InitValue::of(value.extract::<u8>()?),
            DType::I16 => InitValue::of(value.extract::<i16>()?),
            DType::U16 => InitValue::of(value.extract::<u16>()?),
            DType::I32 => InitValue::of(value.extract::<i32>()?),
            DType::U32 => InitValue::of(value.extract::<u32>()?),
            DType::I64 => InitValue::of(value.extract::<i64>()?),
            DType::U64 => InitValue::of(value.extract::<u64>()?),
        })
    };
    exact().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(value.py()) {
            PyValueError::new_err(format!("{what} {value} does not fit {}", dtype.info().name))
        } else {
            e
        }
    })
}

/// Runs a recipe over 1-D arrays or the rows of contiguous row-major arrays (the last
/// axis, `row` elements each; 0: one row): `inputs` and `outputs` as the recipe takes
/// them. `initial`: a number, the initial value ([`recipe_init`]). `offsets` (1-D arrays):
/// the sequences as a CSR array (`segments`: byte flags, `keys`: runs of equal keys,
/// instead); `carry_in` and `carry_out`: contiguous arrays of the recipe's states
/// (any type: their bytes are the states), one per sequence with `offsets`, else one,
/// read before and written after the scan. `axis`: scan the arrays as they lie (any
/// strides; the inputs sharing one layout, the outputs another) along that axis, each
/// sequence on its own, instead of flattened rows.
#[pyfunction]
#[pyo3(signature = (*, recipe, inputs, outputs, row=0, inclusive=true, reverse=false, initial=None, deterministic=false, stream, offsets=None, carry_in=None, carry_out=None, axis=None, segments=None, keys=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn recipe_scan(
    py: Python<'_>,
    recipe: &str,
    inputs: Vec<ArrayArg>,
    outputs: Vec<ArrayArg>,
    row: u64,
    inclusive: bool,
    reverse: bool,
    initial: Option<Bound<'_, PyAny>>,
    deterministic: bool,
    stream: usize,
    offsets: Option<ArrayArg>,
    carry_in: Option<ArrayArg>,
    carry_out: Option<ArrayArg>,
    axis: Option<isize>,
    segments: Option<ArrayArg>,
    keys: Option<ArrayArg>,
) -> PyResult<()> {
    let all: Vec<&ArrayArg> = inputs
        .iter()
        .chain(&outputs)
        .chain(offsets.iter())
        .chain(segments.iter())
        .chain(keys.iter())
        .chain(carry_in.iter())
        .chain(carry_out.iter())
        .collect();
    let device = device_of(&all)?;
    let ctx = context(device)?;
    let dtype = inputs[0].dtype()?;
    let op = recipe_operator(&ctx, device, recipe, dtype).py_err()?;
    let init = initial.map(|v| recipe_init(recipe, dtype, &v)).transpose()?;
    let n: u64 = outputs[0].shape.iter().product();
    let segments = segment_data(SegmentData {
        flags: segments,
        offsets,
        keys,
    })?;
    let scan = OperatorScan {
        inclusive,
        init,
        direction: if reverse {
            Direction::Backward
        } else {
            Direction::Forward
        },
        deterministic,
        segments: match &segments {
            Some((_, kind)) => *kind,
            None if row > 0 && row < n && axis.is_none() => Segments::Rows(row),
            None => Segments::None,
        },
        ..OperatorScan::default()
    };
    let s = self::stream(&ctx, device, stream)?;
    // Without an axis the recipes scan 1-D views: each array flattened, which only a
    // C-contiguous one allows (Python makes them so).
    let flat = |a: &ArrayArg, writable: bool| -> PyResult<scanrt::ArrayView<'static>> {
        if axis.is_none() && !a.is_c_contiguous() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "a {recipe} scan over segments or rows reads C-contiguous arrays, not shape {:?} with strides {:?}",
                a.shape, a.strides
            )));
        }
        let flat = ArrayArg {
            addr: a.addr,
            dtype: a.dtype.clone(),
            shape: vec![a.shape.iter().product()],
            strides: vec![1],
            device: a.device,
        };
        // SAFETY: the Python caller keeps the arrays referenced during the call; without
        // an axis they are C-contiguous (checked), so the flat view covers the same
        // elements.
        unsafe {
            match axis {
                Some(_) => a.view(writable),
                None => flat.view(writable),
            }
        }
    };
    let ins = inputs.iter().map(|a| flat(a, false)).collect::<PyResult<Vec<_>>>()?;
    let outs = outputs.iter().map(|a| flat(a, true)).collect::<PyResult<Vec<_>>>()?;
    // SAFETY: as above.
    unsafe {
        run_scan(
            py,
            &op,
            &s,
            (&ins, &outs),
            segments.map(|(d, _)| d),
            &scan,
            [carry_in, carry_out],
            axis,
        )
    }
}
