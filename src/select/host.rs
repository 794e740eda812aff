//! Selections on the host backend: one sequential pass (compaction is bound by memory,
//! and the count of each element's predecessors is the whole of the dependence).

use crate::array::ArrayView;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::select::desc::{SelectDesc, SelectOutput, Selection};
use crate::select::SelectArrays;
use crate::types::DType;

/// Elements the host compares, as their own type.
trait HostElement: Scalar + PartialOrd + Default {
    fn is_zero(self) -> bool {
        self == Self::default()
    }
    #[allow(clippy::eq_op)]
    fn is_nan(self) -> bool {
        self != self
    }
}
impl<T: Scalar + PartialOrd + Default> HostElement for T {}

/// Runs a checked selection of `n` elements, writing at most `capacity` selected ones.
///
/// # Safety
/// The views are host memory valid for their lengths, which the checks compared with `n`.
pub(crate) unsafe fn select(a: &SelectArrays, desc: &SelectDesc, n: u64, capacity: u64) -> Result<()> {
    crate::dispatch_dtype!(a.input.dtype(), |T| run_typed::<T>(
        a,
        desc,
        n as usize,
        capacity as usize
    ))
}

unsafe fn run_typed<T: HostElement>(a: &SelectArrays, desc: &SelectDesc, n: usize, capacity: usize) -> Result<()> {
    // Elements are read through the raw pointer, never a slice: an in-place selection
    // writes the same memory while the loop runs.
    let input = a.input.addr() as *const T;
    let at = |i: usize| -> T { *input.add(i) };
    let keep = |i: usize| -> bool {
        let x = at(i);
        match &desc.selection {
            Selection::ByteFlags => *(a.flags.unwrap().addr() as *const u8).add(i) != 0,
            Selection::BitFlags => (*(a.flags.unwrap().addr() as *const u32).add(i / 32) >> (i % 32)) & 1 == 1,
            Selection::Compare(c, operand) => c.holds(x, T::from_bits(operand.bits())),
            Selection::NonZero => !x.is_zero(),
            Selection::NotNan => !x.is_nan(),
            Selection::RunHeads => i == 0 || x != at(i - 1),
            Selection::Predicate(p) => p.host.as_ref().is_some_and(|f| f(x.to_bits())),
        }
    };
    if let Selection::Predicate(p) = &desc.selection {
        if p.host.is_none() && n > 0 {
            crate::error::bail!(
                UnsupportedCombination,
                "predicate {} has no host function: the host backend cannot run it",
                p.function
            );
        }
    }
    if desc.output == SelectOutput::RunLengths {
        let lengths = a.lengths.expect("checked: a run-length encoding has its lengths");
        let mut runs = 0usize;
        let mut start = 0usize;
        for i in 0..n {
            if i + 1 == n || at(i + 1) != at(i) {
                *(a.output.addr() as *mut T).add(runs) = at(start);
                let length = (i + 1 - start) as u64;
                match lengths.dtype() {
                    DType::U32 => *(lengths.addr() as *mut u32).add(runs) = length as u32,
                    _ => *(lengths.addr() as *mut u64).add(runs) = length,
                }
                runs += 1;
                start = i + 1;
            }
        }
        write_count(&a.num_selected, runs);
        return Ok(());
    }
    // In place (output = input), element i is read before position i (<= i) is written.
    let out = a.output.addr();
    let mut selected = 0usize;
    let mut rejected = 0usize;
    for i in 0..n {
        if keep(i) {
            if selected < capacity {
                match desc.output {
                    SelectOutput::Indices if a.output.dtype() == DType::U32 => {
                        *(out as *mut u32).add(selected) = i as u32
                    }
                    SelectOutput::Indices => *(out as *mut u64).add(selected) = i as u64,
                    _ => *(out as *mut T).add(selected) = at(i),
                }
            }
            selected += 1;
        } else {
            match desc.output {
                SelectOutput::PartitionReversed => *(out as *mut T).add(n - 1 - rejected) = at(i),
                SelectOutput::PartitionTwo => *(a.rejected.unwrap().addr() as *mut T).add(rejected) = at(i),
                _ => {}
            }
            rejected += 1;
        }
    }
    write_count(&a.num_selected, selected);
    Ok(())
}

/// Writes a selection's count in the count's type (checked: U32 holds it, or U64, I64).
unsafe fn write_count(count: &ArrayView, value: usize) {
    match count.dtype() {
        DType::U32 => *(count.addr() as *mut u32) = value as u32,
        _ => *(count.addr() as *mut u64) = value as u64,
    }
}
