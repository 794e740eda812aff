//! Tuning data: one row per GPU architecture, each saying which benchmark chose it. The
//! scan kernels take what a row gives them as template parameters (src/scan/kernels.rs);
//! the plan picks a kernel by the thresholds here.
//!
//! Measured rows are re-measured with `bench/run_gpu_bench.sh` (report: ratios against
//! memcpy and CUB in the same run) and, for tile shapes, `bench_compare --variant` under
//! the `experiments` feature, whose `SCANRT_TILE_OVERRIDE` / `SCANRT_WAVE_OVERRIDE`
//! replace a row's shapes without rebuilding (docs/PERFORMANCE.md, Tuning).

use crate::types::DType;

/// The tuning of one architecture family.
#[derive(Debug)]
struct TuningRow {
    /// The oldest compute capability (major * 10 + minor) the row serves; a device takes
    /// the newest row at or below its own.
    min_arch: i32,
    /// Which benchmark chose the row's values.
    provenance: &'static str,
    /// Accumulator bytes per thread of the register-staged kernel's rows (at least one
    /// 16-byte vector of the input).
    row_accumulator_bytes: u32,
    /// Look-back slots each lane polls at once in the persistent kernels.
    lookback_slots_per_lane: u32,
    /// Polls before a waiting look-back sleeps, and the sleep.
    spin_before_sleep: u32,
    sleep_ns: u32,
    /// Blocks per SM the register-staged kernel is built for (rows of 64 bytes or less).
    min_blocks_per_sm: u32,
    /// Bulk-copy kernel: tile buffers (0: none; bulk copies need sm_90), row bytes of
    /// plain scans, blocks per SM (plain / segmented), smallest scans in regular tiles
    /// (plain / segmented).
    bulk_buffers: u32,
    bulk_row_bytes: u32,
    bulk_min_blocks_per_sm: [u32; 2],
    bulk_min_tiles: [u64; 2],
    /// Blocks per SM of the bulk-copy kernel for transforms that rescan their rows (states
    /// wider than their arrays), plain / segmented, where their buffers fit.
    bulk_rescan_min_blocks_per_sm: [u32; 2],
    /// Bulk-copy rows and blocks per SM of transforms that rescan 16-byte states (at most:
    /// fewer blocks where their buffers do not fit).
    wide_state_bulk: (u32, u32),
    /// Shared memory of one SM (the architecture's, not measured).
    shared_bytes_per_sm: u32,
    /// One-wave kernel (scans whose tiles all fit on the device at once): threads
    /// (0: none), look-back slots per lane, blocks per SM.
    wave_threads: u32,
    wave_lookback_slots_per_lane: u32,
    wave_min_blocks_per_sm: u32,
    /// The most tiles a fixed-order scan (deterministic float sums and products) takes the
    /// one-wave kernel for: a constant, since its kernel may depend on n alone.
    wave_fixed_order_max_tiles: u64,
    /// Cluster kernel (scans of at most one thread-block cluster of tiles; sm_90+):
    /// threads (0: none), and the most blocks in the cluster where the device holds them.
    cluster_threads: u32,
    cluster_max_blocks: u32,
}

/// sm_90's row, measured on an H100 (the H200 runs it too): the shapes of the
/// register-staged, bulk-copy, one-wave and cluster kernels, of rescanning transforms, and
/// the thresholds between the kernels. Chosen by the benchmarks its `provenance` names:
/// `bench_compare --variant` with `SCANRT_TILE_OVERRIDE` (tile shapes), `--operators` with
/// `SCANRT_RESCAN_OVERRIDE` (rescanning transforms), `--latency` and
/// bench/run_latency_bench.sh (cluster kernel and small scans), bench/run_gpu_bench.sh
/// (thresholds). Bound: the look-back's serial chain from 2^24 on, launch latency below.
const SM90: TuningRow = TuningRow {
    min_arch: 90,
    provenance: "H100 SXM, bench_compare --variant (tile shapes), --operators (rescanning transforms), --latency and bench/run_latency_bench.sh (cluster and small scans) and bench/run_gpu_bench.sh (thresholds), 2026",
    row_accumulator_bytes: 64,
    lookback_slots_per_lane: 1,
    spin_before_sleep: 8,
    sleep_ns: 32,
    min_blocks_per_sm: 4,
    bulk_buffers: 4,
    bulk_row_bytes: 112,
    bulk_min_blocks_per_sm: [2, 3],
    bulk_min_tiles: [512, 4096],
    bulk_rescan_min_blocks_per_sm: [4, 2],
    wide_state_bulk: (12, 2),
    shared_bytes_per_sm: 228 * 1024,
    wave_threads: 512,
    wave_lookback_slots_per_lane: 4,
    wave_min_blocks_per_sm: 2,
    wave_fixed_order_max_tiles: 256,
    cluster_threads: 256,
    cluster_max_blocks: 16,
};

const ROWS: &[TuningRow] = &[
    TuningRow {
        min_arch: 80,
        provenance: "not measured on sm_80: sm_90's row without the bulk-copy and cluster kernels (sm_90+ only)",
        bulk_buffers: 0,
        cluster_threads: 0,
        shared_bytes_per_sm: 164 * 1024,
        ..SM90
    },
    SM90,
    TuningRow {
        min_arch: 100,
        provenance: "not measured on sm_100: sm_90's row",
        ..SM90
    },
];

/// The row for a device of compute capability `arch` (older devices take the oldest).
fn row(arch: i32) -> &'static TuningRow {
    ROWS.iter().rev().find(|r| r.min_arch <= arch).unwrap_or(&ROWS[0])
}

/// Which benchmark chose the tuning of `sm_<arch>`.
pub(crate) fn provenance(arch: i32) -> &'static str {
    row(arch).provenance
}

/// A kernel set's tile shapes and look-back backoff (template parameters of its kernels,
/// so part of the specialisation's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    pub threads: u32,
    /// Items per thread (one matrix row); a multiple of 16 bytes' worth of both types.
    pub items: u32,
    pub lookback_slots_per_lane: u32,
    pub spin_before_sleep: u32,
    pub sleep_ns: u32,
    /// The second `__launch_bounds__` argument (caps registers per thread); 0: none.
    pub min_blocks_per_sm: u32,
    /// Launch only as many single-pass blocks as fit on the device at once.
    pub persistent: bool,
    /// Tile buffers of the bulk-copy kernel (sm_90+, input type = output type); 0: none.
    pub bulk_buffers: u32,
    /// Items per thread of the bulk-copy kernel's tiles (workspaces count the tiles of
    /// every kernel of a set: `scan::plan::TileCounts`).
    pub bulk_items: u32,
    pub bulk_min_blocks_per_sm: u32,
    /// Scans of at least this many tiles take the bulk-copy kernel when there is one.
    pub bulk_min_tiles: u64,
    /// Threads of the one-wave kernel; 0: none.
    pub wave_threads: u32,
    pub wave_lookback_slots_per_lane: u32,
    pub wave_min_blocks_per_sm: u32,
    pub wave_fixed_order_max_tiles: u64,
    /// Threads of the cluster kernel (0: none), and the most blocks of its cluster.
    pub cluster_threads: u32,
    pub cluster_max_blocks: u32,
}

impl TileShape {
    pub fn tile_elems(&self) -> u64 {
        (self.threads * self.items) as u64
    }
    /// Block size of the single-pass kernels: the data threads plus the look-back warp.
    pub fn single_pass_block(&self) -> u32 {
        self.threads + 32
    }
    pub fn wave_tile_elems(&self) -> u64 {
        (self.wave_threads * self.items) as u64
    }
    pub fn cluster_tile_elems(&self) -> u64 {
        (self.cluster_threads * self.items) as u64
    }
    pub fn bulk_tile_elems(&self) -> u64 {
        (self.threads * self.bulk_items) as u64
    }
    /// Dynamic shared memory of the bulk-copy kernel: its tile buffers of accumulators.
    pub fn bulk_shared_bytes(&self, acc_size: usize) -> u32 {
        self.bulk_buffers * self.threads * self.bulk_items * acc_size as u32
    }
}

/// The tile shape for a kernel set on `sm_<arch>`.
pub(crate) fn tile_shape(arch: i32, input: DType, output: DType, segmented: bool) -> TileShape {
    tile_shape_of_sizes(arch, input.size() as u32, output.size() as u32, segmented)
}

/// [`tile_shape`] of elements of `input_bytes` and `output_bytes` (a row of lanes is one
/// element: `scan::strided::lanes`).
pub(crate) fn tile_shape_of_sizes(arch: i32, input_bytes: u32, output_bytes: u32, segmented: bool) -> TileShape {
    let r = row(arch);
    let seg = segmented as usize;
    let items = (r.row_accumulator_bytes / output_bytes).max(16 / input_bytes);
    let row_bytes = items * output_bytes;
    // The one-wave and cluster kernels keep a lane's segment heads in one 32-bit word.
    let striped = !segmented || items <= 32;
    let shape = TileShape {
        // The register-staged kernel keeps two tiles in static shared memory (48 KiB at most).
        threads: if row_bytes <= 64 { 256 } else { 128 },
        items,
        lookback_slots_per_lane: r.lookback_slots_per_lane,
        spin_before_sleep: r.spin_before_sleep,
        sleep_ns: r.sleep_ns,
        min_blocks_per_sm: if row_bytes <= 64 { r.min_blocks_per_sm } else { 0 },
        persistent: true,
        bulk_buffers: r.bulk_buffers,
        // Segmented scans keep their rows: their heads come in 8- or 16-byte flag vectors.
        bulk_items: if segmented {
            items
        } else {
            (r.bulk_row_bytes / output_bytes).max(items)
        },
        bulk_min_blocks_per_sm: r.bulk_min_blocks_per_sm[seg],
        bulk_min_tiles: kernel_selection().bulk_min_tiles.unwrap_or(r.bulk_min_tiles[seg]),
        wave_threads: if striped { r.wave_threads } else { 0 },
        wave_lookback_slots_per_lane: r.wave_lookback_slots_per_lane,
        wave_min_blocks_per_sm: r.wave_min_blocks_per_sm,
        wave_fixed_order_max_tiles: r.wave_fixed_order_max_tiles,
        cluster_threads: if striped { r.cluster_threads } else { 0 },
        cluster_max_blocks: r.cluster_max_blocks,
    };
    #[cfg(feature = "experiments")]
    let shape = experiments::apply(shape, segmented);
    shape
}

/// The tile shape of a user-defined operator's kernel set (src/operator.rs). A state of
/// 4 or 8 bytes read and written as plain arrays scans exactly like the built-in type of
/// its size, the bulk-copy and one-wave kernels included (a user-defined u32 sum runs the
/// built-in sum's kernels). Transforms of such states take the same shapes and the
/// bulk-copy kernel with buffers of `bulk_element_bytes` per element (the input or the
/// output arrays' bytes, whichever are larger; states wider than that are rescanned), but
/// no one-wave kernel; so do transforms of 16-byte states, in rows of 4 (always
/// rescanned: their arrays are narrower). Wider states take the register-staged and matrix kernels: rows
/// short enough that two tiles of states fit in static shared memory (48 KiB: 2 x 128 x
/// (ITEMS + 1) x state bytes).
pub(crate) fn operator_shape(
    arch: i32,
    state_bytes: usize,
    plain_arrays: bool,
    segmented: bool,
    bulk_element_bytes: usize,
) -> TileShape {
    let like = |dtype| tile_shape(arch, dtype, dtype, segmented);
    match state_bytes {
        4 | 8 | 16 if !(plain_arrays && state_bytes == 16) => {
            let shape = match state_bytes {
                4 => like(DType::U32),
                8 => like(DType::U64),
                // A 16-byte transform state (a recurrence's adjoint f32) keeps the u64
                // scan's 64 bytes of states per thread: rows of 4.
                _ => TileShape {
                    items: 4,
                    ..like(DType::U64)
                },
            };
            if plain_arrays {
                shape
            } else {
                // The bulk-copy kernel's buffers hold a transform's arrays, and its rows of
                // states are scanned in registers: rows of at most the row's bytes of
                // either, whole 16-byte vectors of 4-byte arrays (for a recurrence f32,
                // 12 items of 8 bytes: two blocks of 4 such buffers fit per SM, as the u64
                // scan's; logcumsumexp f32 rescans 12 items of 4-byte arrays, at four
                // blocks per SM). Segmented scans take the same rows: batched rows need no
                // flag vectors (byte flags of rows other than 8 or 16 items are read one
                // by one).
                //
                // A transform whose bulk tiles would be shorter than its register-staged
                // ones (wide arrays of a 4-byte state: 12 items against 16) takes no
                // bulk-copy kernel: more look-backs per byte, not measured as a gain. A
                // rescanning transform asks for as many
                // blocks as the tuning row and the SM's shared memory allow (each block also
                // holds about 2 KiB of static and reserved shared memory).
                //
                // A rescanning transform's rows are at most as long as lets the row's
                // blocks share an SM: f16 and bf16 sums (2-byte arrays, f32 states) take
                // 24 items at 4 blocks, not 28 at the 3 that fit (chosen on the H100 by
                // `bench_compare --quick` with `SCANRT_RESCAN_OVERRIDE`, f16 and bf16 at 2^28).
                //
                // Rescanned 16-byte states take the row's own rows and blocks
                // (`wide_state_bulk`).
                let r = row(arch);
                let row_element_bytes = bulk_element_bytes.max(state_bytes) as u32;
                let rescan = bulk_element_bytes < state_bytes;
                let rescan_blocks = if state_bytes == 16 && rescan {
                    r.wide_state_bulk.1
                } else {
                    r.bulk_rescan_min_blocks_per_sm[segmented as usize]
                };
                let buffer_row_bytes = shape.bulk_buffers * shape.threads * bulk_element_bytes as u32;
                let fitting_items =
                    (r.shared_bytes_per_sm / rescan_blocks).saturating_sub(2048) / buffer_row_bytes.max(1);
                let mut bulk_items = if state_bytes == 16 && rescan {
                    r.wide_state_bulk.0
                } else {
                    ((r.bulk_row_bytes / row_element_bytes) & !3).max(4)
                };
                if rescan {
                    bulk_items = bulk_items.min(fitting_items & !3).max(4);
                }
                let buffer_bytes = buffer_row_bytes * bulk_items;
                let fitting_blocks = row(arch).shared_bytes_per_sm / (buffer_bytes + 2048);
                let shape = TileShape {
                    bulk_buffers: if bulk_items >= shape.items && fitting_blocks > 0 {
                        shape.bulk_buffers
                    } else {
                        0
                    },
                    bulk_items,
                    bulk_min_blocks_per_sm: if rescan {
                        rescan_blocks
                    } else {
                        row(arch).bulk_min_blocks_per_sm[0]
                    }
                    .min(fitting_blocks)
                    .max(1),
                    wave_threads: 0,
                    cluster_threads: 0,
                    ..shape
                };
                #[cfg(feature = "experiments")]
                if rescan {
                    return experiments::rescan(shape);
                }
                shape
            }
        }
        _ => {
            let items = match state_bytes {
                0..=16 => 8,
                17..=32 => 4,
                _ => 1,
            };
            TileShape {
                threads: 128,
                items,
                min_blocks_per_sm: 0,
                bulk_buffers: 0,
                bulk_items: items,
                wave_threads: 0,
                cluster_threads: 0,
                ..like(DType::U64)
            }
        }
    }
}

/// The tile shape for small plain scans: rows of half the length (2048-element tiles for
/// 4-byte types), so that a scan of at most one look-back window of such tiles runs with
/// twice the blocks. None where rows cannot be shorter than one 16-byte vector of the
/// input, and for segmented scans. (Chosen on the H100 by u32 scans of 2^16 in a
/// replayed graph, as `bench_compare` and bench/run_latency_bench.sh time them.)
pub(crate) fn small_scan_shape(regular: &TileShape, input_bytes: u32, segmented: bool) -> Option<TileShape> {
    #[cfg(feature = "experiments")]
    if experiments::overridden() {
        return None;
    }
    if segmented {
        return None;
    }
    let items = (regular.items / 2).max(16 / input_bytes);
    (items < regular.items).then_some(TileShape {
        items,
        bulk_buffers: 0,
        wave_threads: 0,
        cluster_threads: 0,
        ..*regular
    })
}

/// Whether a scan of `n` elements takes the small shape: more than one regular tile (one
/// tile takes the single-block path either way) and at most one look-back window (32
/// tiles) of small ones.
pub(crate) fn takes_small_shape(regular: &TileShape, small: &TileShape, n: u64) -> bool {
    n > regular.tile_elems() && n <= 32 * small.tile_elems()
}

/// The most tiles a plain scan may have to take the one-wave kernel: as many blocks as
/// are resident at once (chosen on the H100 with u32 at 2^20); for a fixed-order scan,
/// the shape's constant.
pub(crate) fn wave_max_tiles(shape: &TileShape, resident_blocks: u32, fixed_order: bool) -> u64 {
    let default = if fixed_order {
        shape.wave_fixed_order_max_tiles
    } else {
        resident_blocks as u64
    };
    kernel_selection().wave_max_tiles.unwrap_or(default)
}

/// The most tiles the cluster kernel takes: what the device holds (`device_blocks`),
/// and for a fixed-order scan no more than `portable_blocks`, since its kernel may depend
/// on n alone.
pub(crate) fn cluster_max_blocks(device_blocks: u32, portable_blocks: u32, fixed_order: bool) -> u32 {
    let most = if fixed_order {
        device_blocks.min(portable_blocks)
    } else {
        device_blocks
    };
    kernel_selection()
        .cluster_max_blocks
        .map_or(most, |b| b.min(device_blocks))
}

/// Overrides of the kernel choice, for tests that run a kernel at every size: they
/// change which kernel runs, never what it computes. Read once per process.
/// `SCANRT_BULK_MIN_TILES=t`: the bulk-copy kernel from t tiles on (2: whenever the scan
/// spans two of its tiles).
/// `SCANRT_WAVE_MAX_TILES=t`: the one-wave kernel up to t tiles (0: never).
/// `SCANRT_CLUSTER_MAX_BLOCKS=b`: the cluster kernel up to b tiles (0: never).
struct KernelSelection {
    bulk_min_tiles: Option<u64>,
    wave_max_tiles: Option<u64>,
    cluster_max_blocks: Option<u32>,
}

fn kernel_selection() -> &'static KernelSelection {
    static SELECTION: once_cell::sync::Lazy<KernelSelection> = once_cell::sync::Lazy::new(|| {
        let var = |name: &str| std::env::var(name).ok()?.parse().ok();
        KernelSelection {
            bulk_min_tiles: var("SCANRT_BULK_MIN_TILES"),
            wave_max_tiles: var("SCANRT_WAVE_MAX_TILES"),
            cluster_max_blocks: std::env::var("SCANRT_CLUSTER_MAX_BLOCKS")
                .ok()
                .and_then(|v| v.parse().ok()),
        }
    });
    &SELECTION
}

/// Tuning experiments (cargo feature `experiments`; never in release builds of the
/// product): replace a row's shapes from the environment.
#[cfg(feature = "experiments")]
mod experiments;

#[cfg(test)]
mod tests;
