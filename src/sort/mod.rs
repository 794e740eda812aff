//! The radix sort: keys, key-value pairs and argsorts of every integer and float type,
//! ascending or descending, stable, over a bit range, onesweep style on the look-back
//! (kernels/device/radix_sort.cuh). `desc` says what a sort computes and how keys order,
//! `checks` validates a call's arrays, `kernels` holds its GPU kernels, `host` runs it on
//! the host backend; this file holds the entry points and the launches.

pub(crate) mod checks;
pub(crate) mod desc;
pub(crate) mod host;
pub(crate) mod kernels;

use crate::array::ArrayView;
use crate::context::Context;
use crate::contract::{SortParams, SORT_FLAG_INDICES, SORT_FLAG_RANKED_IN, SORT_FLAG_RANKED_OUT, SORT_FLAG_VECTOR_IN};
use crate::engine::{Engine, GpuEngine};
use crate::error::{bail, Result};
use crate::kernels::LoadedSets;
use crate::runtime::calls::CallLabel;
use crate::runtime::cu::{self, CUdeviceptr, CUstream};
use crate::runtime::launch_workspace;
use crate::stream::Stream;
use crate::types::DType;
use desc::{passes, SortDesc};
use kernels::{SortFamily, HISTOGRAM_CHUNK};

/// The arrays of a sort: 1-D views, device memory on a GPU context (host memory on the
/// host backend). Keys and values may each be sorted in place (output = input).
#[derive(Debug, Clone, Copy)]
pub struct SortArrays<'a> {
    /// The keys, of any integer or float type.
    pub keys_in: ArrayView<'a>,
    /// The sorted keys.
    pub keys_out: ArrayView<'a>,
    /// Values that travel with their keys (any type), or `None`.
    pub values_in: Option<ArrayView<'a>>,
    /// The values in the keys' sorted order; with `values_in` `None`, the keys' input
    /// indices (`U32` or `U64`: an argsort).
    pub values_out: Option<ArrayView<'a>>,
    /// Temporary device memory of at least `Context::sort_temp_bytes` bytes (a writable,
    /// contiguous view; on a GPU starting 256-byte aligned, as `cudaMalloc`'s memory
    /// does), or `None` to take it from scanrt's pool (stream-ordered, kept for later calls until
    /// `Context::trim`).
    pub temp: Option<ArrayView<'a>>,
}

/// Most keys one digit-pass launch takes: 2^28 rounded up to whole tiles, well below 2^31
/// so its tiles' counts fit 32 bits, and its look-back workspace stays under 100 MiB.
fn portion_elems(key: DType, value_bytes: u32) -> u64 {
    let tile = kernels::tile_elems(key, value_bytes);
    (1u64 << 28).div_ceil(tile) * tile
}

/// The layout of a sort's temporary memory: the second key and value buffers, then the
/// digit counts of every pass and the carries between portions.
struct TempLayout {
    keys: u64,
    values: u64,
    counts: u64,
    carries: u64,
    /// The zero-filled tail: counts and carries.
    zeroed: u64,
    bytes: u64,
}

impl TempLayout {
    fn of(c: &checks::Checked) -> TempLayout {
        TempLayout::new(c.n, c.spec.key, c.spec.value_bytes as u64, passes(c.begin, c.end))
    }

    /// Saturating: a length no array can have (`sort_temp_bytes` takes any) asks for
    /// `u64::MAX` bytes, which no allocation grants.
    fn new(n: u64, key: DType, value_bytes: u64, passes: u32) -> TempLayout {
        let align = |b: u64| b.div_ceil(256).saturating_mul(256);
        let keys = 0;
        let values = align(n.saturating_mul(key.size() as u64));
        let counts = values.saturating_add(align(n.saturating_mul(value_bytes)));
        let carries = counts.saturating_add((passes as u64 * 256 + 1) * 8); // the counts, then the histogram's counter
        let portions = n.div_ceil(portion_elems(key, value_bytes as u32)).max(1);
        let bytes = carries.saturating_add((passes as u64 * 256 * 8).saturating_mul(portions + 1));
        TempLayout {
            keys,
            values,
            counts,
            carries,
            zeroed: bytes - counts,
            bytes,
        }
    }
}

impl Context {
    /// Bytes of temporary memory a sort of `n` keys of `key` (with values of `values`, or
    /// indices of that type) over all key bits needs (`SortArrays::temp`); a sort over a
    /// bit range needs at most as much.
    pub fn sort_temp_bytes(&self, n: u64, key: DType, values: Option<DType>) -> u64 {
        let value_bytes = values.map_or(0, |v| v.size() as u64);
        TempLayout::new(n, key, value_bytes, passes(0, 8 * key.size() as u32)).bytes
    }

    /// Sorts `arrays.keys_in` (and its values) into `arrays.keys_out` (and
    /// `values_out`) as `desc` says, asynchronously on `stream` for a GPU. Stable: equal
    /// keys keep their input order. Bad input returns an error before anything is
    /// written.
    pub fn sort(&self, stream: &Stream, arrays: &SortArrays, desc: &SortDesc) -> Result<()> {
        self.check_stream_owner(stream)?;
        let all = [
            Some(&arrays.keys_in),
            Some(&arrays.keys_out),
            arrays.values_in.as_ref(),
            arrays.values_out.as_ref(),
            arrays.temp.as_ref(),
        ];
        for v in all.into_iter().flatten() {
            v.known_to(self.id())?;
        }
        let checked = checks::check(arrays, desc)?;
        if let Some(t) = &arrays.temp {
            // Written whole from its address on.
            t.compact_len("temporary memory")?;
            if !t.writable {
                bail!(
                    InvalidArgument,
                    "the temporary memory is a read-only view; pass a writable one"
                );
            }
            let needed = TempLayout::of(&checked).bytes;
            if t.bytes() < needed {
                bail!(
                    BufferTooSmall,
                    "the temporary memory holds {} bytes; this sort needs {needed}",
                    t.bytes()
                );
            }
        }
        match self.engine() {
            // SAFETY: the views are valid for their checked lengths (by their
            // constructors' contracts), and checked not to overlap where they must not.
            Engine::Host => unsafe { host::sort(arrays, desc, checked.n as usize, checked.begin, checked.end) },
            Engine::Gpu(engine) => launch(engine, stream, arrays, &checked),
        }
    }
}

/// Queues a checked sort on a GPU.
fn launch(engine: &GpuEngine, stream: &Stream, a: &SortArrays, c: &checks::Checked) -> Result<()> {
    let dev = &engine.device;
    // The layout's parts start 256-byte aligned from the caller's address (its counters
    // are 8-byte atomics).
    if let Some(t) = a.temp.as_ref().filter(|t| !t.addr().is_multiple_of(256)) {
        bail!(
            InvalidArgument,
            "the temporary memory at {:#x} is not aligned to 256 bytes (as cudaMalloc's is)",
            t.addr()
        );
    }
    let (_current, target) = dev.prepare_launch(stream.raw() as CUstream, stream.verified())?;
    let raw_stream = target.stream;
    let n = c.n;
    let key_bytes = c.spec.key.size() as u64;
    let value_bytes = c.spec.value_bytes as u64;
    let passes = passes(c.begin, c.end);
    let layout = TempLayout::of(c);
    // Memory scanrt did not allocate is range-checked with the driver.
    let views = [
        (Some(&a.keys_in), "keys", n.saturating_mul(key_bytes)),
        (Some(&a.keys_out), "output keys", n.saturating_mul(key_bytes)),
        (a.values_in.as_ref(), "values", n.saturating_mul(value_bytes)),
        (a.values_out.as_ref(), "output values", n.saturating_mul(value_bytes)),
        (a.temp.as_ref(), "temporary memory", layout.bytes),
    ];
    for (v, what, bytes) in views {
        if let Some(v) = v.filter(|v| v.owner.is_none() && bytes > 0) {
            dev.check_device_range(v.addr(), bytes, what)?;
        }
    }
    if n == 0 {
        return Ok(());
    }
    let kernel = engine.algorithms.get::<LoadedSets<SortFamily>>().get(dev, &c.spec)?;
    let portion = portion_elems(c.spec.key, c.spec.value_bytes);
    let tile = kernels::tile_elems(c.spec.key, c.spec.value_bytes);
    let slots = portion.min(n).div_ceil(tile) * 256;
    let workspace = launch_workspace::acquire(dev, &target, None, 4, slots, kernel.clone() as std::sync::Arc<_>)?;
    let temp = match &a.temp {
        Some(t) => Temp::Caller(t.addr()),
        // SAFETY: the stream is checked and the context current; freed below, after
        // every launch that uses it is queued.
        None => Temp::Pooled(unsafe { dev.scratch.alloc(layout.bytes as usize, raw_stream)? }),
    };
    let base = temp.ptr();
    // SAFETY: everything queued reads and writes the checked arrays and the temporary
    // memory within their lengths, on the checked stream.
    let queued = unsafe { queue_passes(engine, raw_stream, a, c, &kernel, &workspace, base, &layout, passes) };
    if let Temp::Pooled(ptr) = temp {
        // SAFETY: every use of it is queued on this stream before.
        unsafe { dev.scratch.free(ptr, raw_stream)? };
    }
    queued
}

/// The histogram kernel's grid: one block per chunk, at most as many as are resident
/// (they stride over the rest), and enough that no block counts 2^31 keys or more (its
/// shared counters are 32-bit).
fn histogram_grid(n: u64, resident_blocks: u32) -> u32 {
    n.div_ceil(HISTOGRAM_CHUNK)
        .min(resident_blocks as u64)
        .max(n.div_ceil(1 << 31)) as u32
}

enum Temp {
    Caller(CUdeviceptr),
    Pooled(CUdeviceptr),
}

impl Temp {
    fn ptr(&self) -> CUdeviceptr {
        match self {
            Temp::Caller(p) | Temp::Pooled(p) => *p,
        }
    }
}

/// Queues the counts' zero fill, the histogram and every digit pass (each portion of it),
/// and the final copy when the last pass wrote the second buffer.
///
/// # Safety
/// The arrays and `base` (temporary memory laid out as `layout`) are device memory valid
/// for the checked sort; the context is current and the stream checked.
#[allow(clippy::too_many_arguments)]
unsafe fn queue_passes(
    engine: &GpuEngine,
    raw_stream: CUstream,
    a: &SortArrays,
    c: &checks::Checked,
    kernel: &kernels::SortKernel,
    workspace: &launch_workspace::LaunchWorkspace,
    base: CUdeviceptr,
    layout: &TempLayout,
    passes: u32,
) -> Result<()> {
    let dev = &engine.device;
    let n = c.n;
    let key_bytes = c.spec.key.size() as u64;
    let value_bytes = c.spec.value_bytes as u64;
    let counts = base + layout.counts;
    cu::zero_async(counts, layout.zeroed as usize, raw_stream)?;
    let call = dev.calls.record(
        CallLabel::Builtin {
            op: "sort",
            input: c.spec.key.describe(),
            output: c.spec.key.describe(),
        },
        n,
        raw_stream as usize,
    );
    let mut params = SortParams {
        keys_in: a.keys_in.addr(),
        histograms: counts,
        workspace: workspace.ptr,
        report: dev.faults.device,
        n: n as i64,
        status_capacity: workspace.slots as i64,
        begin_bit: c.begin,
        end_bit: c.end,
        flags: if a.keys_in.addr().is_multiple_of(16) {
            SORT_FLAG_VECTOR_IN
        } else {
            0
        },
        call,
        ..SortParams::default()
    };
    kernel
        .histogram
        .launch(histogram_grid(n, kernel.histogram.resident_blocks), raw_stream, &params)?;

    // Where each pass reads and writes: the last pass writes the output, the ones before
    // alternate with the second buffer, unless the first pass would then write over its
    // own input (in place, an odd number of passes): then the passes start in the second
    // buffer and a copy ends the sort.
    let keys_out = a.keys_out.addr();
    let values_out = a.values_out.map_or(0, |v| v.addr());
    let second_keys = base + layout.keys;
    let second_values = base + layout.values;
    let in_place =
        keys_out == a.keys_in.addr() || (values_out != 0 && a.values_in.is_some_and(|v| v.addr() == values_out));
    let copy_after = in_place && passes % 2 == 1;
    let to_output = |p: u32| {
        if copy_after {
            p % 2 == 1
        } else {
            (passes - 1 - p).is_multiple_of(2)
        }
    };
    let (mut keys_from, mut values_from) = (a.keys_in.addr(), a.values_in.map_or(0, |v| v.addr()));
    let portion = portion_elems(c.spec.key, c.spec.value_bytes);
    let tile = kernels::tile_elems(c.spec.key, c.spec.value_bytes);
    let portions = n.div_ceil(portion);
    for p in 0..passes {
        let (keys_to, values_to) = if to_output(p) {
            (keys_out, values_out)
        } else {
            (second_keys, second_values)
        };
        let begin_bit = c.begin + 8 * p;
        for j in 0..portions {
            let first = j * portion;
            let len = portion.min(n - first);
            let carry_in = base + layout.carries + (p as u64 * (portions + 1) + j) * 256 * 8;
            params = SortParams {
                keys_in: keys_from + first * key_bytes,
                keys_out: keys_to,
                values_in: if values_from == 0 {
                    0
                } else {
                    values_from + first * value_bytes
                },
                values_out: values_to,
                histograms: counts + p as u64 * 256 * 8,
                carry_in,
                carry_out: if j + 1 < portions { carry_in + 256 * 8 } else { 0 },
                n: len as i64,
                index_base: first,
                begin_bit,
                end_bit: (begin_bit + 8).min(c.end),
                flags: (if c.indices && p == 0 { SORT_FLAG_INDICES } else { 0 })
                    | (if p > 0 { SORT_FLAG_RANKED_IN } else { 0 })
                    | (if p + 1 < passes { SORT_FLAG_RANKED_OUT } else { 0 }),
                ..params
            };
            kernel.pass.launch(len.div_ceil(tile) as u32, raw_stream, &params)?;
        }
        keys_from = keys_to;
        values_from = values_to;
    }
    if copy_after {
        cu::copy_async(keys_out, second_keys, (n * key_bytes) as usize, raw_stream)?;
        if values_out != 0 {
            cu::copy_async(values_out, second_values, (n * value_bytes) as usize, raw_stream)?;
        }
    }
    Ok(())
}
