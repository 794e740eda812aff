//! What each XLA handler computes, on the call's decoded buffers and attributes: the
//! built-in and recipe scans along an axis, the sort and the selections.

use scanrt::{
    ArrayView, DType, Direction, InitValue, OperatorScan, ScanDesc, Segments, SelectArrays, SelectDesc, Selection,
    SortArrays, SortDesc, SortOrder,
};

use super::api::Buffer;
use super::{invalid, view, Attr, Call, Failure};
use crate::scan::{op_named, recipe_init_state, recipe_operator};
use crate::select::{comparison_named, output_of, rule_without_operand};

/// A number attribute as a value of `dtype` (integers exactly).
fn number_as(dtype: DType, value: Attr, what: &str) -> Result<InitValue, Failure> {
    let out_of_range = || invalid(format!("{what} {value:?} does not fit {}", dtype.info().name));
    let float = match value {
        Attr::Float(v) => Some(v),
        Attr::Int(v) => Some(v as f64),
        _ => None,
    };
    Ok(match (dtype, value, float) {
        (DType::F16, _, Some(v)) => InitValue::of(scanrt::half::f16::from_f64(v)),
        (DType::BF16, _, Some(v)) => InitValue::of(scanrt::half::bf16::from_f64(v)),
        (DType::F32, _, Some(v)) => InitValue::of(v as f32),
        (DType::F64, _, Some(v)) => InitValue::of(v),
        (DType::I8, Attr::Int(v), _) => InitValue::of(i8::try_from(v).map_err(|_| out_of_range())?),
        (DType::U8, Attr::Int(v), _) => InitValue::of(u8::try_from(v).map_err(|_| out_of_range())?),
        (DType::I16, Attr::Int(v), _) => InitValue::of(i16::try_from(v).map_err(|_| out_of_range())?),
        (DType::U16, Attr::Int(v), _) => InitValue::of(u16::try_from(v).map_err(|_| out_of_range())?),
        (DType::I32, Attr::Int(v), _) => InitValue::of(i32::try_from(v).map_err(|_| out_of_range())?),
        (DType::U32, Attr::Int(v), _) => InitValue::of(u32::try_from(v).map_err(|_| out_of_range())?),
        (DType::I64, Attr::Int(v), _) => InitValue::of(v),
        (DType::U64, Attr::Int(v), _) => InitValue::of(u64::try_from(v).map_err(|_| out_of_range())?),
        _ => {
            return Err(invalid(format!(
                "{what} {value:?} is not a {} value",
                dtype.info().name
            )))
        }
    })
}

/// The direction of a call's `reverse` attribute.
fn direction(call: &Call) -> Result<Direction, Failure> {
    Ok(if call.flag("reverse")? {
        Direction::Backward
    } else {
        Direction::Forward
    })
}

/// A segmented call's segment data, its last input, and their form (`segments`:
/// "flags", "offsets" or "keys"), or None for a call without the attribute.
///
/// # Safety
/// `args` are the call's buffers; the view is used only during it.
pub(super) unsafe fn segment_data(
    call: &Call,
    args: &[&Buffer],
) -> Result<Option<(ArrayView<'static>, Segments)>, Failure> {
    let Some(kind) = call.attr("segments")? else {
        return Ok(None);
    };
    let data = args
        .last()
        .ok_or_else(|| invalid("segments without their array".into()))?;
    // SAFETY: the caller's promise.
    let data = unsafe { view(data, false) }?;
    let form = match kind {
        Attr::Text("flags") => Segments::ByteFlags,
        Attr::Text("keys") => Segments::Keys(data.dtype()),
        Attr::Text("offsets") => Segments::Offsets {
            dtype: data.dtype(),
            count: data.shape().iter().product(),
        },
        other => {
            return Err(invalid(format!(
                "segments {other:?}: \"flags\", \"offsets\" or \"keys\""
            )))
        }
    };
    Ok(Some((data, form)))
}

/// Views of a call's buffers (`writable`: its results).
///
/// # Safety
/// `buffers` are the call's; the views are used only during it.
pub(super) unsafe fn views(buffers: &[&Buffer], writable: bool) -> Result<Vec<ArrayView<'static>>, Failure> {
    // SAFETY: the caller's promise.
    buffers.iter().map(|b| unsafe { view(b, writable) }).collect()
}

/// An operator's scan as the call's attributes say (`inclusive`, `reverse`,
/// `deterministic`), from `init`, over the segments' form if any.
pub(super) fn operator_scan_of(
    call: &Call,
    init: Option<Vec<u8>>,
    segments: &Option<(ArrayView<'static>, Segments)>,
) -> Result<OperatorScan, Failure> {
    Ok(OperatorScan {
        inclusive: call.flag("inclusive")?,
        init,
        direction: direction(call)?,
        deterministic: call.flag("deterministic")?,
        segments: segments.as_ref().map_or(Segments::None, |(_, form)| *form),
        ..OperatorScan::default()
    })
}

/// `scanrt_scan`: one input (and, with `segments`, its segment data: see
/// [`segment_data`]), one output of its shape, a built-in operator (`op`: sum, prod, min,
/// max) along `axis` (or over the segments of a 1-D input), `inclusive`, `reverse`,
/// `deterministic`, and an optional `initial` number in the accumulator's type.
pub(super) fn builtin_scan(call: &Call) -> Result<(), Failure> {
    let (args, rets) = (call.args(), call.rets());
    let ([x, ..], [y]) = (&args[..], &rets[..]) else {
        return Err(invalid(format!(
            "scanrt_scan takes one array (and its segments) into one, not {} into {}",
            args.len(),
            rets.len()
        )));
    };
    let op = call.text("op")?;
    let op = op_named(op).ok_or_else(|| invalid(format!("no scan operator {op:?}")))?;
    let mut desc = if call.flag("inclusive")? {
        ScanDesc::inclusive(op)
    } else {
        ScanDesc::exclusive(op)
    };
    desc.direction = direction(call)?;
    if call.flag("deterministic")? {
        desc = desc.deterministic();
    }
    // SAFETY: the call's buffers, used only during it.
    let (input, output) = unsafe { (view(x, false)?, view(y, true)?) };
    if let Some(initial) = call.attr("initial")? {
        desc.init = Some(number_as(output.dtype().default_accumulator(), initial, "initial")?);
    }
    let (_, ctx, stream) = call.context_and_stream()?;
    // SAFETY: as above.
    match unsafe { segment_data(call, &args) }? {
        Some((data, form)) => ctx.scan_array_segmented(&stream, &input, &data, &output, &desc.segmented(form))?,
        None => ctx.scan_array(&stream, &input, &output, call.int("axis")? as isize, &desc)?,
    };
    Ok(())
}

/// `scanrt_recipe`: a recipe's inputs into its outputs along `axis` (`recipe`: cummax,
/// cummin, logcumsumexp, linear_recurrence, linear_recurrence_adjoint), or with
/// `segments` over the segments of 1-D inputs (the segment data after them), `inclusive`,
/// `reverse`, `deterministic`, and an optional `initial` number.
pub(super) fn recipe_scan(call: &Call) -> Result<(), Failure> {
    let (all, rets) = (call.args(), call.rets());
    // SAFETY: the call's buffers, used only during it.
    let segments = unsafe { segment_data(call, &all) }?;
    let args = &all[..all.len() - usize::from(segments.is_some())];
    let recipe = call.text("recipe")?;
    let first = args
        .first()
        .ok_or_else(|| invalid(format!("{recipe} without inputs")))?;
    // SAFETY: the call's buffers, used only during it.
    let (ins, outs) = unsafe { (views(args, false)?, views(&rets, true)?) };
    let dtype = unsafe { view(first, false) }?.dtype();
    let (device, ctx, stream) = call.context_and_stream()?;
    let op = recipe_operator(&ctx, device, recipe, dtype)?;
    let init = match call.attr("initial")? {
        None => None,
        Some(value @ (Attr::Float(_) | Attr::Int(_))) => {
            let number = match value {
                Attr::Int(v) => v as f64,
                Attr::Float(v) => v,
                _ => unreachable!("matched above"),
            };
            // The extremes start from a value of the array type; the rest from the number.
            let exact = match recipe {
                "cummax" | "cummin" => number_as(dtype, value, "initial")?,
                _ => InitValue::of(number),
            };
            Some(recipe_init_state(recipe, dtype, number, exact)?)
        }
        Some(other) => return Err(invalid(format!("initial {other:?} is not a number"))),
    };
    let scan = operator_scan_of(call, init, &segments)?;
    match &segments {
        Some((data, _)) => op.scan_arrays_carried(&stream, &ins, &outs, Some(data), &scan, &Default::default())?,
        None => {
            let axis = call.int("axis")? as isize;
            op.scan_arrays_along(&stream, &ins, &outs, axis, &scan, &Default::default())?
        }
    };
    Ok(())
}

/// `scanrt_sort`: 1-D keys (and values) into sorted keys and the values in their order (or,
/// without values, the keys' indices, U32 or U64), `descending`, the ordered keys' bits
/// `begin_bit..end_bit` (`end_bit` -1: the key's width). Stable.
pub(super) fn radix_sort(call: &Call) -> Result<(), Failure> {
    let (args, rets) = (call.args(), call.rets());
    let (keys, values, [keys_out, moved]) = match (&args[..], &rets[..]) {
        ([k], [ko, i]) => (*k, None, [*ko, *i]),
        ([k, v], [ko, vo]) => (*k, Some(*v), [*ko, *vo]),
        _ => {
            return Err(invalid(format!(
                "scanrt_sort takes keys (and values) into two arrays, not {} into {}",
                args.len(),
                rets.len()
            )))
        }
    };
    let end_bit = call.int("end_bit")?;
    let desc = SortDesc {
        order: if call.flag("descending")? {
            SortOrder::Descending
        } else {
            SortOrder::Ascending
        },
        begin_bit: u32::try_from(call.int("begin_bit")?).map_err(|_| invalid("begin_bit is negative".into()))?,
        end_bit: u32::try_from(end_bit).ok(),
    };
    // SAFETY: the call's buffers, used only during it.
    let arrays = unsafe {
        SortArrays {
            keys_in: view(keys, false)?,
            keys_out: view(keys_out, true)?,
            values_in: values.map(|v| view(v, false)).transpose()?,
            values_out: Some(view(moved, true)?),
            temp: None,
        }
    };
    let (_, ctx, stream) = call.context_and_stream()?;
    ctx.sort(&stream, &arrays, &desc)?;
    Ok(())
}

/// `scanrt_select`: the 1-D `x` (and its flags, for the rules "mask" and "bits") into its
/// kept values, or with `indices` their positions (U32 or U64), at most `capacity` (the
/// output's length) of them, and the count (one U32, U64 or I64); with `partition`
/// ("reversed": the rejected after the kept, from the end; "two": into a third array),
/// every element; with `lengths` (rule "run_heads"), the runs' lengths (U32 or U64, as
/// long as `x`) between the values and the count. `rule`: "mask", "bits", "nonzero",
/// "not_nan", "run_heads", or a comparison ("==", "<", ...) with the number `operand`.
pub(super) fn select(call: &Call) -> Result<(), Failure> {
    let (args, rets) = (call.args(), call.rets());
    let (x, flags) = match &args[..] {
        [x] => (*x, None),
        [x, f] => (*x, Some(*f)),
        _ => {
            return Err(invalid(format!(
                "scanrt_select takes one or two arrays, not {}",
                args.len()
            )))
        }
    };
    let (out, middle, count) = match &rets[..] {
        [o, c] => (*o, None, *c),
        [o, m, c] => (*o, Some(*m), *c),
        _ => {
            return Err(invalid(format!(
                "scanrt_select writes two or three arrays, not {}",
                rets.len()
            )))
        }
    };
    // A third array is the rejected values of a split partition, or with `lengths` the
    // lengths of the runs (rule "run_heads").
    let (rejected, lengths) = if call.flag("lengths")? {
        (None, middle)
    } else {
        (middle, None)
    };
    // SAFETY: the call's buffers, used only during it.
    let arrays = unsafe {
        SelectArrays {
            input: view(x, false)?,
            flags: flags.map(|f| view(f, false)).transpose()?,
            output: view(out, true)?,
            rejected: rejected.map(|r| view(r, true)).transpose()?,
            lengths: lengths.map(|l| view(l, true)).transpose()?,
            num_selected: view(count, true)?,
        }
    };
    let rule = call.text("rule")?;
    let selection = match rule_without_operand(rule) {
        Some(selection) => selection,
        None => {
            let comparison = comparison_named(rule).ok_or_else(|| invalid(format!("no selection {rule:?}")))?;
            let operand = call
                .attr("operand")?
                .ok_or_else(|| invalid(format!("the comparison {rule} needs a value")))?;
            Selection::Compare(comparison, number_as(arrays.input.dtype(), operand, "operand")?)
        }
    };
    let partition = match call.attr("partition")? {
        None => None,
        Some(Attr::Text(p)) => Some(p),
        Some(other) => return Err(invalid(format!("partition {other:?} is not a string"))),
    };
    let desc = SelectDesc {
        selection,
        output: output_of(partition, call.flag("indices")?, arrays.lengths.is_some()).map_err(invalid)?,
        capacity: u64::try_from(call.int("capacity")?).ok(),
    };
    let (_, ctx, stream) = call.context_and_stream()?;
    ctx.select(&stream, &arrays, &desc)?;
    Ok(())
}
