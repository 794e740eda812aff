//! Tile shapes and look-back tuning: data per architecture and element size, kept apart
//! from the algorithms (which take them as template parameters).

use crate::types::DType;

/// A kernel's tile shape and look-back backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    pub threads: u32,
    /// Items per thread (one matrix row); a multiple of 16 bytes' worth of both types.
    pub items: u32,
    /// Status slots each lane of the look-back warp polls at once: one round trip to L2
    /// covers 32 times this many predecessors.
    pub lookback_slots_per_lane: u32,
    /// Look-back polls before the waiting warp starts sleeping between polls.
    pub spin_before_sleep: u32,
    /// Sleep between polls, in nanoseconds.
    pub sleep_ns: u32,
    /// Blocks per SM the compiler must fit (the second `__launch_bounds__` argument),
    /// which caps registers per thread; 0 leaves the compiler free.
    pub min_blocks_per_sm: u32,
    /// Launch only as many single-pass blocks as fit on the device at once (each loops
    /// over tiles); otherwise one block per tile.
    pub persistent: bool,
    /// Experiments only: every tile takes the initial value as its prefix (wrong
    /// results), to measure the tile pipeline without the look-back.
    pub skip_lookback: bool,
    /// Tile buffers of the bulk-copy single pass (kernels/device/single_pass_bulk.cuh:
    /// sm_90+, input type = output type); 0: no bulk-copy kernel.
    pub bulk_buffers: u32,
    /// Items per thread of the bulk-copy kernel's tiles (at least `items`, so a workspace
    /// sized for the register-staged kernel's tiles holds the bulk kernel's too).
    pub bulk_items: u32,
    /// Blocks per SM the bulk-copy kernel is built for (its shared memory sets the rest).
    pub bulk_min_blocks_per_sm: u32,
    /// Scans of at least this many tiles take the bulk-copy kernel when there is one.
    pub bulk_min_tiles: u64,
    /// Threads of the one-wave kernel (kernels/device/single_pass_wave.cuh: plain scans
    /// whose tiles of `wave_threads x items` all fit on the device at once); 0: none.
    pub wave_threads: u32,
    /// Look-back slots per lane of the one-wave kernel.
    pub wave_lookback_slots_per_lane: u32,
    /// Blocks per SM the one-wave kernel is built for.
    pub wave_min_blocks_per_sm: u32,
}

impl TileShape {
    pub fn tile_elems(&self) -> u64 {
        (self.threads * self.items) as u64
    }

    /// Block size of the single-pass kernel: the data threads plus its look-back warp.
    pub fn single_pass_block(&self) -> u32 {
        self.threads + 32
    }

    /// Elements per tile of the one-wave kernel.
    pub fn wave_tile_elems(&self) -> u64 {
        (self.wave_threads * self.items) as u64
    }

    /// Elements per tile of the bulk-copy kernel.
    pub fn bulk_tile_elems(&self) -> u64 {
        (self.threads * self.bulk_items) as u64
    }

    /// Dynamic shared memory of the bulk-copy kernel: its tile buffers of `acc_size`-byte
    /// accumulators.
    pub fn bulk_shared_bytes(&self, acc_size: usize) -> u32 {
        self.bulk_buffers * self.threads * self.bulk_items * acc_size as u32
    }
}

/// The tile shape for a specialisation on a device of compute capability `arch` (e.g. 90).
///
/// Measured on an H100 (inclusive sum, bench_compare --variant, see docs/PERFORMANCE.md):
/// 256 data threads x 16 items (16 KiB tiles of u32) plus the look-back warp, with the
/// register cap for 4 blocks per SM (56 registers, no spills), ran at 0.88 of memcpy at
/// 2^28 and at 1.00 with the look-back skipped (cap 3: 0.84; 128 x 16 with 8 blocks per
/// SM: 0.85). One look-back slot per lane beat wider windows (2: 0.86, 4: 0.84): wider
/// polls cost L2 traffic and the wait is for late predecessors, not walk depth. 8-byte
/// values: 256 x 8 at 0.91 (K = 2: 0.89).
///
/// On sm_90+ scans of at least `bulk_min_tiles` tiles take the bulk-copy kernel: four
/// buffers of 256 rows of 112 bytes (28 KiB tiles: 7168 u32, 3584 u64) at two blocks per
/// SM ran u32 at 0.96 of memcpy at 2^28 and u64 at 0.97-0.98 (16 KiB tiles at three
/// blocks per SM: 0.92 / 0.94; 20 and 24 KiB: 0.93 / 0.94; three buffers of any size
/// were slower, 32 KiB ones far slower). Larger tiles mean fewer look-backs per byte: the
/// look-back warp was busy 86% of the time with 16 KiB tiles, and its data threads
/// waited for prefixes a quarter of theirs. Segmented scans keep their 16-item rows (the
/// row heads come in 8- or 16-byte flag vectors), with 16 KiB buffers at three blocks per
/// SM. Other architectures use the same shapes until measured.
pub(crate) fn tile_shape(arch: i32, input: DType, output: DType, segmented: bool) -> TileShape {
    if let Some(shape) = *OVERRIDE {
        let bulk_items = if segmented { shape.items } else { shape.bulk_items };
        let bulk_min_tiles = bulk_min_tiles(segmented);
        return TileShape {
            bulk_items,
            bulk_min_tiles,
            ..shape
        };
    }

    // 64 bytes of accumulator per thread, but at least one 16-byte vector of the input.
    let items = (64 / output.size() as u32).max(16 / input.size() as u32);
    let row_bytes = items * output.size() as u32;
    let shape = TileShape {
        // The single-pass kernel keeps two tiles in static shared memory (48 KiB at most).
        threads: if row_bytes <= 64 { 256 } else { 128 },
        items,
        lookback_slots_per_lane: 1,
        spin_before_sleep: 8,
        sleep_ns: 32,
        min_blocks_per_sm: if row_bytes <= 64 { 4 } else { 0 },
        persistent: true,
        skip_lookback: false,
        // Bulk copies exist from sm_90 on (which type pairs may use them: Specialization).
        bulk_buffers: if arch >= 90 { 4 } else { 0 },
        bulk_items: if segmented {
            items
        } else {
            (BULK_ROW_BYTES / output.size() as u32).max(items)
        },
        bulk_min_blocks_per_sm: if segmented { 3 } else { 2 },
        bulk_min_tiles: bulk_min_tiles(segmented),
        wave_threads: if segmented { 0 } else { 512 },
        wave_lookback_slots_per_lane: 4,
        wave_min_blocks_per_sm: 2,
    };
    match &*WAVE_OVERRIDE {
        Some(fields) if !segmented => with_wave_override(shape, fields),
        _ => shape,
    }
}

/// The tile shape for small plain scans: rows of half the length (2048-element tiles for
/// 4-byte types), so that a scan of at most one look-back window of such tiles runs with
/// twice the blocks and no walk beyond its first window. None where the rows cannot be
/// shorter (one 16-byte vector of the input) or for segmented scans (whose row heads come
/// in 8- or 16-byte flag vectors).
///
/// Measured on an H100 at n = 2^16 u32 (`build/exp/run36.sh`): per scan in a replayed
/// graph 2.97 µs against 3.54 with 4096-element tiles, back to back 4.0-4.2 against
/// 4.75-4.85 µs (256 x 4 items: 3.26 µs in the graph; 128 x 8: 3.23; 128 x 16: 2.95). At
/// 2^20 smaller tiles were no faster (docs/PERFORMANCE.md, fifth session).
pub(crate) fn small_scan_shape(regular: &TileShape, input: DType, segmented: bool) -> Option<TileShape> {
    if segmented || OVERRIDE.is_some() {
        return None;
    }
    let items = (regular.items / 2).max(16 / input.size() as u32);
    (items < regular.items).then_some(TileShape {
        items,
        bulk_buffers: 0,
        wave_threads: 0,
        ..*regular
    })
}

/// Whether a scan of `n` elements takes the small shape: it spans more than one regular
/// tile (one tile takes the single-block path in either shape) and at most one look-back
/// window (32 tiles) of small ones.
pub(crate) fn takes_small_shape(regular: &TileShape, small: &TileShape, n: u64) -> bool {
    n > regular.tile_elems() && n <= 32 * small.tile_elems()
}

/// Row bytes of the bulk-copy kernel's tiles (plain scans): a multiple of 16 bytes, and
/// of every element size, that keeps a tile at least as long as the register-staged
/// kernel's (so one workspace serves both).
const BULK_ROW_BYTES: u32 = 112;

/// The smallest scans (in tiles of the register-staged kernel) that take the bulk-copy
/// kernel. The register-staged kernel loads its first tile before its ticket returns,
/// which wins for small scans. Measured on an H100: with 28 KiB bulk tiles the bulk
/// kernel was faster from 512 tiles on (u64 at 2^20: 13.6-14.5 against 14.5-16.3 µs;
/// u32 at 2^22: 17.8-18.3 against 18.5-22.3 µs; about even for u32 at 2^20, slower at
/// 2^16). Segmented scans, in 16 KiB bulk tiles, from 4096 (the sixth session's measure).
/// Tests set `SCANRT_BULK_MIN_TILES=2` to run the bulk-copy kernel at every multi-tile size.
fn bulk_min_tiles(segmented: bool) -> u64 {
    static FROM_ENV: once_cell::sync::Lazy<Option<u64>> =
        once_cell::sync::Lazy::new(|| std::env::var("SCANRT_BULK_MIN_TILES").ok()?.parse().ok());
    FROM_ENV.unwrap_or(if segmented { 4096 } else { 512 })
}

/// The most tiles a plain scan may have to take the one-wave kernel, whose grid holds
/// one block per tile: as many as are resident at once (`resident_blocks`). Measured on
/// an H100 (u32, 512 x 16 tiles, 4 look-back slots per lane; docs/PERFORMANCE.md, ninth
/// session): at 2^20 the device time fell from 8.6 to 6.5-6.6 µs; 256- and 1024-thread
/// tiles and 2 or 8 slots per lane were slower there. Tests set
/// `SCANRT_WAVE_MAX_TILES` to run it at every size (it stays correct beyond one wave,
/// since tickets order the tiles) or to 0 to keep it out.
pub(crate) fn wave_max_tiles(resident_blocks: u32) -> u64 {
    static FROM_ENV: once_cell::sync::Lazy<Option<u64>> =
        once_cell::sync::Lazy::new(|| std::env::var("SCANRT_WAVE_MAX_TILES").ok()?.parse().ok());
    FROM_ENV.unwrap_or(resident_blocks as u64)
}

/// For tuning experiments only: `SCANRT_WAVE_OVERRIDE=threads:slots_per_lane:min_blocks[:spin:sleep_ns]`
/// replaces the one-wave kernel's shape in every plain specialisation (and, where given,
/// the look-back backoff of all its kernels).
static WAVE_OVERRIDE: once_cell::sync::Lazy<Option<Vec<u32>>> = once_cell::sync::Lazy::new(|| {
    let v = std::env::var("SCANRT_WAVE_OVERRIDE").ok()?;
    v.split(':').map(|x| x.parse().ok()).collect()
});

fn with_wave_override(shape: TileShape, fields: &[u32]) -> TileShape {
    let field = |i: usize, default: u32| fields.get(i).copied().unwrap_or(default);
    TileShape {
        wave_threads: field(0, shape.wave_threads),
        wave_lookback_slots_per_lane: field(1, shape.wave_lookback_slots_per_lane),
        wave_min_blocks_per_sm: field(2, shape.wave_min_blocks_per_sm),
        spin_before_sleep: field(3, shape.spin_before_sleep),
        sleep_ns: field(4, shape.sleep_ns),
        ..shape
    }
}

/// For tuning experiments only:
/// `SCANRT_TILE_OVERRIDE=threads:items:lookback_slots_per_lane:spin:sleep_ns:min_blocks:persistent:skip_lookback[:bulk_buffers[:bulk_items:bulk_min_blocks]]`
/// replaces the table for every specialisation (items must suit every type pair used).
static OVERRIDE: once_cell::sync::Lazy<Option<TileShape>> = once_cell::sync::Lazy::new(|| {
    let v: Vec<u32> = std::env::var("SCANRT_TILE_OVERRIDE")
        .ok()?
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (fields, bulk) = v.split_at(v.len().min(8));
    match *fields {
        [threads, items, lookback_slots_per_lane, spin_before_sleep, sleep_ns, min_blocks_per_sm, persistent, skip] => {
            Some(TileShape {
                threads,
                items,
                lookback_slots_per_lane,
                spin_before_sleep,
                sleep_ns,
                min_blocks_per_sm,
                persistent: persistent != 0,
                skip_lookback: skip != 0,
                bulk_buffers: bulk.first().copied().unwrap_or(0),
                bulk_items: bulk.get(1).copied().unwrap_or(items).max(items),
                bulk_min_blocks_per_sm: bulk.get(2).copied().unwrap_or(min_blocks_per_sm),
                bulk_min_tiles: bulk_min_tiles(false), // per specialisation in tile_shape
                wave_threads: 0,
                wave_lookback_slots_per_lane: 1,
                wave_min_blocks_per_sm: 0,
            })
        }
        _ => None,
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_and_small_shapes_keep_their_invariants() {
        for input in DType::ALL {
            for output in DType::ALL {
                for segmented in [false, true] {
                    let s = tile_shape(90, input, output, segmented);
                    // One workspace, sized by the register-staged kernel's tiles, serves both.
                    assert!(s.bulk_items >= s.items, "{input:?} -> {output:?}: {s:?}");
                    // Bulk-copy rows are read as 16-byte vectors (when input = output).
                    assert_eq!(s.bulk_items * output.size() as u32 % 16, 0, "{input:?} -> {output:?}");
                    if segmented {
                        assert_eq!(s.bulk_items, s.items, "segment heads come per 8 or 16 items");
                        assert_eq!(s.wave_threads, 0, "the one-wave kernel scans plain tiles only");
                    } else {
                        // Whole warps, and tiles no smaller than the register-staged kernel's.
                        assert!(s.wave_threads % 32 == 0 && s.wave_threads >= s.threads, "{s:?}");
                    }
                }
            }
        }
        // Small-scan shapes: shorter rows that still hold whole 16-byte vectors of both types.
        for input in DType::ALL {
            for output in DType::ALL {
                let regular = tile_shape(90, input, output, false);
                if let Some(small) = small_scan_shape(&regular, input, false) {
                    assert!(small.items < regular.items && small.bulk_buffers == 0);
                    assert_eq!(small.items * input.size() as u32 % 16, 0, "{input:?} -> {output:?}");
                    assert_eq!(small.items * output.size() as u32 % 16, 0, "{input:?} -> {output:?}");
                }
                assert!(small_scan_shape(&regular, input, true).is_none());
            }
        }
        let u32_small = small_scan_shape(&tile_shape(90, DType::U32, DType::U32, false), DType::U32, false).unwrap();
        assert_eq!(u32_small.tile_elems(), 2048);
        let u32_regular = tile_shape(90, DType::U32, DType::U32, false);
        assert!(!takes_small_shape(&u32_regular, &u32_small, 4096)); // one regular tile
        assert!(takes_small_shape(&u32_regular, &u32_small, 4097));
        assert!(takes_small_shape(&u32_regular, &u32_small, 1 << 16));
        assert!(!takes_small_shape(&u32_regular, &u32_small, (1 << 16) + 1));
        let u32_shape = tile_shape(90, DType::U32, DType::U32, false);
        assert_eq!(u32_shape.bulk_tile_elems(), 7168);
        assert_eq!(u32_shape.wave_tile_elems(), 8192); // tests/gpu.rs wave_tile_for
        assert_eq!(u32_shape.bulk_shared_bytes(4), 4 * 28 * 1024);
    }
}
