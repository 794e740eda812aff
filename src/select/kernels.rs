//! The select kernels: one kernel per (element type, output type, rule, output form),
//! its CUDA translation unit, and the loaded kernels of a device.

use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::kernels::{KernelCoverage, KernelFamily, KERNEL_HEADERS};
use crate::runtime::device::{GpuDevice, LoadedKernel};
use crate::runtime::nvrtc::KernelSource;
use crate::select::desc::{Comparison, SelectOutput, Selection};
use crate::types::DType;

/// The select kernels' tile shape: data threads (the block adds a look-back warp),
/// elements per thread, blocks per SM it is compiled for (`__launch_bounds__`), look-back
/// slots per lane, and the polls before a waiting look-back sleeps between polls, and the
/// sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    pub threads: u32,
    pub items: u32,
    pub min_blocks: u32,
    pub lookback_slots: u32,
    pub spin_before_sleep: u32,
    pub sleep_ns: u32,
}

/// What decides the kept elements, as the kernel text spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RuleKey {
    ByteFlags,
    BitFlags,
    Compare(Comparison),
    NonZero,
    NotNan,
    RunHeads,
    /// The last element of each run (a run-length encoding).
    RunEnds,
    /// A user predicate: its source and function.
    Predicate(Arc<str>, Arc<str>),
}

impl RuleKey {
    pub fn of(selection: &Selection, output: SelectOutput) -> RuleKey {
        match selection {
            Selection::RunHeads if output == SelectOutput::RunLengths => RuleKey::RunEnds,
            Selection::ByteFlags => RuleKey::ByteFlags,
            Selection::BitFlags => RuleKey::BitFlags,
            Selection::Compare(c, _) => RuleKey::Compare(*c),
            Selection::NonZero => RuleKey::NonZero,
            Selection::NotNan => RuleKey::NotNan,
            Selection::RunHeads => RuleKey::RunHeads,
            Selection::Predicate(p) => RuleKey::Predicate(p.source.as_str().into(), p.function.as_str().into()),
        }
    }
}

/// One select kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SelectSpec {
    pub dtype: DType,
    /// The output's type: the element type, or the indices' or run lengths' (`U32`, `U64`).
    pub output: DType,
    pub rule: RuleKey,
    pub form: SelectOutput,
}

/// Which tuning row a select kernel takes: its element width and what it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TuningClass {
    /// 8-byte elements kept by a predicate (not partitions).
    WidePredicate,
    /// Other 8-byte elements.
    Wide,
    /// Run-length encodings of 4-byte elements.
    RunLengths4,
    /// Run-length encodings of narrower ones.
    RunLengthsNarrow,
    /// Partitions of 4-byte elements by flags.
    FlagPartition4,
    /// Everything else.
    Regular,
}

/// One tuning row: data threads, elements per thread (`__launch_bounds__`' blocks per
/// SM beside them), and the benchmark that chose them. Bound everywhere: registers
/// (blocks per SM, so bytes in flight) and the two shared tile buffers.
struct TuningRow {
    class: TuningClass,
    threads: u32,
    items: u32,
    min_blocks: u32,
    provenance: &'static str,
}

/// Every architecture takes these rows until rows of its own are measured.
const TUNING: &[TuningRow] = &[
    TuningRow { class: TuningClass::WidePredicate, threads: 256, items: 6, min_blocks: 5, provenance: "H200, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep" },
    TuningRow { class: TuningClass::Wide, threads: 256, items: 8, min_blocks: 4, provenance: "H200, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep" },
    TuningRow { class: TuningClass::RunLengths4, threads: 192, items: 20, min_blocks: 3, provenance: "H200, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep" },
    TuningRow { class: TuningClass::RunLengthsNarrow, threads: 256, items: 16, min_blocks: 3, provenance: "H200, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep" },
    TuningRow { class: TuningClass::FlagPartition4, threads: 256, items: 12, min_blocks: 5, provenance: "H200, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep (40 registers; rules that read the elements spill there)" },
    TuningRow { class: TuningClass::Regular, threads: 256, items: 16, min_blocks: 4, provenance: "H100, bench_compare --select at 2^28, SCANRT_SELECT_SHAPE sweep" },
];

impl SelectSpec {
    /// The kernel's tile shape: its tuning row's, one look-back slot per lane (the wait is
    /// for predecessors that have drawn their tile but not yet published), 16 polls
    /// before sleeping 32 ns. With the `experiments` feature,
    /// `SCANRT_SELECT_SHAPE=threads,items,min_blocks,slots,spin,sleep` replaces it (items
    /// for elements of at most 4 bytes; 8-byte elements take half).
    pub fn tile_shape(&self) -> TileShape {
        #[cfg(feature = "experiments")]
        if let Some([threads, items, min_blocks, lookback_slots, spin_before_sleep, sleep_ns]) =
            crate::kernels::experiment_override("SCANRT_SELECT_SHAPE")
        {
            return TileShape {
                threads,
                items: if self.dtype.size() == 8 { items / 2 } else { items },
                min_blocks,
                lookback_slots,
                spin_before_sleep,
                sleep_ns,
            };
        }
        let class = self.tuning_class();
        let row = TUNING.iter().find(|r| r.class == class).expect("every class has a row");
        TileShape {
            threads: row.threads,
            items: row.items,
            min_blocks: row.min_blocks,
            lookback_slots: 1,
            spin_before_sleep: 16,
            sleep_ns: 32,
        }
    }

    fn tuning_class(&self) -> TuningClass {
        let runs = self.form == SelectOutput::RunLengths;
        match self.dtype.size() {
            8 if !self.partition() && self.by_predicate() => TuningClass::WidePredicate,
            8 => TuningClass::Wide,
            4 if runs => TuningClass::RunLengths4,
            _ if runs => TuningClass::RunLengthsNarrow,
            4 if self.by_flags() && self.partition() => TuningClass::FlagPartition4,
            _ => TuningClass::Regular,
        }
    }

    /// Elements per tile.
    pub fn tile_elems(&self) -> u64 {
        let shape = self.tile_shape();
        (shape.threads * shape.items) as u64
    }

    /// Whether the kernel draws a block's next ticket before it takes its tile
    /// (`EARLY_TICKET` in select.cuh) rather than after: selections by flags, partitions
    /// and those of 8-byte elements, other than run-length encodings. Chosen by
    /// `bench_compare --select` on the H200 at 2^28 (each rule, u32, f32 and u64, the
    /// ticket drawn before and after in one run). Bound: an early ticket starts the next
    /// tile's loads sooner but is held longer before its tile publishes. With the
    /// `experiments` feature, `SCANRT_SELECT_EARLY_TICKET=0|1` replaces it.
    fn early_ticket(&self) -> bool {
        #[cfg(feature = "experiments")]
        if let Some([early]) = crate::kernels::experiment_override("SCANRT_SELECT_EARLY_TICKET") {
            return early != 0;
        }
        self.form != SelectOutput::RunLengths && (self.by_flags() || self.partition() || self.dtype.size() == 8)
    }

    fn by_flags(&self) -> bool {
        matches!(self.rule, RuleKey::ByteFlags | RuleKey::BitFlags)
    }

    fn by_predicate(&self) -> bool {
        matches!(
            self.rule,
            RuleKey::Compare(_) | RuleKey::NonZero | RuleKey::NotNan | RuleKey::Predicate(..)
        )
    }

    fn partition(&self) -> bool {
        matches!(self.form, SelectOutput::PartitionReversed | SelectOutput::PartitionTwo)
    }
}

impl SelectSpec {
    /// Dynamic shared memory of the kernel: two tile buffers of compacted slots (and, for
    /// a run-length encoding, its run ends' positions).
    pub fn shared_bytes(&self) -> u32 {
        let slot = match self.form {
            SelectOutput::Indices => self.output.size(),
            _ => self.dtype.size(),
        } as u64;
        let extra = if self.form == SelectOutput::RunLengths { 4 } else { 0 };
        (2 * self.tile_elems() * (slot + extra)) as u32
    }

    /// The translation unit: the rule as a type, and one extern "C" kernel.
    pub fn source(&self) -> KernelSource {
        let t = self.dtype.info().cuda;
        let o = self.output.info().cuda;
        let (prelude, rule) = match &self.rule {
            RuleKey::ByteFlags => (String::new(), "KeepByteFlags".to_string()),
            RuleKey::BitFlags => (String::new(), "KeepBitFlags".to_string()),
            RuleKey::RunHeads => (String::new(), "KeepRunHeads".to_string()),
            RuleKey::RunEnds => (String::new(), "KeepRunEnds".to_string()),
            RuleKey::Compare(c) => (predicate(t, c.cuda()), "KeepIf<Pred>".into()),
            RuleKey::NonZero => (predicate(t, "x != T(0)"), "KeepIf<Pred>".into()),
            // `x == x` only fails for NaN (integers fold it away).
            RuleKey::NotNan => (predicate(t, "x == x"), "KeepIf<Pred>".into()),
            RuleKey::Predicate(source, function) => (
                format!("{source}\n{}", predicate(t, &format!("::{function}(x)"))),
                "KeepIf<Pred>".into(),
            ),
        };
        let mode = match self.form {
            SelectOutput::Values => "SCANRT_SELECT_VALUES",
            SelectOutput::Indices => "SCANRT_SELECT_INDICES",
            SelectOutput::PartitionReversed => "SCANRT_PARTITION_REVERSED",
            SelectOutput::PartitionTwo => "SCANRT_PARTITION_TWO",
            SelectOutput::RunLengths => "SCANRT_RUN_LENGTHS",
        };
        let TileShape {
            threads,
            items,
            min_blocks,
            lookback_slots,
            spin_before_sleep,
            sleep_ns,
        } = self.tile_shape();
        let early_ticket = self.early_ticket();
        let text = format!(
            r#"#include "device/select.cuh"
{prelude}
extern "C" __global__ void __launch_bounds__({threads} + 32, {min_blocks}) scanrt_select(SCANRT_SELECT_PARAMS) {{
    select_tile_pass<{t}, {rule}, {o}, {threads}, {items}, {lookback_slots}, {spin_before_sleep}, {sleep_ns}, {mode}, {early_ticket}>(
        (const {t}*)input, SelectSource{{(const void*)selection, operand_bits, n}}, ({o}*)output, (void*)second,
        (unsigned long long*)num_selected, n, capacity, flags, (void*)workspace, status_capacity,
        FaultSink{{(FaultReport*)report, call}});
}}
"#
        );
        KernelSource {
            name: format!("select {:?} {:?} {:?}", self.dtype, self.output, self.form),
            text,
            headers: KERNEL_HEADERS,
        }
    }
}

/// A predicate type over elements of CUDA type `t`: `test` is `expression` of `x` and
/// `operand`.
fn predicate(t: &str, expression: &str) -> String {
    format!(
        "struct Pred {{\n    typedef {t} T;\n    static SCANRT_DEVICE bool test(T x, T operand, long long) {{ (void)operand; return {expression}; }}\n}};\n"
    )
}

/// A loaded select kernel and its module.
pub(crate) struct SelectKernel {
    pub kernel: LoadedKernel,
    _module: Arc<CudaModule>,
}

/// The select kernels: one kernel a set, a block of the tile's threads and a look-back
/// warp.
pub(crate) struct SelectFamily;

impl KernelFamily for SelectFamily {
    type Spec = SelectSpec;
    type Set = SelectKernel;
    const NAME: &'static str = "select";

    fn built_in(_arch: i32, coverage: KernelCoverage) -> Vec<SelectSpec> {
        built_in_select_specs(coverage)
    }

    fn source(spec: &SelectSpec, _max_shared_per_block: u32) -> KernelSource {
        spec.source()
    }

    fn tuning_provenance(_arch: i32) -> Vec<&'static str> {
        TUNING.iter().map(|row| row.provenance).collect()
    }

    fn load(dev: &GpuDevice, spec: &SelectSpec, module: Arc<CudaModule>) -> Result<SelectKernel> {
        let threads = spec.tile_shape().threads;
        let kernel = dev.kernel(&module, "scanrt_select", threads + 32, spec.shared_bytes())?;
        Ok(SelectKernel {
            kernel,
            _module: module,
        })
    }
}

/// The built-in select kernels that `coverage` asks for: each element type with byte
/// flags, bit flags, nonzero and run heads, values and indices, run lengths of both
/// widths, and both partitions by byte flags.
fn built_in_select_specs(coverage: KernelCoverage) -> Vec<SelectSpec> {
    let mut all = Vec::new();
    for (index, dtype) in DType::ALL.into_iter().enumerate() {
        let spec = |output, rule, form| SelectSpec {
            dtype,
            output,
            rule,
            form,
        };
        let mut variants = Vec::new();
        for rule in [
            RuleKey::ByteFlags,
            RuleKey::BitFlags,
            RuleKey::NonZero,
            RuleKey::RunHeads,
        ] {
            variants.push(spec(dtype, rule.clone(), SelectOutput::Values));
            variants.push(spec(DType::U64, rule, SelectOutput::Indices));
        }
        for lengths in [DType::U32, DType::U64] {
            variants.push(spec(lengths, RuleKey::RunEnds, SelectOutput::RunLengths));
        }
        for form in [SelectOutput::PartitionReversed, SelectOutput::PartitionTwo] {
            variants.push(spec(dtype, RuleKey::ByteFlags, form));
        }
        let count = variants.len();
        all.extend(
            variants
                .into_iter()
                .enumerate()
                .filter(|&(variant, _)| coverage.keeps(index, variant, count))
                .map(|(_, spec)| spec),
        );
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::nvrtc::Nvrtc;

    /// Every rule and output form compiles for sm_90 (skipped without NVRTC; CI has it).
    #[test]
    fn every_rule_and_form_compiles() {
        let Ok(nvrtc) = Nvrtc::load() else {
            eprintln!("skipped: no NVRTC");
            return;
        };
        let target = nvrtc.target_for(90).unwrap();
        let predicate = |t: &str| {
            RuleKey::Predicate(
                format!("__device__ bool positive({t} x) {{ return x > ({t})0; }}").into(),
                "positive".into(),
            )
        };
        let mut specs = Vec::new();
        for dtype in DType::ALL {
            let rules = [
                RuleKey::ByteFlags,
                RuleKey::BitFlags,
                RuleKey::Compare(Comparison::GreaterEqual),
                RuleKey::NonZero,
                RuleKey::NotNan,
                RuleKey::RunHeads,
                predicate(dtype.info().cuda),
            ];
            for rule in rules {
                specs.push(SelectSpec {
                    dtype,
                    output: dtype,
                    rule,
                    form: SelectOutput::Values,
                });
            }
            for (form, output, rule) in [
                (SelectOutput::Indices, DType::U32, RuleKey::RunHeads),
                (SelectOutput::PartitionReversed, dtype, RuleKey::RunHeads),
                (SelectOutput::PartitionTwo, dtype, RuleKey::RunHeads),
                (SelectOutput::RunLengths, DType::U32, RuleKey::RunEnds),
                (SelectOutput::RunLengths, DType::U64, RuleKey::RunEnds),
            ] {
                specs.push(SelectSpec {
                    dtype,
                    output,
                    rule,
                    form,
                });
            }
        }
        for spec in specs {
            if let Err(e) = nvrtc.compile(&spec.source(), target) {
                panic!("{spec:?}: {}", e.message);
            }
        }
    }
}
