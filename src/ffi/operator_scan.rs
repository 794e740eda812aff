//! Scans with user-defined operators: on buffers, on device pointers with the
//! application's stream, with a caller's workspace, the workspace query, and along an
//! axis of strided arrays.

use std::ffi::c_void;

use super::array::{scanrt_array, view_of, views_of};
use super::buffer::scanrt_buffer;
use super::operator::{array_list, scanrt_operator};
use super::scan::{scanrt_scan_desc, scanrt_scan_info, traversal_from_c, InfoOut};
use super::stream::scanrt_stream;
use super::support::{boundary, non_null, non_null_mut};
use super::versioned::read_versioned;
use crate::error::{bail, Result};
use crate::operator::{Operator, OperatorScan};
use crate::runtime::workspace::Workspace;
use crate::scan::carry_views::CarryViews;
use crate::scan::operator_model::Carries;
use crate::stream::Stream;
use crate::tables::ScanrtStatus;

/// The operator scan a C descriptor and initial state ask for.
unsafe fn scan_from_c(
    op: &Operator,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
) -> Result<(OperatorScan, u64)> {
    let d = read_versioned(desc, "desc")?;
    if d.has_init != 0 {
        bail!(
            InvalidArgument,
            "an operator scan takes its initial state as the init argument; desc->has_init must be 0"
        );
    }
    let (algorithm, direction, segments) = traversal_from_c(&d)?;
    let state_size = op.desc().state_size;
    // SAFETY: a non-NULL init holds one state (the caller's contract).
    let init = (!init.is_null()).then(|| std::slice::from_raw_parts(init as *const u8, state_size).to_vec());
    let scan = OperatorScan {
        inclusive: d.inclusive != 0,
        init,
        algorithm,
        direction,
        deterministic: d.deterministic != 0,
        segments,
    };
    Ok((scan, d.segment_data as u64))
}

/// `count` addresses at `p`, as integers.
unsafe fn addresses<T>(p: *const *const T, count: usize, what: &str) -> Result<Vec<u64>> {
    Ok(array_list(p, count, what)?.iter().map(|&a| a as u64).collect())
}

/// Scans with operator `op` on `stream` (of the operator's context): `inputs` are the
/// load's input buffers in order (one `SCANRT_DTYPE_U8` buffer of states without a load),
/// `outputs` the store's likewise. The scan covers the first output's elements; every
/// other buffer holds at least as many. `desc` gives inclusive, algorithm, direction,
/// deterministic and segments (its `op` is not used, and `has_init` must be 0); `init` is
/// the initial state (`state_size` bytes, host memory) or NULL for the identity. An output may be
/// exactly an input (in place). `info` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_scan(
    op: *const scanrt_operator,
    stream: *const scanrt_stream,
    inputs: *const *const scanrt_buffer,
    num_inputs: usize,
    outputs: *const *const scanrt_buffer,
    num_outputs: usize,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let op = &non_null(op, "op")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let info = InfoOut::check(info)?;
        let buffers = |p: *const *const scanrt_buffer, count: usize, what: &str| -> Result<Vec<&crate::Buffer>> {
            addresses(p, count, what)?
                .into_iter()
                .map(|b| Ok(&non_null(b as *const scanrt_buffer, what)?.inner))
                .collect()
        };
        let (inputs, outputs) = (
            buffers(inputs, num_inputs, "inputs")?,
            buffers(outputs, num_outputs, "outputs")?,
        );
        let (scan, segments) = scan_from_c(op, desc, init)?;
        let (inputs, outputs, n) = op.buffer_arrays(&inputs, &outputs)?;
        // SAFETY: the arrays are live buffers of the operator's context holding n
        // elements; the segment data is range-checked on a GPU and is host memory the
        // caller vouches for on the host backend (as for scanrt_scan).
        info.write(op.scan_raw(stream, &inputs, &outputs, n, segments, &scan, None)?);
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_device(
    op: *const scanrt_operator,
    cuda_stream: *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    n: u64,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    workspace: Option<Workspace>,
    carries: Carries,
    info: *mut scanrt_scan_info,
) -> Result<()> {
    let call = DeviceCall::read(
        op,
        cuda_stream,
        inputs,
        num_inputs,
        outputs,
        num_outputs,
        desc,
        init,
        info,
    )?;
    // SAFETY: every range, the carries' included, is checked with the driver before
    // anything runs.
    let plan = call.op.plan(n, &call.scan)?;
    let done = plan.execute_carried(
        &call.stream,
        &call.inputs,
        &call.outputs,
        call.segments,
        carries,
        workspace,
    )?;
    call.info.write(done);
    Ok(())
}

/// The arguments every device-pointer operator scan of the C ABI takes, decoded: the
/// operator (of a GPU context), the application's stream, the arrays' addresses, the scan
/// and its segment data, where the report goes.
pub(super) struct DeviceCall<'a> {
    pub op: &'a Operator,
    pub stream: Stream,
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    pub scan: OperatorScan,
    pub segments: u64,
    pub info: InfoOut,
}

impl<'a> DeviceCall<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn read(
        op: *const scanrt_operator,
        cuda_stream: *mut c_void,
        inputs: *const *const c_void,
        num_inputs: usize,
        outputs: *const *mut c_void,
        num_outputs: usize,
        desc: *const scanrt_scan_desc,
        init: *const c_void,
        info: *mut scanrt_scan_info,
    ) -> Result<DeviceCall<'a>> {
        let op = &non_null(op, "op")?.inner;
        let ctx = op.context();
        ctx.gpu()?; // device pointers need a GPU context
        let info = InfoOut::check(info)?;
        let inputs = addresses(inputs, num_inputs, "inputs")?;
        let outputs = addresses(outputs as *const *const c_void, num_outputs, "outputs")?;
        let (scan, segments) = scan_from_c(op, desc, init)?;
        Ok(DeviceCall {
            op,
            // The raw handle is checked with the driver by the scan itself.
            stream: Stream::borrowed(ctx, cuda_stream, false),
            inputs,
            outputs,
            scan,
            segments,
            info,
        })
    }
}

/// Scans `n` elements of device arrays with operator `op` on the application's
/// `cuda_stream` (a `cudaStream_t`; NULL = legacy default stream), asynchronously:
/// `inputs` and `outputs` as for `scanrt_operator_scan`, as device pointers. Pointers are
/// checked with the driver before anything is written.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_scan_device(
    op: *const scanrt_operator,
    cuda_stream: *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    n: u64,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        scan_device(
            op,
            cuda_stream,
            inputs,
            num_inputs,
            outputs,
            num_outputs,
            n,
            desc,
            init,
            None,
            Carries::default(),
            info,
        )
    })
}

/// Writes to `*bytes` the workspace `scanrt_operator_scan_device_with_workspace` needs
/// for `n` elements with `desc` (0 when none is needed).
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_workspace_size(
    op: *const scanrt_operator,
    n: u64,
    desc: *const scanrt_scan_desc,
    bytes: *mut usize,
) -> ScanrtStatus {
    boundary(|| {
        let op = &non_null(op, "op")?.inner;
        let (scan, _) = scan_from_c(op, desc, std::ptr::null())?;
        *non_null_mut(bytes, "bytes")? = op.workspace_bytes(n, &scan)?;
        Ok(())
    })
}

/// `scanrt_operator_scan_device` with a caller-provided workspace, initialised by
/// `scanrt_workspace_init` (see there): no allocation at all, for CUDA-graph capture.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_scan_device_with_workspace(
    op: *const scanrt_operator,
    cuda_stream: *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    n: u64,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    workspace: *mut c_void,
    workspace_bytes: usize,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        if workspace.is_null() && workspace_bytes > 0 {
            bail!(
                NullArgument,
                "workspace is NULL but workspace_bytes is {workspace_bytes}"
            );
        }
        let workspace = Workspace {
            ptr: workspace as u64,
            bytes: workspace_bytes,
        };
        scan_device(
            op,
            cuda_stream,
            inputs,
            num_inputs,
            outputs,
            num_outputs,
            n,
            desc,
            init,
            Some(workspace),
            Carries::default(),
            info,
        )
    })
}

/// `scanrt_operator_scan_device` with carries in device memory: the scan starts from the
/// state at `carry_in` (instead of an initial state) and writes its total state, the
/// initial state combined with every element in traversal order, to `carry_out`. Each
/// may be NULL, is one state aligned to the operator's state, and they may be the same
/// address. A scan segmented by offsets (`SCANRT_SEGMENTS_OFFSETS`) takes carries per
/// segment: `num_offsets - 1` states each, segment s starting from state s of
/// `carry_in` and its total going to state s of `carry_out`; they must not overlap, and
/// the offsets must not decrease. Other segmented scans take no carries.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_operator_scan_device_carried(
    op: *const scanrt_operator,
    cuda_stream: *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    n: u64,
    desc: *const scanrt_scan_desc,
    carry_in: *const c_void,
    carry_out: *mut c_void,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    let carries = Carries {
        carry_in: carry_in as u64,
        carry_out: carry_out as u64,
    };
    boundary(|| {
        scan_device(
            op,
            cuda_stream,
            inputs,
            num_inputs,
            outputs,
            num_outputs,
            n,
            desc,
            std::ptr::null(),
            None,
            carries,
            info,
        )
    })
}

/// Scans with operator `op` on `stream` (of the operator's context) along `axis`
/// (negative: from the last) of arrays of one shape: `inputs` (`num_inputs` views, one
/// per load type, all with one layout) into `outputs` (one per store type, all with one
/// layout), each sequence along the axis a scan of its own: columns of matrices, rows
/// with a pitch, any axis of an N-D array, in one pass over the data; the load's index is
/// the element's index along the axis. `desc` as for `scanrt_operator_scan`, without
/// segments; `init` the initial state or NULL. `carry_in` and `carry_out` (each may be
/// NULL): `SCANRT_DTYPE_U8` arrays of whole states in the row-major order of the other
/// axes, a carry in of one state (for every sequence) or one per sequence, a carry out of
/// one per sequence. The operator needs a load and a store. `info` may be NULL.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_operator_scan_arrays(
    op: *const scanrt_operator,
    stream: *const scanrt_stream,
    inputs: *const scanrt_array,
    num_inputs: usize,
    outputs: *const scanrt_array,
    num_outputs: usize,
    axis: i32,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    carry_in: *const scanrt_array,
    carry_out: *const scanrt_array,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let op = &non_null(op, "op")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let info = InfoOut::check(info)?;
        // An operator loads from up to four arrays and stores to up to two.
        let (inputs, outputs) = (
            views_of(inputs, num_inputs, 4, "inputs")?,
            views_of(outputs, num_outputs, 2, "outputs")?,
        );
        let carry = |p: *const scanrt_array, what: &str| (!p.is_null()).then(|| view_of(p, what)).transpose();
        let (carry_in, carry_out) = (carry(carry_in, "carry_in")?, carry(carry_out, "carry_out")?);
        let (scan, segments) = scan_from_c(op, desc, init)?;
        if segments != 0 {
            bail!(InvalidArgument, "a scan along an axis takes no segment data");
        }
        let carries = CarryViews {
            carry_in: carry_in.as_ref(),
            carry_out: carry_out.as_ref(),
        };
        info.write(op.scan_arrays_along(stream, &inputs, &outputs, axis as isize, &scan, &carries)?);
        Ok(())
    })
}
