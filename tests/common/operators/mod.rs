//! Randomized checks of user-defined operators and the recipes against plain sequential
//! loops written here (independent of the library's host functions), on any context:
//! the GPU suite runs them large, the host suite small. The recipes' checks are in
//! `recipe_checks`, the examples' in `example_checks`; this file holds the shapes and the
//! runner they share.

use scanrt::{Buffer, Context, DType, OperatorScan, Segments, Stream};

use super::{encode_segments, Rng};

mod example_checks;
/// The examples' operators (examples/line_of_sight.rs, examples/fibonacci.rs).
#[path = "../../../examples/operators/mod.rs"]
pub mod examples;
mod recipe_checks;

// Not every test crate that includes `common` uses them.
#[allow(unused_imports)]
pub use example_checks::*;
#[allow(unused_imports)]
pub use recipe_checks::*;

/// One randomized shape: length, direction, inclusive or exclusive, segments (byte flags
/// or rows) and offsets into larger buffers (misaligned starts).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub n: usize,
    pub backward: bool,
    /// Element i's output leaves input i out.
    pub exclusive: bool,
    /// 0: unsegmented; 1: random byte flags; 2: rows of `row` elements; 3: random bit
    /// flags; 4: random runs of u32 keys.
    pub segments: u8,
    pub row: u64,
    pub offset: u64,
    pub deterministic: bool,
}

impl Shape {
    /// A forward, inclusive, unsegmented scan of `n` aligned elements.
    pub fn plain(n: usize) -> Shape {
        Shape {
            n,
            backward: false,
            exclusive: false,
            segments: 0,
            row: 1,
            offset: 0,
            deterministic: false,
        }
    }
    pub fn random(rng: &mut Rng, sizes: &[usize]) -> Shape {
        let n = sizes[rng.below(sizes.len() as u64) as usize];
        Shape {
            n,
            backward: rng.below(2) == 1,
            exclusive: rng.below(3) == 0,
            segments: rng.below(5) as u8,
            row: 1 + rng.below(n.max(1) as u64 / 3 + 2),
            offset: if rng.below(3) == 0 { 1 + rng.below(3) } else { 0 },
            deterministic: rng.below(4) == 0,
        }
    }
    /// Whether element p starts a segment in memory order, and the scan description.
    pub fn starts(&self, rng: &mut Rng) -> Vec<bool> {
        (0..self.n as u64)
            .map(|p| match self.segments {
                1 | 3 | 4 => rng.below(50) == 0,
                2 => p % self.row == 0,
                _ => false,
            })
            .collect()
    }
    pub fn scan(&self) -> OperatorScan {
        let mut s = if self.exclusive {
            OperatorScan::exclusive()
        } else {
            OperatorScan::inclusive()
        };
        if self.backward {
            s = s.backward();
        }
        if self.deterministic {
            s = s.deterministic();
        }
        match self.segments {
            1 => s.segmented(Segments::ByteFlags),
            2 => s.segmented(Segments::Rows(self.row)),
            3 => s.segmented(Segments::BitFlags),
            4 => s.segmented(Segments::Keys(DType::U32)),
            _ => s,
        }
    }
    /// What element p's output holds: the running state after its own input, or before
    /// it (exclusive).
    pub fn output<S: Copy>(&self, before: S, after: S) -> S {
        if self.exclusive {
            before
        } else {
            after
        }
    }
    /// The traversal order of physical indices, and whether each restarts.
    pub fn walk(&self, starts: &[bool]) -> Vec<(usize, bool)> {
        let n = self.n;
        (0..n)
            .map(|i| {
                if self.backward {
                    let p = n - 1 - i;
                    (p, i == 0 || (self.segments != 0 && (p + 1 < n && starts[p + 1])))
                } else {
                    (i, i == 0 || (self.segments != 0 && starts[i]))
                }
            })
            .collect()
    }
}

/// An array `offset` elements into a buffer of its own (a misaligned start when offset
/// is not a multiple of 16 bytes).
pub struct Array {
    buffer: Buffer,
    offset: usize,
    pub addr: u64,
}

impl Array {
    pub fn new<T: scanrt::Scalar>(ctx: &Context, stream: &Stream, data: &[T], offset: u64) -> Array {
        let mut padded = vec![data.first().copied().unwrap_or_else(|| T::from_bits(0)); data.len() + offset as usize];
        padded[offset as usize..].copy_from_slice(data);
        let buffer = Buffer::from_slice(ctx, stream, &padded).unwrap();
        let addr = buffer.addr() + offset * T::DTYPE.size() as u64;
        Array {
            buffer,
            offset: offset as usize,
            addr,
        }
    }
    pub fn read<T: scanrt::Scalar>(&self, stream: &Stream, n: usize) -> Result<Vec<T>, String> {
        let all = self
            .buffer
            .download::<T>(stream, n + self.offset)
            .map_err(|e| e.to_string())?;
        Ok(all[self.offset..].to_vec())
    }
}

/// Runs `scan` of `op` with the segment data `starts` asks for.
#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    inputs: &[u64],
    outputs: &[u64],
    shape: &Shape,
    starts: &[bool],
    scan: &OperatorScan,
) -> Result<(), String> {
    // Flags or keys as the segment form reads them (byte values and keys drawn from n).
    let data = encode_segments(&mut Rng(shape.n as u64), scan.segments, starts);
    let data_buffer = Buffer::from_slice(ctx, stream, &data).map_err(|e| e.to_string())?;
    let segments = if scan.segments.has_data() {
        data_buffer.addr()
    } else {
        0
    };
    // SAFETY: all addresses are in live allocations of this context holding n elements.
    unsafe { op.scan_raw(stream, inputs, outputs, shape.n as u64, segments, scan, None) }.map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())
}

/// Runs `scan` of `op` from the input arrays `inputs` to one output array of the same
/// type (all bits set until written; with `in_place`, the last input itself), and reads
/// the output.
#[allow(clippy::too_many_arguments)]
fn scan_to_one_array<T: scanrt::Scalar>(
    ctx: &Context,
    stream: &Stream,
    op: &scanrt::Operator,
    shape: &Shape,
    starts: &[bool],
    scan: &OperatorScan,
    inputs: &[&[T]],
    in_place: bool,
) -> Result<Vec<T>, String> {
    let arrays: Vec<Array> = inputs
        .iter()
        .map(|x| Array::new(ctx, stream, x, shape.offset))
        .collect();
    let fresh;
    let out = if in_place {
        arrays.last().unwrap()
    } else {
        fresh = Array::new(ctx, stream, &vec![T::from_bits(u64::MAX); shape.n], shape.offset);
        &fresh
    };
    let addresses: Vec<u64> = arrays.iter().map(|a| a.addr).collect();
    run(ctx, stream, op, &addresses, &[out.addr], shape, starts, scan)?;
    out.read::<T>(stream, shape.n)
}

/// The first element where `got` differs from `expect` (bitwise-exact results), named
/// with `case`.
pub(crate) fn exactly_equal<T: PartialEq + std::fmt::Debug>(
    case: &str,
    got: impl Iterator<Item = T>,
    expect: &[T],
) -> Result<(), String> {
    for (p, (g, e)) in got.zip(expect).enumerate() {
        if g != *e {
            return Err(format!("{case}: element {p} = {g:?} expected {e:?}"));
        }
    }
    Ok(())
}
