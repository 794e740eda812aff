//! Segments of randomized cases: where they start, and the start flags, bit words, keys
//! or offsets a segmented scan reads for them; a scan of one type on them.

use scanrt::{Buffer, Context, DType, Scalar, ScanDesc, Segments, Stream};

use super::Rng;

/// How the segments of a randomized case are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentPattern {
    /// Each element starts a segment with probability 1/`mean_len`.
    Random { mean_len: u64 },
    /// No element starts a segment (one segment over everything).
    NoneSet,
    /// Every element starts a segment.
    AllSet,
    /// Segments of exactly `len` elements, starting at `offset` (tile-boundary cases).
    Every { len: u64, offset: u64 },
}

/// Start flags for `n` elements.
pub fn segment_starts(rng: &mut Rng, pattern: SegmentPattern, n: usize) -> Vec<bool> {
    (0..n as u64)
        .map(|p| match pattern {
            SegmentPattern::Random { mean_len } => rng.below(mean_len) == 0,
            SegmentPattern::NoneSet => false,
            SegmentPattern::AllSet => true,
            SegmentPattern::Every { len, offset } => p >= offset && (p - offset) % len == 0,
        })
        .collect()
}

/// The bytes a segmented scan reads for start flags `starts` in the form `kind` asks
/// for: byte flags (nonzero values other than 1 too), packed bit words, or keys whose
/// runs change exactly at the starts (as little-endian bytes of the key type).
pub fn encode_segments(rng: &mut Rng, kind: Segments, starts: &[bool]) -> Vec<u8> {
    match kind {
        Segments::None | Segments::Rows(_) => Vec::new(),
        Segments::ByteFlags => starts
            .iter()
            .map(|&s| if s { 1 + rng.below(255) as u8 } else { 0 })
            .collect(),
        Segments::BitFlags => {
            let flags: Vec<u8> = starts.iter().map(|&s| s as u8).collect();
            pack_bits(&flags).iter().flat_map(|w| w.to_le_bytes()).collect()
        }
        Segments::Offsets { dtype, .. } => encode_offsets(rng, dtype, starts)
            .iter()
            .flat_map(|&o| o.to_le_bytes()[..dtype.size()].to_vec())
            .collect(),
        Segments::Keys(k) => {
            let mut key = rng.next_u64();
            let mut bytes = Vec::with_capacity(starts.len() * k.size());
            for &s in starts {
                if s {
                    // A different key; for 8-byte keys vary the high half too now and then.
                    key = key.wrapping_add(1 + rng.below(3) * (1 << 32) + rng.below(5));
                }
                match k {
                    DType::U32 | DType::I32 => bytes.extend((key as u32).to_le_bytes()),
                    _ => bytes.extend(key.to_le_bytes()),
                }
            }
            bytes
        }
    }
}

/// The CSR offsets of `starts` (0, each start, n), with what a real array may hold beside
/// them now and then: repeated offsets (empty segments), and, after the last, offsets
/// that start nothing (n and past it, and -1 for signed types).
pub fn encode_offsets(rng: &mut Rng, dtype: DType, starts: &[bool]) -> Vec<i64> {
    let n = starts.len() as i64;
    let mut offsets = vec![0i64];
    for (p, &s) in starts.iter().enumerate().skip(1) {
        if s {
            offsets.push(p as i64);
            if rng.below(8) == 0 {
                offsets.push(p as i64); // an empty segment
            }
        }
    }
    offsets.push(n);
    if rng.below(2) == 0 {
        offsets.extend([n, n + 1 + rng.below(1000) as i64]);
        if matches!(dtype, DType::I32 | DType::I64) {
            offsets.push(-1);
        }
    }
    offsets
}

/// The segments a case runs with, given its encoded data: offsets count their entries.
pub fn with_count(segments: Segments, data: &[u8]) -> Segments {
    match segments {
        Segments::Offsets { dtype, .. } => Segments::Offsets {
            dtype,
            count: (data.len() / dtype.size()) as u64,
        },
        other => other,
    }
}

/// Byte flags packed 32 to a word (bit i of word w = element 32w + i).
pub fn pack_bits(flags: &[u8]) -> Vec<u32> {
    let mut words = vec![0u32; flags.len().div_ceil(32)];
    for (p, &f) in flags.iter().enumerate() {
        if f != 0 {
            words[p / 32] |= 1 << (p % 32);
        }
    }
    words
}

/// Scans `input` as `desc` says into a buffer of its own type (or in place), segmented by
/// byte flags at `starts` where `desc.segments` asks for byte flags; the result, read back.
pub fn scan_one_type<T: Scalar + Copy>(
    ctx: &Context,
    stream: &Stream,
    rng: &mut Rng,
    input: &[T],
    starts: Option<&[bool]>,
    desc: &ScanDesc,
    in_place: bool,
) -> Result<Vec<T>, String> {
    let e = |e: scanrt::Error| format!("{}: {}", e.status.c_name(), e.message);
    let in_buf = Buffer::from_slice(ctx, stream, input).map_err(e)?;
    let out_buf = if in_place {
        None
    } else {
        Some(Buffer::new(ctx, T::DTYPE, input.len() as u64).map_err(e)?)
    };
    let out = out_buf.as_ref().unwrap_or(&in_buf);
    match (desc.segments, starts) {
        (Segments::ByteFlags, Some(starts)) => {
            let flags = encode_segments(rng, Segments::ByteFlags, starts);
            let seg = Buffer::from_slice(ctx, stream, &flags).map_err(e)?;
            ctx.scan_segmented(stream, &in_buf, &seg, out, desc).map_err(e)?;
        }
        _ => {
            ctx.scan(stream, &in_buf, out, desc).map_err(e)?;
        }
    }
    out.download(stream, input.len()).map_err(e)
}
