//! `scanrt_operator`: a user-defined operator's scan (`scanrt.Operator`) as an XLA custom
//! call, the operator named by its handle (`Operator.xla_handle`).

use super::primitives::{operator_scan_of, segment_data, views};
use super::{invalid, Attr, Call, Failure};
use crate::operator::{xla_operator, NotCompiled};

/// `scanrt_operator`: the operator `operator`'s inputs (its load's arrays, or one uint8
/// array of states; with `segments`, the segment data after them) into its outputs,
/// along `axis` where given (else of 1-D arrays), `inclusive`, `reverse`,
/// `deterministic`, and `initial`: a state's bytes in hexadecimal.
pub(super) fn operator_scan(call: &Call) -> Result<(), Failure> {
    let handle = call.int("operator")?;
    let state = xla_operator(handle).ok_or_else(|| invalid(format!("no operator has the handle {handle}")))?;
    let (all, rets) = (call.args(), call.rets());
    // SAFETY: the call's buffers, used only during it.
    let segments = unsafe { segment_data(call, &all) }?;
    let args = &all[..all.len() - usize::from(segments.is_some())];
    // SAFETY: as above.
    let (ins, outs) = unsafe { (views(args, false)?, views(&rets, true)?) };
    let (device, ctx, stream) = call.context_and_stream()?;
    let op = state.compiled_on(device).map_err(|e| match e {
        NotCompiled::Unhosted(message) => invalid(message),
        NotCompiled::Failed(e) => e.into(),
    })?;
    let init = match call.attr("initial")? {
        None => None,
        Some(Attr::Text(hex)) => {
            Some(bytes_of_hex(hex).ok_or_else(|| invalid(format!("initial {hex:?} is not hexadecimal")))?)
        }
        Some(other) => {
            return Err(invalid(format!(
                "initial {other:?} is not a state's bytes in hexadecimal"
            )))
        }
    };
    let scan = operator_scan_of(call, init, &segments)?;
    let axis = call.attr("axis")?;
    let (result, host_error) = state.one_scan(ctx.backend(), || match (axis, &segments) {
        (Some(Attr::Int(axis)), None) => {
            op.scan_arrays_along(&stream, &ins, &outs, axis as isize, &scan, &Default::default())
        }
        (None, segments) => op.scan_arrays_carried(
            &stream,
            &ins,
            &outs,
            segments.as_ref().map(|(d, _)| d),
            &scan,
            &Default::default(),
        ),
        (Some(_), _) => Err(scanrt::Error::new(
            scanrt::ScanrtStatus::InvalidArgument,
            "an operator's scan along an axis is an integer axis, without segments",
        )),
    });
    // An exception of a host function outranks what the scan made of its results.
    if let Some(error) = host_error {
        return Err(invalid(format!("operator {}: {error}", state.desc.name)));
    }
    result?;
    Ok(())
}

fn bytes_of_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}
