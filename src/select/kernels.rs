//! The select kernels: one kernel per (element type, output type, rule, output form),
//! its CUDA translation unit, and the loaded kernels of a device.

use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::kernels::KERNEL_HEADERS;
use crate::runtime::device::{GpuDevice, LoadedKernel};
use crate::runtime::nvrtc::KernelSource;
use crate::runtime::Memo;
use crate::select::desc::{Comparison, SelectOutput, Selection};
use crate::types::DType;

/// The tile shape of the select kernels: 256 data threads (and a look-back warp) of 16
/// elements (8 for 8-byte elements), one 16-byte vector per thread per round, persistent
/// blocks. Chosen by `cargo bench --bench compare -- --select` on the H100 (sm_90); every
/// architecture takes it until a row of its own is measured.
pub(crate) const THREADS: u32 = 256;
/// Blocks per SM the kernels are compiled for (`__launch_bounds__`).
/// Blocks per SM the kernels are compiled for (`__launch_bounds__`): 4 (56 registers),
/// 3 for run-length encodings, whose two shared buffers leave room for 3 anyway.
fn min_blocks_per_sm(form: SelectOutput) -> u32 {
    if form == SelectOutput::RunLengths {
        3
    } else {
        4
    }
}
fn items(dtype: DType) -> u32 {
    if dtype.size() == 8 {
        8
    } else {
        16
    }
}
/// Look-back slots per lane, and the spin before sleeping and the sleep of a wait: as the
/// scan's one-wave kernel (one block per tile: every tile publishes at about the same time).
const LOOKBACK_SLOTS_PER_LANE: u32 = 2;
const SPIN_BEFORE_SLEEP: u32 = 16;
const SLEEP_NS: u32 = 32;

/// Elements per tile of a selection over `dtype`.
pub(crate) fn tile_elems(dtype: DType) -> u64 {
    (THREADS * items(dtype)) as u64
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

impl SelectSpec {
    /// Dynamic shared memory of the kernel: two tile buffers of compacted slots (and, for
    /// a run-length encoding, its run ends' positions).
    pub fn shared_bytes(&self) -> u32 {
        let slot = match self.form {
            SelectOutput::Indices => self.output.size(),
            _ => self.dtype.size(),
        } as u64;
        let extra = if self.form == SelectOutput::RunLengths { 4 } else { 0 };
        (2 * tile_elems(self.dtype) * (slot + extra)) as u32
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
        let items = items(self.dtype);
        let min_blocks = min_blocks_per_sm(self.form);
        let text = format!(
            r#"#include "device/select.cuh"
{prelude}
extern "C" __global__ void __launch_bounds__({THREADS} + 32, {min_blocks}) scanrt_select(SCANRT_SELECT_PARAMS) {{
    select_tile_pass<{t}, {rule}, {o}, {THREADS}, {items}, {LOOKBACK_SLOTS_PER_LANE}, {SPIN_BEFORE_SLEEP}, {SLEEP_NS}, {mode}>(
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

/// The select kernels of one device, each compiled (or taken from the disk cache) once.
#[derive(Default)]
pub(crate) struct SelectKernels {
    kernels: Memo<SelectSpec, Arc<SelectKernel>>,
}

impl SelectKernels {
    pub fn get(&self, dev: &GpuDevice, spec: &SelectSpec) -> Result<Arc<SelectKernel>> {
        self.kernels.get_or_try_init(spec, || {
            let source = spec.source();
            let _current = dev.enter()?;
            let module = dev.module(&source)?;
            let kernel = dev.kernel(&module, "scanrt_select", THREADS + 32, spec.shared_bytes())?;
            Ok(Arc::new(SelectKernel {
                kernel,
                _module: module,
            }))
        })
    }
}

/// Every built-in select kernel for precompiling (packs, the disk cache): each element
/// type with byte flags, bit flags, nonzero and run heads, values and indices, and both
/// partitions by byte flags.
pub(crate) fn every_select_spec() -> Vec<SelectSpec> {
    let mut all = Vec::new();
    for dtype in DType::ALL.into_iter().filter(|t| !t.is_half()) {
        for rule in [
            RuleKey::ByteFlags,
            RuleKey::BitFlags,
            RuleKey::NonZero,
            RuleKey::RunHeads,
        ] {
            all.push(SelectSpec {
                dtype,
                output: dtype,
                rule: rule.clone(),
                form: SelectOutput::Values,
            });
            all.push(SelectSpec {
                dtype,
                output: DType::U64,
                rule,
                form: SelectOutput::Indices,
            });
        }
        for lengths in [DType::U32, DType::U64] {
            all.push(SelectSpec {
                dtype,
                output: lengths,
                rule: RuleKey::RunEnds,
                form: SelectOutput::RunLengths,
            });
        }
        for form in [SelectOutput::PartitionReversed, SelectOutput::PartitionTwo] {
            all.push(SelectSpec {
                dtype,
                output: dtype,
                rule: RuleKey::ByteFlags,
                form,
            });
        }
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
        for dtype in DType::ALL.into_iter().filter(|t| !t.is_half()) {
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
