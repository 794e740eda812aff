//! The radix sort kernels: one translation unit per (key type, order, value size) holding
//! the histogram kernel and the digit-pass kernel, and the loaded kernels of a device.

use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::kernels::{KernelCoverage, KernelFamily, KERNEL_HEADERS};
use crate::runtime::device::{GpuDevice, LoadedKernel};
use crate::runtime::nvrtc::KernelSource;
use crate::types::{DType, NumberKind};

/// The digit pass's tile shape: threads (at least one per digit), keys per thread, blocks
/// per SM it is compiled for (`__launch_bounds__`), tiles a look-back polls at once, and
/// the polls before a waiting look-back sleeps between polls, and the sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    pub threads: u32,
    pub items: u32,
    pub min_blocks: u32,
    pub window: u32,
    pub spin_before_sleep: u32,
    pub sleep_ns: u32,
}

/// Which tuning row a digit pass takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TuningClass {
    /// Unsigned keys of at most 4 bytes, alone.
    NarrowUnsignedKeys,
    /// Signed or float keys of at most 4 bytes, alone.
    NarrowOrderedKeys,
    /// Keys with values, and 8-byte keys.
    Wide,
}

/// One tuning row of the digit pass: threads (at least one per digit) and keys per thread,
/// and the benchmark that chose them. Bound: the per-digit look-back (wider look-back
/// windows, look-back warps of their own and one larger block per SM were slower).
struct TuningRow {
    class: TuningClass,
    threads: u32,
    items: u32,
    provenance: &'static str,
}

/// Every architecture takes these rows until rows of its own are measured; key types
/// not measured take their kind's row.
const TUNING: &[TuningRow] = &[
    TuningRow {
        class: TuningClass::NarrowUnsignedKeys,
        threads: 448,
        items: 28,
        provenance: "H100, bench_compare --sort at 2^28, SCANRT_SORT_SHAPE sweep (u32 keys)",
    },
    TuningRow {
        class: TuningClass::NarrowOrderedKeys,
        threads: 384,
        items: 32,
        provenance: "H100, bench_compare --sort at 2^28, SCANRT_SORT_SHAPE sweep (i32 and f32 keys)",
    },
    TuningRow {
        class: TuningClass::Wide,
        threads: 512,
        items: 16,
        provenance: "H100, bench_compare --sort at 2^28, SCANRT_SORT_SHAPE sweep (u32 pairs, u64 keys)",
    },
];

/// The tile shape for keys of `key` with values of `value_bytes` bytes (0: none): its
/// tuning row's, two blocks per SM, a look-back window of one tile, 8 polls before
/// sleeping 64 ns. With the `experiments` feature,
/// `SCANRT_SORT_SHAPE=threads,items,min_blocks,window,spin,sleep` replaces it.
pub(crate) fn tile_shape(key: DType, value_bytes: u32) -> TileShape {
    #[cfg(feature = "experiments")]
    if let Some([threads, items, min_blocks, window, spin_before_sleep, sleep_ns]) =
        crate::kernels::experiment_override("SCANRT_SORT_SHAPE")
    {
        return TileShape {
            threads,
            items,
            min_blocks,
            window,
            spin_before_sleep,
            sleep_ns,
        };
    }
    let class = match (key.info().kind, value_bytes) {
        (NumberKind::Unsigned, 0) if key.size() <= 4 => TuningClass::NarrowUnsignedKeys,
        (_, 0) if key.size() <= 4 => TuningClass::NarrowOrderedKeys,
        _ => TuningClass::Wide,
    };
    let row = TUNING.iter().find(|r| r.class == class).expect("every class has a row");
    TileShape {
        threads: row.threads,
        items: row.items,
        min_blocks: 2,
        window: 1,
        spin_before_sleep: 8,
        sleep_ns: 64,
    }
}

/// The histogram kernel's shape on a GPU granting a block `max_shared` bytes of shared
/// memory: threads a block, and copies of the block's counters (lane % copies counts into
/// its own; see radix_histogram). 1024 threads, each loading its vectors of a chunk at
/// once, and as many copies (up to one a lane) as 64 KiB holds: 16 for 4-byte keys (two
/// lanes a copy: at most two increments a bank), 8 for 8-byte ones (twice the passes);
/// a GPU that grants less (sm_75: 64 KiB in all) takes half as many, or fewer.
/// Chosen by `bench_compare --sort` at 2^28 keys with `SCANRT_HISTOGRAM_SHAPE` on the H200
/// (u32 keys, descending and with values; u64 keys). Bound: the rate of shared-memory
/// increments (32 copies, 128 KiB, which fewer GPUs grant, were no faster).
/// With the `experiments` feature, `SCANRT_HISTOGRAM_SHAPE=threads,copies` replaces it.
pub(crate) fn histogram_shape(key: DType, max_shared: u32) -> (u32, u32) {
    #[cfg(feature = "experiments")]
    if let Some([threads, copies]) = crate::kernels::experiment_override("SCANRT_HISTOGRAM_SHAPE") {
        return (threads, copies);
    }
    let counters = histogram_counter_bytes(key);
    let mut copies = (HISTOGRAM_SHARED_BYTES / counters).min(32);
    while copies > 1 && copies * counters + HISTOGRAM_STATIC_BYTES > max_shared {
        copies /= 2;
    }
    (1024, copies)
}
/// One copy of the histogram kernel's counters: 256 for each pass a key's bits allow.
fn histogram_counter_bytes(key: DType) -> u32 {
    key.size() as u32 * 256 * 4
}
/// The histogram kernel's counters, in all their copies, fill at most this much shared
/// memory.
const HISTOGRAM_SHARED_BYTES: u32 = 64 << 10;
/// Room left beside them for the kernel's static shared memory (80 bytes for sm_90).
const HISTOGRAM_STATIC_BYTES: u32 = 1 << 10;
/// Keys a histogram block counts at a time (`SCANRT_HISTOGRAM_CHUNK`).
pub(crate) const HISTOGRAM_CHUNK: u64 = 16384;

/// Keys per tile of a digit pass over `key` with values of `value_bytes` bytes.
pub(crate) fn tile_elems(key: DType, value_bytes: u32) -> u64 {
    let shape = tile_shape(key, value_bytes);
    (shape.threads * shape.items) as u64
}

/// One sort translation unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SortSpec {
    pub key: DType,
    pub descending: bool,
    /// Bytes per value (0: keys only).
    pub value_bytes: u32,
}

impl SortSpec {
    /// The histogram kernel's dynamic shared memory: each pass's 256 counters, in each of
    /// `copies`.
    pub fn histogram_shared_bytes(&self, copies: u32) -> u32 {
        histogram_counter_bytes(self.key) * copies
    }

    /// Dynamic shared memory of the digit pass: the tile's keys, then its values; before
    /// them, the same memory holds each warp's 256 digit masks of the ranking.
    pub fn shared_bytes(&self) -> u32 {
        let tile = tile_elems(self.key, self.value_bytes) * (self.key.size() as u64 + self.value_bytes as u64);
        let masks = (tile_shape(self.key, self.value_bytes).threads / 32 * 256 * 4) as u64;
        tile.max(masks) as u32
    }

    /// The translation unit's source, its histogram kernel of the `histogram_shape`
    /// (threads, copies of the counters).
    pub fn source(&self, histogram: (u32, u32)) -> KernelSource {
        let word = |bytes: u32| match bytes {
            1 => "u8",
            2 => "u16",
            4 => "u32",
            8 => "u64",
            _ => unreachable!("values are 1, 2, 4 or 8 bytes"),
        };
        let w = word(self.key.size() as u32);
        let kind = match (self.key, self.key.info().kind) {
            (DType::F16, _) => "SCANRT_KEY_F16",
            (DType::BF16, _) => "SCANRT_KEY_BF16",
            (_, NumberKind::Unsigned) => "SCANRT_KEY_UNSIGNED",
            (_, NumberKind::Signed) => "SCANRT_KEY_SIGNED",
            (_, NumberKind::Float) => "SCANRT_KEY_FLOAT",
        };
        let v = word(self.value_bytes.max(1));
        let has_values = self.value_bytes > 0;
        let descending = self.descending;
        let TileShape {
            threads,
            items,
            min_blocks,
            window,
            spin_before_sleep,
            sleep_ns,
        } = tile_shape(self.key, self.value_bytes);
        let (histogram_threads, copies) = histogram;
        let text = format!(
            r#"#include "device/radix_sort.cuh"
extern "C" __global__ void __launch_bounds__({histogram_threads}) scanrt_radix_histogram(SCANRT_SORT_PARAMS) {{
    radix_histogram<{w}, {kind}, {descending}, {histogram_threads}, {copies}>((const {w}*)keys_in, n,
        (unsigned long long*)histograms, begin_bit, end_bit, flags);
}}
extern "C" __global__ void __launch_bounds__({threads}, {min_blocks}) scanrt_radix_pass(SCANRT_SORT_PARAMS) {{
    radix_onesweep_tile<{w}, {kind}, {descending}, {v}, {has_values}, {threads}, {items}, {window}, {spin_before_sleep}, {sleep_ns}>(
        (const {w}*)keys_in, ({w}*)keys_out, (const {v}*)values_in, ({v}*)values_out,
        (const unsigned long long*)histograms, (const unsigned long long*)carry_in, (unsigned long long*)carry_out,
        (void*)workspace, status_capacity, FaultSink{{(FaultReport*)report, call}}, n, index_base, begin_bit, end_bit,
        flags);
}}
"#
        );
        KernelSource {
            name: format!(
                "radix sort {:?} {} {}",
                self.key,
                if descending { "desc" } else { "asc" },
                self.value_bytes
            ),
            text,
            headers: KERNEL_HEADERS,
        }
    }
}

/// A loaded sort module's two kernels.
pub(crate) struct SortKernel {
    pub histogram: LoadedKernel,
    pub pass: LoadedKernel,
    _module: Arc<CudaModule>,
}

/// The radix sort's kernels: a set is one key type, order and value size, its histogram
/// kernel shaped by the shared memory the device grants a block.
pub(crate) struct SortFamily;

impl KernelFamily for SortFamily {
    type Spec = SortSpec;
    type Set = SortKernel;
    const NAME: &'static str = "radix sort";

    fn built_in(_arch: i32, coverage: KernelCoverage) -> Vec<SortSpec> {
        built_in_sort_specs(coverage)
    }

    fn source(spec: &SortSpec, max_shared_per_block: u32) -> KernelSource {
        spec.source(histogram_shape(spec.key, max_shared_per_block))
    }

    fn tuning_provenance(_arch: i32) -> Vec<&'static str> {
        TUNING.iter().map(|row| row.provenance).collect()
    }

    fn load(dev: &GpuDevice, spec: &SortSpec, module: Arc<CudaModule>) -> Result<SortKernel> {
        let histogram_shape = histogram_shape(spec.key, dev.max_shared_per_block);
        let histogram = dev.kernel(
            &module,
            "scanrt_radix_histogram",
            histogram_shape.0,
            spec.histogram_shared_bytes(histogram_shape.1),
        )?;
        let pass = dev.kernel(
            &module,
            "scanrt_radix_pass",
            tile_shape(spec.key, spec.value_bytes).threads,
            spec.shared_bytes(),
        )?;
        Ok(SortKernel {
            histogram,
            pass,
            _module: module,
        })
    }
}

/// The sort kernels that `coverage` asks for: each key type and order, keys only and
/// values of each size.
fn built_in_sort_specs(coverage: KernelCoverage) -> Vec<SortSpec> {
    let variants: Vec<(bool, u32)> = [false, true]
        .into_iter()
        .flat_map(|descending| [0, 1, 2, 4, 8].map(|value_bytes| (descending, value_bytes)))
        .collect();
    let mut all = Vec::new();
    for (index, key) in DType::ALL.into_iter().enumerate() {
        for (variant, &(descending, value_bytes)) in variants.iter().enumerate() {
            if coverage.keeps(index, variant, variants.len()) {
                all.push(SortSpec {
                    key,
                    descending,
                    value_bytes,
                });
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::nvrtc::Nvrtc;

    /// The histogram's counters fit the shared memory each GPU grants a block (sm_90,
    /// sm_80, sm_86, sm_75, 48 KiB), in copies a warp's lanes share evenly, and the GPUs
    /// of 96 KiB or more keep the full count. (Without `SCANRT_HISTOGRAM_SHAPE`.)
    #[test]
    fn histogram_copies_fit_every_gpu() {
        if std::env::var_os("SCANRT_HISTOGRAM_SHAPE").is_some() {
            return;
        }
        for key in DType::ALL {
            let (_, full) = histogram_shape(key, u32::MAX);
            for max_shared in [232_448, 166_912, 101_376, 65_536, 49_152] {
                let (threads, copies) = histogram_shape(key, max_shared);
                assert_eq!(threads, 1024);
                assert!(copies.is_power_of_two() && 32 % copies == 0, "{key:?}: {copies}");
                assert!(
                    histogram_counter_bytes(key) * copies + HISTOGRAM_STATIC_BYTES <= max_shared,
                    "{key:?} at {max_shared}: {copies} copies"
                );
                if max_shared >= 98_304 {
                    assert_eq!(copies, full, "{key:?} at {max_shared}");
                }
            }
        }
    }

    /// Every key type, order and value size compiles for sm_90 (skipped without NVRTC).
    #[test]
    fn every_key_and_value_compiles() {
        let Ok(nvrtc) = Nvrtc::load() else {
            eprintln!("skipped: no NVRTC");
            return;
        };
        let target = nvrtc.target_for(90).unwrap();
        for key in DType::ALL {
            for (descending, value_bytes) in [(false, 0), (true, 1), (false, 2), (true, 4), (false, 8)] {
                let spec = SortSpec {
                    key,
                    descending,
                    value_bytes,
                };
                if let Err(e) = nvrtc.compile(&spec.source(histogram_shape(key, u32::MAX)), target) {
                    panic!("{spec:?}: {}", e.message);
                }
            }
        }
    }
}
