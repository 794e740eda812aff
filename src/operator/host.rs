//! The host backend of user-defined operators: their host functions, one element at a
//! time in traversal order.

use crate::operator::desc::{HostOperator, OperatorDesc};
use crate::scan::desc::ScanShape;
use crate::scan::host::{HostHeads, Walk};
use crate::scan::operator_model::{ArrayLayout, ScanArrays};
use crate::tables::Direction;

/// Runs a user-defined operator's scan on host arrays with its host functions, one
/// element at a time in traversal order; returns the total state (the initial state
/// combined with every element; the last segment's, when segmented).
///
/// # Safety
/// Every array must hold `n` elements of its layout, `arrays.segments` the segment data
/// `shape.segments` describes, outputs exactly an input or disjoint from all.
pub(crate) unsafe fn scan(
    desc: &OperatorDesc,
    host: &HostOperator,
    input_layouts: &[ArrayLayout],
    output_layouts: &[ArrayLayout],
    arrays: &ScanArrays,
    n: u64,
    shape: &ScanShape,
) -> Vec<u8> {
    let n = n as usize;
    let size = desc.state_size;
    // SAFETY: the plan validated the segment data for its shape and n.
    let heads = unsafe { HostHeads::new(arrays.segments, shape.segments, n) };
    let walk = Walk {
        n,
        backward: shape.direction == Direction::Backward,
        heads: heads.heads,
    };
    let init = match &shape.init {
        Some(state) => state.words.iter().flat_map(|w| w.to_ne_bytes()).take(size).collect(),
        None => desc.identity.clone(),
    };
    let (mut running, mut element, mut next) = (desc.identity.clone(), vec![0u8; size], vec![0u8; size]);
    let (num_inputs, num_outputs) = (arrays.inputs.len(), arrays.outputs.len());
    for i in 0..n {
        let p = if walk.backward { n - 1 - i } else { i };
        let head = if walk.backward {
            walk.head::<true>(p)
        } else {
            walk.head::<false>(p)
        };
        if i == 0 || (walk.segmented() && head) {
            running.copy_from_slice(&init);
        }
        // Every input element is read before the outputs are made: an output may be an input.
        let mut inputs: [&[u8]; 4] = [&[]; 4];
        for (slot, (&a, l)) in inputs.iter_mut().zip(arrays.inputs.iter().zip(input_layouts)) {
            *slot = std::slice::from_raw_parts((a as *const u8).add(p * l.size), l.size);
        }
        match &host.load {
            Some(load) if desc.load.is_some() => {
                load(arrays.index_base + p as u64, &inputs[..num_inputs], &mut element)
            }
            _ => element.copy_from_slice(inputs[0]),
        }
        (host.combine)(&running, &element, &mut next);
        let result = if shape.inclusive { &next } else { &running };
        let mut outputs: [&mut [u8]; 2] = Default::default();
        for (slot, (&a, l)) in outputs.iter_mut().zip(arrays.outputs.iter().zip(output_layouts)) {
            *slot = std::slice::from_raw_parts_mut((a as *mut u8).add(p * l.size), l.size);
        }
        match &host.store {
            Some(store) if desc.store.is_some() => store(result, &mut outputs[..num_outputs]),
            _ => outputs[0].copy_from_slice(result),
        }
        std::mem::swap(&mut running, &mut next);
    }
    if n == 0 {
        init
    } else {
        running
    }
}
