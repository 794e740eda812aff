//! A plan's reduction: the total of its elements (the initial value combined with each,
//! in traversal order), written to memory and nothing else. On a GPU it is the matrix
//! scan's first two kernels (tile sums, then their scan, which writes the total): one read
//! of the input, in a fixed association order. A scan across GPUs exchanges these totals.

use crate::runtime::cu::CUstream;

use super::device_arrays::carry_empty_scan;
use super::{address_flags, ScanPlan};
use crate::contract::ScanParams;
use crate::engine::Engine;
use crate::error::{bail, Result};
use crate::scan::operator_model::{Carries, ScanArrays};
use crate::stream::Stream;
use crate::tables::Algorithm;

impl ScanPlan {
    /// Writes the total of the plan's `n` elements, read from `inputs` (the operator's
    /// input arrays), to the state at `total`. The plan must run the matrix scan (the
    /// fixed-order reduction); on the host backend the elements are scanned into scratch.
    ///
    /// # Safety
    /// As [`ScanPlan::execute`]: host addresses valid for `n` elements (and one state at
    /// `total`) on the host backend; device memory that stays allocated until the work
    /// completes on a GPU (the driver checks the ranges).
    pub(crate) unsafe fn reduce(&self, stream: &Stream, inputs: &[u64], total: u64) -> Result<()> {
        self.ctx.check_stream_owner(stream)?;
        let model = self.operator.model();
        let (n, state) = (self.n, model.state_bytes() as u64);
        if inputs.len() != model.inputs().len() {
            bail!(
                InvalidArgument,
                "{} reads {} arrays; {} were passed",
                model.subject(),
                model.inputs().len(),
                inputs.len()
            );
        }
        if total == 0 || (n > 0 && inputs.contains(&0)) {
            bail!(NullArgument, "{}: NULL array or total", model.subject());
        }
        if !total.is_multiple_of(model.state_align() as u64) {
            bail!(
                InvalidArgument,
                "{}: the total must be aligned to the state",
                model.subject()
            );
        }
        for (&addr, layout) in inputs.iter().zip(model.inputs()) {
            if !addr.is_multiple_of(layout.align as u64) {
                bail!(
                    InvalidArgument,
                    "{}: arrays must be aligned to their elements",
                    model.subject()
                );
            }
            if super::super::checks::overlaps(addr, n * layout.size as u64, total, state) {
                bail!(PartialOverlap, "{}: the total overlaps an input", model.subject());
            }
        }
        let carries = Carries {
            carry_in: 0,
            carry_out: total,
        };
        let (Engine::Gpu(engine), Some(plan)) = (self.ctx.engine(), &self.gpu) else {
            // Host: scan into scratch outputs, keep the total.
            let scratch: Vec<Vec<u8>> = model.outputs().iter().map(|l| vec![0u8; n as usize * l.size]).collect();
            let outputs: Vec<u64> = scratch.iter().map(|v| v.as_ptr() as u64).collect();
            let arrays = ScanArrays::new(inputs, &outputs, carries);
            let bytes = model.scan_on_host(&arrays, n, &self.shape)?.bytes();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), total as *mut u8, state as usize);
            return Ok(());
        };
        if self.algorithm != Algorithm::Matrix {
            bail!(
                UnsupportedCombination,
                "a reduction runs the matrix scan, not {:?}",
                self.algorithm
            );
        }
        let dev = &engine.device;
        let (_current, target) = dev.prepare_launch(stream.raw() as CUstream, stream.verified())?;
        let raw_stream = target.stream;
        for (&addr, layout) in inputs.iter().zip(model.inputs()) {
            if n > 0 {
                dev.check_device_range(addr, n * layout.size as u64, "input")?;
            }
        }
        dev.check_device_range(total, state, "total")?;
        if n == 0 {
            return carry_empty_scan(model, &self.shape, carries, raw_stream);
        }
        let arrays = ScanArrays::new(inputs, &[], carries);
        let scan = ScanParams {
            input: inputs[0],
            report: dev.faults.device,
            n: n as i64,
            carry_out: total,
            flags: plan.flags | address_flags(&arrays, model, n, &self.shape),
            ..Default::default()
        };
        self.launch_params(dev, plan, &target, scan, &arrays, true, None)
    }
}
