//! The launch of a planned scan: how many tiles each kernel of its set has (and so the
//! workspace that serves every one of them) and which kernel runs it; the workspace comes
//! from `runtime::launch_workspace`.

use std::sync::Arc;

use crate::contract::{self, ScanParams};
use crate::error::{bail, Result};
use crate::runtime::calls::CallLabel;
use crate::runtime::cu;
use crate::runtime::device::GpuDevice;
use crate::runtime::launch_target::LaunchTarget;
use crate::runtime::launch_workspace;
use crate::runtime::workspace::{lookback_bytes, Workspace};
use crate::scan::kernels::ScanKernels;
use crate::scan::translation_unit::KernelKind;
use crate::scan::tuning::{cluster_max_blocks, wave_max_tiles};
use crate::tables::Algorithm;

/// The parameter buffer of a scan kernel: `ScanParams`, or `ScanParams` followed by a
/// user-defined operator's own (`contract::OperatorLaunch`).
pub(crate) trait KernelParams: Copy {
    fn scan(&mut self) -> &mut ScanParams;
}
impl KernelParams for ScanParams {
    fn scan(&mut self) -> &mut ScanParams {
        self
    }
}
impl KernelParams for contract::OperatorLaunch {
    fn scan(&mut self) -> &mut ScanParams {
        &mut self.scan
    }
}

/// How many tiles a scan of `n` elements has on each single-pass kernel of its set, and
/// the look-back slots that serve every one of them. The plan sizes workspaces with it
/// and the launch takes its kernel's tile count from it, so a workspace scanrt sized
/// holds the tiles of whichever kernel runs, whatever the tile shapes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileCounts {
    /// Tiles of the register-staged kernel (also the matrix scan's: same tiles).
    pub register_staged: u64,
    /// Tiles of the one-wave kernel, where the set has one.
    pub wave: Option<u64>,
    /// Tiles of the bulk-copy kernel, where the set has one.
    pub bulk: Option<u64>,
    /// Blocks of the cluster kernel where it takes the scan (the tiles fit one cluster):
    /// then the launch needs no workspace.
    pub cluster: Option<u32>,
    /// Bytes of the carried value (the status slots' size follows from it).
    pub value_bytes: usize,
}

impl TileCounts {
    /// The counts for a scan of `n` elements on `kernels`, carrying `value_bytes`-byte
    /// values; `LengthOverflow` where a launch could not address the tiles. The kernel of
    /// a fixed-order scan (deterministic, or the matrix algorithm) may depend on n alone:
    /// it takes the cluster kernel up to the portable cluster size only, which every
    /// sm_90+ device holds.
    pub fn new(kernels: &ScanKernels, n: u64, value_bytes: usize, fixed_order: bool) -> Result<TileCounts> {
        let shape = &kernels.shape;
        let tiles_of = |elems: u64| n.div_ceil(elems.max(1));
        let counts = TileCounts {
            register_staged: tiles_of(shape.tile_elems()),
            wave: kernels
                .get(KernelKind::SinglePassWave)
                .map(|_| tiles_of(shape.wave_tile_elems())),
            bulk: kernels
                .get(KernelKind::SinglePassBulk)
                .map(|_| tiles_of(shape.bulk_tile_elems())),
            cluster: kernels.get(KernelKind::ClusterScan).and_then(|_| {
                let most = cluster_max_blocks(kernels.cluster_blocks, PORTABLE_CLUSTER_BLOCKS, fixed_order);
                let blocks = tiles_of(shape.cluster_tile_elems());
                (blocks <= most as u64).then_some(blocks as u32)
            }),
            value_bytes,
        };
        // Tile ids and tickets are 32-bit on the device.
        if counts.slots() > i32::MAX as u64 {
            bail!(
                LengthOverflow,
                "n = {n} needs {} tiles, more than one launch can address",
                counts.slots()
            );
        }
        Ok(counts)
    }

    /// Status slots a workspace needs: the most tiles any kernel of the set may draw.
    pub fn slots(&self) -> u64 {
        self.register_staged
            .max(self.wave.unwrap_or(0))
            .max(self.bulk.unwrap_or(0))
    }

    /// Bytes of look-back workspace (0 for a one-tile or a cluster scan, which need none).
    pub fn workspace_bytes(&self) -> usize {
        if self.register_staged > 1 && self.cluster.is_none() {
            lookback_bytes(self.value_bytes, self.slots())
        } else {
            0
        }
    }
}

/// The cluster size CUDA promises on every sm_90+ device (larger ones are non-portable).
const PORTABLE_CLUSTER_BLOCKS: u32 = 8;

/// What the launch of a planned scan needs to know.
pub(crate) struct KernelLaunch<'a> {
    pub kernels: &'a Arc<ScanKernels>,
    pub algorithm: Algorithm,
    pub tiles: &'a TileCounts,
    /// What the call scans, as a later fault report names it, and its length.
    pub label: CallLabel,
    pub n: u64,
    /// Only the reduction (a matrix-scan set: its reduce and tile-sum kernels), whose
    /// total goes to `ScanParams::carry_out`; nothing else is written.
    pub reduce_only: bool,
}

/// Launches a scan whose addresses are checked and whose `params` are filled in except for
/// the workspace: picks the workspace (the caller's, the graph's or the stream's pooled
/// one) and the kernel, and queues it on `target`'s stream. A workspace too small for the
/// kernel is refused here, before anything is queued.
///
/// # Safety
/// `params` must be what `launch.kernels` were compiled for, with valid addresses.
pub(crate) unsafe fn launch_kernels<P: KernelParams>(
    dev: &GpuDevice,
    launch: &KernelLaunch,
    target: &LaunchTarget,
    params: &mut P,
    workspace: Option<Workspace>,
) -> Result<()> {
    let (kernels, tiles, raw_stream) = (launch.kernels, launch.tiles, target.stream);
    let flags = params.scan().flags;
    let single_pass = kernels.get(KernelKind::SinglePass).expect("every kernel set has one");
    // Carries per segment are the register-staged kernel's alone, rows with a pitch the
    // bulk-copy kernel's (`ScanPlan::takes_pitched_rows` made sure it takes them).
    let register_staged_only = flags & contract::FLAG_SEGMENT_CARRIES != 0;
    let pitched = params.scan().in_pitch != 0 || params.scan().out_pitch != 0;
    if pitched && !bulk_takes(kernels, tiles) {
        bail!(
            UnsupportedCombination,
            "rows with a pitch reached a launch without the bulk-copy kernel"
        );
    }
    if let (Some(blocks), false, false, false) = (tiles.cluster, launch.reduce_only, register_staged_only, pitched) {
        // One cluster: every block resident, no look-back state. A cluster of one block
        // is any plain launch of one block, without the cluster launch's own cost (H100:
        // 0.8 against 1.2-1.3 us per launch in a replayed graph).
        launch_workspace::keep_alive_if_captured(dev, target, kernels.clone())?;
        let cluster = kernels
            .get(KernelKind::ClusterScan)
            .expect("counted only where the set has one");
        return match blocks {
            1 => cluster.launch(1, raw_stream, params),
            _ => cluster.launch_cluster(blocks, raw_stream, params),
        };
    }
    if tiles.register_staged == 1 && !launch.reduce_only {
        // One block, no look-back state: the same for every algorithm.
        launch_workspace::keep_alive_if_captured(dev, target, kernels.clone())?;
        return single_pass.launch(1, raw_stream, params);
    }

    let ws = launch_workspace::acquire(
        dev,
        target,
        workspace,
        tiles.value_bytes,
        tiles.slots(),
        kernels.clone(),
    )?;
    params.scan().workspace = ws.ptr;
    params.scan().status_capacity = ws.slots as i64;
    params.scan().call = dev.calls.record(launch.label.clone(), launch.n, raw_stream as usize);

    if launch.reduce_only {
        // The tile sums, then their scan (which writes the total); the slot area they used
        // is zeroed again, as the matrix scan's last kernel would.
        let grid = tiles.register_staged as u32;
        for (kind, grid) in [(KernelKind::MatrixReduce, grid), (KernelKind::MatrixScanSums, 1)] {
            let kernel = kernels.get(kind).expect("a reduction plans the matrix scan");
            kernel.launch(grid, raw_stream, params)?;
        }
        let slots = ws.ptr + std::mem::size_of::<contract::LookbackHeader>() as u64;
        return cu::zero_async(slots, tiles.register_staged as usize * tiles.value_bytes, raw_stream);
    }
    if launch.algorithm == Algorithm::Matrix {
        // Reduce, scan the tile sums, scan the tiles. The tile sums (accumulators, or
        // (value, head) pairs of at most 16 bytes) live in the slot area (8 or 16
        // bytes per tile), which the last kernel zeroes again.
        let grid = tiles.register_staged as u32;
        for (kind, grid) in [
            (KernelKind::MatrixReduce, grid),
            (KernelKind::MatrixScanSums, 1),
            (KernelKind::MatrixScanTiles, grid),
        ] {
            let kernel = kernels.get(kind).expect("every kernel set has the matrix scan");
            kernel.launch(grid, raw_stream, params)?;
        }
        return Ok(());
    }

    let aligned = flags & contract::FLAG_VECTOR_IN != 0 && flags & contract::FLAG_VECTOR_OUT != 0;
    // A deterministic scan's association order is the tile shape's, so its kernel may
    // depend on n alone, not on alignment or on the SM count that decides what fits
    // in one wave: it takes the one-wave kernel up to a constant count of tiles, with
    // element-wise loads where the arrays are not aligned for vectors.
    let deterministic = flags & contract::FLAG_DETERMINISTIC != 0;
    // Scans whose tiles all fit on the device at once take the one-wave kernel (one
    // block per tile); large ones stream through the bulk-copy kernel where there is
    // one (from two of its tiles: it has no one-tile path).
    let wave = kernels
        .get(KernelKind::SinglePassWave)
        .zip(tiles.wave)
        .filter(|_| !register_staged_only);
    let bulk = kernels
        .get(KernelKind::SinglePassBulk)
        .zip(tiles.bulk)
        .filter(|_| !register_staged_only);
    let (kernel, kernel_tiles, persistent) = match (wave, bulk) {
        (_, Some((bulk, bulk_tiles))) if pitched => (bulk, bulk_tiles, kernels.shape.persistent),
        (Some((wave, wave_tiles)), _)
            if (aligned || deterministic)
                && wave_tiles <= wave_max_tiles(&kernels.shape, wave.resident_blocks, deterministic) =>
        {
            (wave, wave_tiles, false)
        }
        (_, Some((bulk, bulk_tiles))) if bulk_takes(kernels, tiles) => (bulk, bulk_tiles, kernels.shape.persistent),
        _ => (single_pass, tiles.register_staged, kernels.shape.persistent),
    };
    let grid = if persistent {
        kernel_tiles.min(kernel.resident_blocks as u64)
    } else {
        kernel_tiles
    };
    kernel.launch(grid as u32, raw_stream, params)
}

/// Whether the bulk-copy kernel takes a scan of `tiles` that the one-wave kernel does not:
/// a set that has one, at least `bulk_min_tiles` register-staged tiles, and two of its own
/// (it has no one-tile path).
pub(crate) fn bulk_takes(kernels: &ScanKernels, tiles: &TileCounts) -> bool {
    kernels.get(KernelKind::SinglePassBulk).is_some()
        && tiles.register_staged >= kernels.shape.bulk_min_tiles
        && tiles.bulk.is_some_and(|bulk| bulk >= 2)
}
