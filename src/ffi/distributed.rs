//! Scans across GPUs through NCCL: one rank's part with the application's `ncclComm_t`
//! (built-in operators on arrays, user-defined operators on device pointers), and the
//! single-process form over several contexts (`scanrt_multi_gpu`).

use std::ffi::c_void;

use super::array::{scanrt_array, view_of, views_of};
use super::context::scanrt_context;
use super::operator::scanrt_operator;
use super::operator_scan::DeviceCall;
use super::scan::{desc_from_c, scanrt_scan_desc, scanrt_scan_info, InfoOut};
use super::stream::scanrt_stream;
use super::support::{boundary, non_null, put, slice_of};
use super::versioned::read_versioned;
use crate::distributed::{Communicator, GpuPart, MultiGpu, OperatorPart};
use crate::tables::ScanrtStatus;

/// This rank's part of a scan across the ranks of the application's NCCL communicator
/// `nccl_comm` (an `ncclComm_t`; ranks in communicator order form the logical array),
/// like `MPI_Scan`: `input` is the rank's 1-D chunk, `output` receives its chunk of the
/// result of scanning the whole array with `desc` (its initial value starts rank 0, or
/// the last rank backward), `total` (NULL, or one element of the accumulator type)
/// receives the whole array's total. Every rank calls it with the same descriptor, on a
/// stream of its communicator's device; asynchronous (about 3n memory traffic and one
/// all-gather of a value per rank). Unsegmented scans only. Without an NCCL library,
/// `SCANRT_STATUS_NO_NCCL`. A rank whose arguments are refused, or whose few bytes of
/// totals cannot be allocated, returns before any collective; the other ranks then wait
/// for it, as for any NCCL collective a rank skips, so an application that continues
/// after a rank's error aborts the communicator (`ncclCommAbort`). Not between
/// `ncclGroupStart` and `ncclGroupEnd`: the chunk's scan is queued after the all-gather,
/// which a group would hold back until its end (one thread per rank, or
/// `scanrt_multi_gpu_scan` for the GPUs of one process). Every rank's accumulator type
/// must be the same. `info` may be NULL.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_scan_across(
    ctx: *const scanrt_context,
    nccl_comm: *mut c_void,
    stream: *const scanrt_stream,
    input: *const scanrt_array,
    output: *const scanrt_array,
    total: *const scanrt_array,
    desc: *const scanrt_scan_desc,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
        let ctx = &non_null(ctx, "ctx")?.inner;
        let stream = &non_null(stream, "stream")?.inner;
        let comm = Communicator::from_raw(nccl_comm)?;
        let input = view_of(input, "input")?;
        let output = view_of(output, "output")?;
        let total = (!total.is_null()).then(|| view_of(total, "total")).transpose()?;
        let info = InfoOut::check(info)?;
        let desc = desc_from_c(&read_versioned(desc, "desc")?, output.dtype())?;
        info.write(ctx.scan_across(&comm, stream, &input, &output, &desc, total.as_ref())?);
        Ok(())
    })
}

/// `scanrt_scan_across` with a user-defined operator on device pointers: `inputs`,
/// `outputs` and `n` (this rank's chunk) as for `scanrt_operator_scan_device`, on the
/// application's `cuda_stream`; `init` (host memory, NULL: the identity) starts rank 0;
/// `total` (device memory, NULL: none) receives the whole array's total state.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_operator_scan_across_device(
    op: *const scanrt_operator,
    nccl_comm: *mut c_void,
    cuda_stream: *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    n: u64,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    total: *mut c_void,
    info: *mut scanrt_scan_info,
) -> ScanrtStatus {
    boundary(|| {
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
        let comm = Communicator::from_raw(nccl_comm)?;
        let (op, scan) = (call.op, &call.scan);
        let done = op.scan_across_raw(&comm, &call.stream, &call.inputs, &call.outputs, n, scan, total as u64)?;
        call.info.write(done);
        Ok(())
    })
}

/// The GPUs of this process as ranks of scans across them (NCCL communicators made once).
pub struct scanrt_multi_gpu {
    inner: MultiGpu,
}

/// Makes the ranks over `count` GPU contexts of distinct devices, in rank order (this
/// initialises NCCL communicators: keep the object).
#[no_mangle]
pub unsafe extern "C" fn scanrt_multi_gpu_create(
    contexts: *const *const scanrt_context,
    count: usize,
    out: *mut *mut scanrt_multi_gpu,
) -> ScanrtStatus {
    boundary(|| {
        // Inside `put`, which sets *out to NULL first: a refused list leaves no stale handle.
        put(out, || {
            let contexts: Vec<_> = slice_of(contexts, count, "contexts")?
                .iter()
                .map(|&c| non_null(c, "contexts[i]").map(|c| c.inner.clone()))
                .collect::<Result<_, _>>()?;
            Ok(scanrt_multi_gpu {
                inner: MultiGpu::new(&contexts)?,
            })
        })
    })
}

/// Scans the logical array made of one chunk per GPU (`inputs[r]` into `outputs[r]`, 1-D,
/// on `streams[r]` of context r) with `desc`, asynchronously on every stream; `totals`
/// (NULL, or one 1-element array per GPU) receive the whole array's total. Every part is
/// checked before anything is queued.
#[no_mangle]
pub unsafe extern "C" fn scanrt_multi_gpu_scan(
    group: *const scanrt_multi_gpu,
    streams: *const *const scanrt_stream,
    inputs: *const scanrt_array,
    outputs: *const scanrt_array,
    totals: *const scanrt_array,
    desc: *const scanrt_scan_desc,
) -> ScanrtStatus {
    boundary(|| {
        let group = &non_null(group, "group")?.inner;
        let ranks = group.ranks();
        let streams = slice_of(streams, ranks, "streams")?;
        let inputs = views_of(inputs, ranks, ranks, "inputs")?;
        let outputs = views_of(outputs, ranks, ranks, "outputs")?;
        let mut totals = if totals.is_null() {
            Vec::new()
        } else {
            views_of(totals, ranks, ranks, "totals")?
        }
        .into_iter();
        let c_desc = read_versioned(desc, "desc")?;
        let mut parts = Vec::with_capacity(ranks);
        for (r, (input, output)) in inputs.into_iter().zip(outputs).enumerate() {
            parts.push(GpuPart {
                stream: &non_null(streams[r], "streams[r]")?.inner,
                input,
                output,
                total: totals.next(),
            });
        }
        let desc = desc_from_c(&c_desc, parts[0].output.dtype())?;
        group.scan(&parts, &desc)
    })
}

/// `scanrt_multi_gpu_scan` with a user-defined operator: `ops[r]` made on context r (one
/// definition on every GPU); rank r's chunk of `lengths[r]` elements in the device arrays
/// `inputs[r * num_inputs + i]` and `outputs[r * num_outputs + j]` (as
/// `scanrt_operator_scan_device` takes them), on the application's `cuda_streams[r]`;
/// `init` (host memory, NULL: the identity) starts rank 0; `totals` (NULL, or one device
/// address per GPU, each NULL or room for one state) receive the whole array's total state.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn scanrt_multi_gpu_operator_scan(
    group: *const scanrt_multi_gpu,
    ops: *const *const scanrt_operator,
    cuda_streams: *const *mut c_void,
    inputs: *const *const c_void,
    num_inputs: usize,
    outputs: *const *mut c_void,
    num_outputs: usize,
    lengths: *const u64,
    desc: *const scanrt_scan_desc,
    init: *const c_void,
    totals: *const *mut c_void,
) -> ScanrtStatus {
    boundary(|| {
        let group = &non_null(group, "group")?.inner;
        let ranks = group.ranks();
        let ops = slice_of(ops, ranks, "ops")?;
        let streams = slice_of(cuda_streams, ranks, "cuda_streams")?;
        let lengths = slice_of(lengths, ranks, "lengths")?;
        let totals = if totals.is_null() {
            &[]
        } else {
            slice_of(totals, ranks, "totals")?
        };
        non_null(inputs, "inputs")?;
        non_null(outputs, "outputs")?;
        let calls = (0..ranks)
            .map(|r| {
                DeviceCall::read(
                    ops[r],
                    streams[r],
                    inputs.add(r * num_inputs),
                    num_inputs,
                    outputs.add(r * num_outputs),
                    num_outputs,
                    desc,
                    init,
                    std::ptr::null_mut(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let parts: Vec<OperatorPart> = calls
            .iter()
            .enumerate()
            .map(|(r, call)| OperatorPart {
                op: call.op,
                stream: &call.stream,
                inputs: &call.inputs,
                outputs: &call.outputs,
                n: lengths[r],
                total: totals.get(r).map_or(0, |&t| t as u64),
            })
            .collect();
        group.scan_operator(&parts, &calls[0].scan)
    })
}

/// Destroys the ranks (their NCCL communicators) after the scans queued with them.
#[no_mangle]
pub unsafe extern "C" fn scanrt_multi_gpu_destroy(group: *mut scanrt_multi_gpu) {
    super::support::destroy(group)
}
