//! User-defined operators along an axis of strided views (`Operator::scan_arrays_along`):
//! columns of matrices, rows with a pitch, any axis of an N-D array, each sequence a scan
//! of its own, in one pass over the data on the operator's own strided kernels
//! (`scan::strided`; the host backend gathers each sequence and runs the host functions).

use crate::array::ArrayView;
use crate::error::{bail, Result};
use crate::operator::{Operator, OperatorScan};
use crate::scan::carry_views::{CarryViews, CheckedCarry};
use crate::scan::checks::{check_carries, overlaps};
use crate::scan::desc::Segments;
use crate::scan::operator_model::Carries;
use crate::scan::plan::choose_algorithm;
use crate::scan::strided::layout::{check_memory, strided_pair};
use crate::scan::strided::{self, sequence_carries, StridedArrays};
use crate::scan::ScanInfo;
use crate::stream::Stream;
use crate::tables::Algorithm;
use crate::types::DType;

impl Operator {
    /// Scans `inputs` (one per load type) into `outputs` (one per store type) along
    /// `axis` (negative: from the last, as NumPy counts): each sequence along that axis
    /// is a scan of its own, and `Op::load`'s index is the element's index along it. The
    /// views have one shape; the inputs share one layout (strides in elements), the
    /// outputs another. A 1-D contiguous scan runs as [`Operator::scan_arrays_carried`].
    ///
    /// `carries`: `U8` arrays of whole states in the row-major order of the other axes: a
    /// carry in of one state (for every sequence) or one per sequence, a carry out of one
    /// per sequence (each sequence's total state). The operator needs a load and a store.
    pub fn scan_arrays_along(
        &self,
        stream: &Stream,
        inputs: &[ArrayView],
        outputs: &[ArrayView],
        axis: isize,
        scan: &OperatorScan,
        carries: &CarryViews,
    ) -> Result<ScanInfo> {
        let desc = &self.inner.desc;
        let (Some(input_types), Some(output_types)) = (desc.input_types(), desc.output_types()) else {
            bail!(
                UnsupportedCombination,
                "operator {}: a scan along an axis reads typed arrays through a load and writes them through a \
                 store; this operator has {}",
                desc.name,
                if desc.load.is_none() { "no load" } else { "no store" }
            );
        };
        if desc.state_size > strided::kernels::MAX_STATE_BYTES {
            bail!(
                UnsupportedCombination,
                "operator {}: a scan along an axis takes states of at most {} bytes, not {}; scan the arrays with \
                 that axis moved last and made contiguous",
                desc.name,
                strided::kernels::MAX_STATE_BYTES,
                desc.state_size
            );
        }
        if inputs.len() != input_types.len() || outputs.len() != output_types.len() {
            bail!(
                InvalidArgument,
                "operator {} takes {} input and {} output arrays, not {} and {}",
                desc.name,
                input_types.len(),
                output_types.len(),
                inputs.len(),
                outputs.len()
            );
        }
        let (first_in, first_out) = (&inputs[0], &outputs[0]);
        for (views, types, what) in [(inputs, input_types, "input"), (outputs, output_types, "output")] {
            let first = &views[0];
            for (i, (view, &want)) in views.iter().zip(types).enumerate() {
                view.known_to(self.inner.ctx.id())?;
                self.check_array_type(view, want, what, i)?;
                if view.shape() != first_in.shape() || view.strides() != first.strides() {
                    bail!(
                        UnsupportedCombination,
                        "operator {}: the arrays of a scan along an axis have one shape, the inputs one layout and the \
                         outputs one layout ({what} {i}: shape {:?}, strides {:?})",
                        desc.name,
                        view.shape(),
                        view.strides()
                    );
                }
                if what == "output" && !view.writable {
                    bail!(
                        InvalidArgument,
                        "output {i} of operator {} is a read-only view",
                        desc.name
                    );
                }
                view.check_aligned(format_args!("{what} {i} of operator {}", desc.name))?;
            }
        }
        if scan.segments != Segments::None {
            bail!(
                UnsupportedCombination,
                "segments apply to 1-D scans; a scan along an axis restarts at each sequence already"
            );
        }
        if scan.algorithm == Algorithm::Matrix {
            bail!(
                UnsupportedCombination,
                "the matrix scan runs on contiguous 1-D arrays; a scan along an axis runs the single pass \
                 (deterministic = true for a fixed association order)"
            );
        }
        let axis = first_in.normal_axis(axis)?;
        // The load's index counts along the axis.
        desc.check_length(first_in.shape()[axis])?;
        if first_in.shape().len() == 1 && first_in.strides() == [1] && first_out.strides() == [1] {
            return self.scan_arrays_carried(stream, inputs, outputs, None, scan, carries);
        }
        let shape = scan.shape(desc)?;
        let choice = choose_algorithm(shape.algorithm, shape.deterministic, true);
        let pair = strided_pair(first_in, first_out, axis)?;
        for output in outputs {
            for input in inputs {
                check_memory(&pair, input, output)?;
            }
        }
        let ranges: Vec<(u64, u64)> = outputs
            .iter()
            .map(|o| pair.output.byte_range(&pair.form, o.addr(), o.dtype().size()))
            .collect();
        for (j, &(start, bytes)) in ranges.iter().enumerate() {
            if ranges[..j].iter().any(|&(s, b)| overlaps(s, b, start, bytes)) {
                bail!(PartialOverlap, "operator {}: the outputs overlap", desc.name);
            }
        }
        let [carry_in, carry_out] = self.state_carries(carries)?;
        let sequence_carries = sequence_carries(&pair, carry_in, carry_out, "states")?;
        check_carries(
            &*self.inner,
            Carries {
                carry_in: sequence_carries.carry_in,
                carry_out: sequence_carries.carry_out,
            },
            &shape,
        )?;
        let state = desc.state_size;
        let arrays = StridedArrays::of_views(pair, inputs, outputs, self.inner.ctx.id(), sequence_carries, state)?;
        strided::run(&self.inner.ctx, stream, &*self.inner, &arrays, &shape, choice)
    }

    /// Carry views of whole states (`U8` arrays of this context, the carry out writable),
    /// their lengths counted in states.
    pub(crate) fn state_carries(&self, carries: &CarryViews) -> Result<[Option<CheckedCarry>; 2]> {
        let desc = &self.inner.desc;
        let check = |view: Option<&ArrayView>, what: &str, written: bool| -> Result<Option<CheckedCarry>> {
            let Some(view) = view else { return Ok(None) };
            view.known_to(self.inner.ctx.id())?;
            if view.dtype() != DType::U8 {
                bail!(
                    InvalidArgument,
                    "the {what} of operator {} is a uint8 array of whole states, not a {} array",
                    desc.name,
                    view.dtype().c_name()
                );
            }
            if written && !view.writable {
                bail!(InvalidArgument, "the {what} of operator {} is read only", desc.name);
            }
            let bytes = view.flat_len(what)?;
            Ok(Some(CheckedCarry {
                addr: view.addr(),
                len: bytes / desc.state_size as u64,
            }))
        };
        Ok([
            check(carries.carry_in, "carry in", false)?,
            check(carries.carry_out, "carry out", true)?,
        ])
    }
}
