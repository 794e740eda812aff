//! The strided scan on the host backend: each sequence of each array gathered into a
//! contiguous buffer, scanned by the operator model's host backend (the same semantics
//! and association order as a 1-D scan of that sequence), and scattered back.

use crate::contract::StateBytes;
use crate::error::Result;
use crate::scan::desc::ScanShape;
use crate::scan::operator_model::{ArrayLayout, Carries, OperatorModel, ScanArrays};
use crate::scan::strided::layout::{StridedArrays, Strides};

/// Scans every sequence of the arrays with `model`'s host backend.
///
/// # Safety
/// The views `a.pair` describes hold every element their strides reach from each array
/// (host memory, of `model`'s layouts), nothing else accesses the outputs meanwhile, and
/// the carries hold the states `a.carries` says.
pub(crate) unsafe fn scan(model: &dyn OperatorModel, a: &StridedArrays, shape: &ScanShape) -> Result<()> {
    let form = a.pair.form;
    let len = form.len as usize;
    let (carries, state) = (a.carries, model.state_bytes());
    let staging =
        |layouts: &[ArrayLayout]| -> Vec<Vec<u8>> { layouts.iter().map(|l| vec![0u8; len * l.size]).collect() };
    let (mut staged_in, mut staged_out) = (staging(model.inputs()), staging(model.outputs()));
    let element = |base: u64, strides: &Strides, b: u64, i: u64, c: u64, size: usize| -> u64 {
        let offset = b as i64 * strides.batch + i as i64 * strides.row + c as i64 * strides.column;
        base.wrapping_add((offset * size as i64) as u64)
    };
    for b in 0..form.batches {
        for c in 0..form.columns {
            let sequence = (b as i64 * carries.strides.batch + c as i64 * carries.strides.column) as u64;
            for ((&base, layout), staged) in a.inputs.iter().zip(model.inputs()).zip(&mut staged_in) {
                for i in 0..form.len {
                    let from = element(base, &a.pair.input, b, i, c, layout.size) as *const u8;
                    std::ptr::copy_nonoverlapping(from, staged.as_mut_ptr().add(i as usize * layout.size), layout.size);
                }
            }
            let mut sequence_shape = *shape;
            if carries.carry_in != 0 {
                let index = if carries.per_sequence_in { sequence } else { 0 };
                let from = (carries.carry_in + index * state as u64) as *const u8;
                sequence_shape.init = Some(StateBytes::from_bytes(std::slice::from_raw_parts(from, state)));
            }
            let inputs: Vec<u64> = staged_in.iter().map(|v| v.as_ptr() as u64).collect();
            let outputs: Vec<u64> = staged_out.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
            let arrays = ScanArrays {
                known_arrays: true,
                ..ScanArrays::new(&inputs, &outputs, Carries::default())
            };
            let total = model.scan_on_host(&arrays, form.len, &sequence_shape)?;
            if carries.carry_out != 0 {
                let to = (carries.carry_out + sequence * state as u64) as *mut u8;
                std::ptr::copy_nonoverlapping(total.bytes().as_ptr(), to, state);
            }
            for ((&base, layout), staged) in a.outputs.iter().zip(model.outputs()).zip(&staged_out) {
                for i in 0..form.len {
                    let to = element(base, &a.pair.output, b, i, c, layout.size) as *mut u8;
                    std::ptr::copy_nonoverlapping(staged.as_ptr().add(i as usize * layout.size), to, layout.size);
                }
            }
        }
    }
    Ok(())
}
