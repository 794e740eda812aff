//! Radix sorts against a sequential stable sort, shared by the host and GPU suites: every
//! key type, both orders, keys only, values of every width, U32 and U64 indices (an
//! argsort), bit ranges, in place, scanrt's or the caller's temporary memory, and data
//! with few distinct keys (stability), all equal, random bits and the special floats
//! (NaNs of both signs and several payloads, signed zeros, infinities, subnormals), inputs
//! off the kernels' 16-byte vectors (starting a few elements into their buffers), at the
//! sizes the caller names (the kernels' tile boundaries).

use std::cmp::Ordering;

use scanrt::{ArrayView, Buffer, Context, DType, SortArrays, SortDesc, SortOrder, Stream};

use super::select::{download_bits, download_past_lead, upload_bits, view_past_lead};
use super::{sweep_each_type, Rng};

/// What travels with the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    None,
    /// Values of this type.
    Of(DType),
    /// The keys' input indices, of this type (U32 or U64).
    Indices(DType),
}

/// How the keys are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Uniform random bits.
    Random,
    /// Four distinct keys (long runs of equal keys: stability).
    Few,
    /// One key.
    Equal,
    /// Floats: NaNs, zeros, infinities, subnormals, ordinary numbers; integers: the type's
    /// extremes and zero.
    Special,
}

#[derive(Debug, Clone)]
pub struct SortCase {
    pub key: DType,
    pub order: SortOrder,
    pub values: Values,
    /// A bit range narrower than the key (integer keys only here).
    pub bits: Option<(u32, u32)>,
    pub n: usize,
    pub data: Data,
    pub in_place: bool,
    /// Pass temporary memory of `Context::sort_temp_bytes` (else scanrt's pool).
    pub caller_temp: bool,
    /// Elements before the first one: the inputs (and, in place, the outputs) start
    /// `lead` elements into their buffers.
    pub lead: usize,
}

fn width_mask(dtype: DType) -> u64 {
    if dtype.size() == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * dtype.size())) - 1
    }
}

fn special_bits(rng: &mut Rng, dtype: DType) -> u64 {
    match dtype {
        DType::F32 => {
            let all = [
                0x7fc0_0000u64, // NaN
                0xffc0_0000,    // -NaN
                0x7f80_0001,    // NaN, smallest payload
                0xffff_ffff,    // -NaN, largest payload
                0x0000_0000,    // +0
                0x8000_0000,    // -0
                0x7f80_0000,    // +inf
                0xff80_0000,    // -inf
                0x0000_0001,    // smallest subnormal
                0x8000_0001,
                (1.5f32).to_bits() as u64,
                (-1.5f32).to_bits() as u64,
                (f32::MAX).to_bits() as u64,
                (f32::MIN).to_bits() as u64,
            ];
            all[rng.below(all.len() as u64) as usize]
        }
        DType::F64 => {
            let all = [
                0x7ff8_0000_0000_0000u64,
                0xfff8_0000_0000_0000,
                0x7ff0_0000_0000_0001,
                0xffff_ffff_ffff_ffff,
                0,
                0x8000_0000_0000_0000,
                0x7ff0_0000_0000_0000,
                0xfff0_0000_0000_0000,
                1,
                0x8000_0000_0000_0001,
                (1.5f64).to_bits(),
                (-1.5f64).to_bits(),
            ];
            all[rng.below(all.len() as u64) as usize]
        }
        DType::F16 | DType::BF16 => {
            let f16 = dtype == DType::F16;
            let all = [
                if f16 { 0x7e00u64 } else { 0x7fc0 }, // NaN
                if f16 { 0xfe00 } else { 0xffc0 },    // -NaN
                if f16 { 0x7c01 } else { 0x7f81 },    // NaN, smallest payload
                0xffff,                               // -NaN, largest payload
                0x0000,                               // +0
                0x8000,                               // -0
                if f16 { 0x7c00 } else { 0x7f80 },    // +inf
                if f16 { 0xfc00 } else { 0xff80 },    // -inf
                0x0001,                               // smallest subnormal
                0x8001,
                if f16 { 0x3e00 } else { 0x3fc0 }, // 1.5
                if f16 { 0xbe00 } else { 0xbfc0 }, // -1.5
                if f16 { 0x7bff } else { 0x7f7f }, // largest finite
                if f16 { 0xfbff } else { 0xff7f }, // lowest finite
            ];
            all[rng.below(all.len() as u64) as usize]
        }
        _ => {
            let w = 8 * dtype.size() as u32;
            let all = [0, 1, width_mask(dtype), 1u64 << (w - 1), (1u64 << (w - 1)) - 1];
            all[rng.below(all.len() as u64) as usize]
        }
    }
}

fn draw_keys(rng: &mut Rng, c: &SortCase) -> Vec<u64> {
    let mask = width_mask(c.key);
    let few: Vec<u64> = (0..4).map(|_| rng.next_u64() & mask).collect();
    let equal = rng.next_u64() & mask;
    (0..c.n)
        .map(|_| match c.data {
            Data::Random => rng.next_u64() & mask,
            Data::Few => few[rng.below(4) as usize],
            Data::Equal => equal,
            Data::Special => special_bits(rng, c.key),
        })
        .collect()
}

/// The keys' order by its definition: integers as numbers (signed ones sign-extended);
/// floats by value with -0 before +0, then NaNs, positive ones before negative ones, each
/// by payload; with a bit range, the range of the ordered word (integers: the sign bit
/// flipped for signed types).
fn compare(dtype: DType, bits: Option<(u32, u32)>, a: u64, b: u64) -> Ordering {
    let w = 8 * dtype.size() as u32;
    let signed = matches!(dtype, DType::I8 | DType::I16 | DType::I32 | DType::I64);
    if let Some((begin, end)) = bits {
        let flip = if signed { 1u64 << (w - 1) } else { 0 };
        let range = |x: u64| {
            if end == begin {
                0
            } else {
                ((x ^ flip) >> begin) & (u64::MAX >> (64 - (end - begin)))
            }
        };
        return range(a).cmp(&range(b));
    }
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            let value = |bits: u64| match dtype {
                DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
                DType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
                DType::F32 => f32::from_bits(bits as u32) as f64,
                _ => f64::from_bits(bits),
            };
            let (x, y) = (value(a), value(b));
            let sign = 1u64 << (w - 1);
            match (x.is_nan(), y.is_nan()) {
                (false, false) => x.total_cmp(&y),
                (false, true) => Ordering::Less,
                (true, false) => Ordering::Greater,
                (true, true) => (a & sign, a).cmp(&(b & sign, b)),
            }
        }
        _ if signed => {
            let extend = |x: u64| ((x << (64 - w)) as i64) >> (64 - w);
            extend(a).cmp(&extend(b))
        }
        _ => a.cmp(&b),
    }
}

/// Runs one case against the sequential stable sort.
pub fn run_sort_case(ctx: &Context, stream: &Stream, rng: &mut Rng, c: &SortCase) -> Result<(), String> {
    let keys = draw_keys(rng, c);
    let value_type = match c.values {
        Values::None => None,
        Values::Of(t) | Values::Indices(t) => Some(t),
    };
    let values: Vec<u64> = match c.values {
        Values::Of(t) => (0..c.n).map(|_| rng.next_u64() & width_mask(t)).collect(),
        _ => Vec::new(),
    };
    // The reference: indices in sorted order, equal keys in input order.
    let mut order: Vec<usize> = (0..c.n).collect();
    order.sort_by(|&i, &j| {
        let o = compare(c.key, c.bits, keys[i], keys[j]);
        if c.order == SortOrder::Descending {
            o.reverse()
        } else {
            o
        }
    });

    let e = |e: scanrt::Error| e.to_string();
    // The input buffers hold `lead` elements of another value before the case's.
    let lead_bits = |t: DType| vec![0x5A5A_5A5A_5A5A_5A5A & width_mask(t); c.lead];
    let keys_in = upload_bits(ctx, stream, c.key, &[lead_bits(c.key), keys.clone()].concat()).map_err(e)?;
    let mut keys_out = Buffer::new(ctx, c.key, c.n as u64).map_err(e)?;
    let values_in = match c.values {
        Values::Of(t) => Some(upload_bits(ctx, stream, t, &[lead_bits(t), values.clone()].concat()).map_err(e)?),
        _ => None,
    };
    // SAFETY (each view_past_lead): the input buffers hold `lead` elements before the
    // case's `n`, and outlive the call and the downloads that wait for it.
    let n = [c.n as u64];
    let download_input = |b: &Buffer| download_past_lead(b, stream, &lead_bits(b.dtype()), c.n);
    let mut values_out = match value_type {
        Some(t) => Some(Buffer::new(ctx, t, c.n as u64).map_err(e)?),
        None => None,
    };
    let mut temp = if c.caller_temp {
        Some(
            Buffer::new(
                ctx,
                DType::U8,
                ctx.sort_temp_bytes(c.n as u64, c.key, value_type).max(1),
            )
            .map_err(e)?,
        )
    } else {
        None
    };
    let desc = SortDesc {
        order: c.order,
        begin_bit: c.bits.map_or(0, |b| b.0),
        end_bit: c.bits.map(|b| b.1),
    };
    // In place: the outputs are the inputs' views.
    {
        let (keys_in_view, keys_out_view) = if c.in_place {
            let v = unsafe { view_past_lead(&keys_in, c.lead, &n) }.map_err(e)?;
            (v, v)
        } else {
            (
                unsafe { view_past_lead(&keys_in, c.lead, &n) }.map_err(e)?.read_only(),
                ArrayView::of_buffer_mut(&mut keys_out),
            )
        };
        let (values_in_view, values_out_view) = match (&values_in, c.in_place) {
            (Some(v), true) => {
                let v = unsafe { view_past_lead(v, c.lead, &n) }.map_err(e)?;
                (Some(v), Some(v))
            }
            (Some(v), false) => (
                Some(unsafe { view_past_lead(v, c.lead, &n) }.map_err(e)?.read_only()),
                values_out.as_mut().map(ArrayView::of_buffer_mut),
            ),
            (None, _) => (None, values_out.as_mut().map(ArrayView::of_buffer_mut)),
        };
        let arrays = SortArrays {
            keys_in: keys_in_view,
            keys_out: keys_out_view,
            values_in: values_in_view,
            values_out: values_out_view,
            temp: temp.as_mut().map(ArrayView::of_buffer_mut),
        };
        ctx.sort(stream, &arrays, &desc).map_err(e)?;
    }
    let got_keys = if c.in_place {
        download_input(&keys_in)?
    } else {
        download_bits(&keys_out, stream, c.n).map_err(e)?
    };
    for (slot, &i) in order.iter().enumerate() {
        if got_keys[slot] != keys[i] {
            return Err(format!(
                "key {slot}: got {:#x}, expected {:#x} (input {i})",
                got_keys[slot], keys[i]
            ));
        }
    }
    let got_values = match (c.values, c.in_place) {
        (Values::None, _) => return Ok(()),
        (Values::Of(_), true) => download_input(values_in.as_ref().unwrap())?,
        _ => download_bits(values_out.as_ref().unwrap(), stream, c.n).map_err(e)?,
    };
    for (slot, &i) in order.iter().enumerate() {
        let want = match c.values {
            Values::Indices(_) => i as u64,
            _ => values[i],
        };
        if got_values[slot] != want {
            return Err(format!(
                "value {slot}: got {:#x}, expected {want:#x} (input {i})",
                got_values[slot]
            ));
        }
    }
    Ok(())
}

/// Every case over `sizes`, each key type on a thread and stream of its own; returns the
/// failures, each naming its case and seed.
pub fn sweep_sorts(ctx: &Context, seed: u64, sizes: &[usize]) -> Vec<String> {
    let (cases, failures) = sweep_each_type(ctx, seed, |key, stream, rng| {
        let mut failures = Vec::new();
        let mut cases = 0;
        let float = key.is_float();
        for &n in sizes {
            for order in [SortOrder::Ascending, SortOrder::Descending] {
                let value_forms = [
                    Values::None,
                    Values::Of(DType::U32),
                    Values::Of([DType::U8, DType::I16, DType::F64, DType::U64][rng.below(4) as usize]),
                    Values::Indices(if rng.below(2) == 0 { DType::U32 } else { DType::U64 }),
                ];
                for values in value_forms {
                    let data = [Data::Random, Data::Few, Data::Equal, Data::Special][rng.below(4) as usize];
                    let width = 8 * key.size() as u32;
                    let bits = (!float && rng.below(4) == 0).then(|| {
                        let begin = rng.below(width as u64) as u32;
                        (begin, begin + rng.below((width - begin + 1) as u64) as u32)
                    });
                    let c = SortCase {
                        key,
                        order,
                        values,
                        bits,
                        n,
                        data,
                        in_place: rng.below(4) == 0,
                        caller_temp: rng.below(4) == 0,
                        lead: [0, 0, 1, 3][rng.below(4) as usize],
                    };
                    let case_seed = rng.next_u64();
                    cases += 1;
                    if let Err(msg) = run_sort_case(ctx, stream, &mut Rng(case_seed), &c) {
                        failures.push(format!("{c:?} (case seed {case_seed:#x}): {msg}"));
                    }
                }
            }
        }
        (cases, failures)
    });
    eprintln!("{cases} sort cases, seed {seed:#x}");
    failures
}
