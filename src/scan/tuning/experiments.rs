//! Tuning experiments (cargo feature `experiments`; never in release builds of the
//! product): environment variables that replace a row's shapes without rebuilding.

use super::TileShape;
use crate::kernels::experiment_numbers;

/// `SCANRT_TILE_OVERRIDE=threads:items:slots_per_lane:spin:sleep_ns:min_blocks:persistent[:bulk_buffers[:bulk_items:bulk_min_blocks]]`
/// replaces the register-staged and bulk-copy shapes of every kernel set (items must
/// suit every type pair used; no small-scan or one-wave kernels).
static TILE: once_cell::sync::Lazy<Option<Vec<u32>>> =
    once_cell::sync::Lazy::new(|| experiment_numbers("SCANRT_TILE_OVERRIDE").filter(|v| v.len() >= 7));
/// `SCANRT_WAVE_OVERRIDE=threads:slots_per_lane:min_blocks[:spin:sleep_ns]` replaces
/// the one-wave kernel's shape of plain kernel sets.
static WAVE: once_cell::sync::Lazy<Option<Vec<u32>>> =
    once_cell::sync::Lazy::new(|| experiment_numbers("SCANRT_WAVE_OVERRIDE"));

/// `SCANRT_CLUSTER_OVERRIDE=threads[:max_blocks]` replaces the cluster kernel's shape
/// of plain kernel sets that have one.
static CLUSTER: once_cell::sync::Lazy<Option<Vec<u32>>> =
    once_cell::sync::Lazy::new(|| experiment_numbers("SCANRT_CLUSTER_OVERRIDE"));

pub(super) fn overridden() -> bool {
    TILE.is_some()
}

/// `SCANRT_RESCAN_OVERRIDE=bulk_buffers:bulk_items:bulk_min_blocks` replaces the
/// bulk-copy shape of rescanning transforms (half types, states wider than arrays).
pub(super) fn rescan(shape: TileShape) -> TileShape {
    let Some(v) = experiment_numbers("SCANRT_RESCAN_OVERRIDE").filter(|v| v.len() == 3) else {
        return shape;
    };
    TileShape {
        bulk_buffers: v[0],
        bulk_items: v[1],
        bulk_min_blocks_per_sm: v[2],
        ..shape
    }
}

pub(super) fn apply(shape: TileShape, segmented: bool) -> TileShape {
    let shape = match &*TILE {
        Some(f) => TileShape {
            threads: f[0],
            items: f[1],
            lookback_slots_per_lane: f[2],
            spin_before_sleep: f[3],
            sleep_ns: f[4],
            min_blocks_per_sm: f[5],
            persistent: f[6] != 0,
            bulk_buffers: f.get(7).copied().unwrap_or(0),
            bulk_items: if segmented {
                f[1]
            } else {
                f.get(8).copied().unwrap_or(f[1]).max(f[1])
            },
            bulk_min_blocks_per_sm: f.get(9).copied().unwrap_or(f[5]),
            wave_threads: 0,
            cluster_threads: 0,
            ..shape
        },
        None => shape,
    };
    let shape = match &*WAVE {
        Some(f) => {
            let field = |i: usize, default: u32| f.get(i).copied().unwrap_or(default);
            TileShape {
                wave_threads: field(0, shape.wave_threads),
                wave_lookback_slots_per_lane: field(1, shape.wave_lookback_slots_per_lane),
                wave_min_blocks_per_sm: field(2, shape.wave_min_blocks_per_sm),
                spin_before_sleep: field(3, shape.spin_before_sleep),
                sleep_ns: field(4, shape.sleep_ns),
                ..shape
            }
        }
        _ => shape,
    };
    match &*CLUSTER {
        Some(f) if shape.cluster_threads > 0 => TileShape {
            cluster_threads: f[0],
            cluster_max_blocks: f.get(1).copied().unwrap_or(shape.cluster_max_blocks),
            ..shape
        },
        _ => shape,
    }
}
