//! The kernel families and the CUDA sources they are written in. A family (the flat
//! scan's sets, the strided scan's, the select kernels, the radix sort) says once what one
//! of its kernel sets is specialised on, its translation unit, how a device loads it and
//! which sets are built in ([`KernelFamily`]); [`LoadedSets`] keeps a device's loaded
//! sets of a family, and `precompile` iterates the registry of families
//! ([`crate::precompile`]'s `FAMILIES`) for kernel packs, the disk cache and CI's compile
//! check. The sources in `kernels/` are embedded by include name; build.rs lists the
//! directory, so a new header needs no entry here.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use cudarc::driver::CudaModule;

use crate::error::Result;
use crate::runtime::device::GpuDevice;
use crate::runtime::nvrtc::KernelSource;
use crate::runtime::Memo;

/// Every header under `kernels/`, as `(include name, text)`.
pub(crate) const KERNEL_HEADERS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_headers.rs"));

/// A family of kernel sets.
pub(crate) trait KernelFamily: 'static {
    /// What one kernel set is specialised on: its key among a device's loaded sets.
    type Spec: Clone + Eq + Hash + Debug + Send + Sync;
    /// A loaded set: its kernels with their occupancy, holding its module.
    type Set: Send + Sync + 'static;
    /// The family's name, in logs and in the compile check's report.
    const NAME: &'static str;

    /// The built-in sets for `sm_<arch>` that `coverage` names (kernel packs hold
    /// `Every`).
    fn built_in(arch: i32, coverage: KernelCoverage) -> Vec<Self::Spec>;

    /// The translation unit of `spec` for a device granting a block `max_shared_per_block`
    /// bytes of shared memory (`u32::MAX` ahead of time: the architectures of the packs).
    fn source(spec: &Self::Spec, max_shared_per_block: u32) -> KernelSource;

    /// Which benchmark chose each of the family's tuning rows for `sm_<arch>`.
    fn tuning_provenance(arch: i32) -> Vec<&'static str>;

    /// Takes the kernels of `spec` out of `module` (compiled from its source) on `dev`,
    /// whose context the caller has entered.
    fn load(dev: &GpuDevice, spec: &Self::Spec, module: Arc<CudaModule>) -> Result<Self::Set>;
}

/// The loaded sets of family `F` on one device (an entry of the engine's
/// `AlgorithmState`), each compiled, or taken from a pack or the disk cache, once. Only
/// loading a set (its first use) enters the device's context: a call whose set is loaded
/// makes no driver call here.
pub(crate) struct LoadedSets<F: KernelFamily> {
    sets: Memo<F::Spec, Arc<F::Set>>,
}

impl<F: KernelFamily> Default for LoadedSets<F> {
    fn default() -> Self {
        LoadedSets { sets: Memo::default() }
    }
}

impl<F: KernelFamily> LoadedSets<F> {
    pub fn get(&self, dev: &GpuDevice, spec: &F::Spec) -> Result<Arc<F::Set>> {
        self.sets.get_or_try_init(spec, || {
            log::debug!("loading {} kernel set {spec:?}", F::NAME);
            let source = F::source(spec, dev.max_shared_per_block);
            let _current = dev.enter()?;
            let module = dev.module(&source)?;
            F::load(dev, spec, module).map(Arc::new)
        })
    }
}

/// A family as the registry lists it: its name, its built-in sources and its tuning
/// rows' provenance.
pub(crate) struct RegisteredFamily {
    pub name: &'static str,
    pub built_in_sources: fn(arch: i32, coverage: KernelCoverage) -> Vec<KernelSource>,
    pub tuning_provenance: fn(arch: i32) -> Vec<&'static str>,
}

impl RegisteredFamily {
    pub const fn of<F: KernelFamily>() -> RegisteredFamily {
        RegisteredFamily {
            name: F::NAME,
            built_in_sources: built_in_sources::<F>,
            tuning_provenance: F::tuning_provenance,
        }
    }
}

fn built_in_sources<F: KernelFamily>(arch: i32, coverage: KernelCoverage) -> Vec<KernelSource> {
    F::built_in(arch, coverage)
        .iter()
        .map(|spec| F::source(spec, u32::MAX))
        .collect()
}

/// Which of the built-in kernel sets a compile ahead of time ([`crate::compile_kernel_sets`])
/// compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelCoverage {
    /// Every set: what a kernel pack or a filled cache holds.
    Every,
    /// One variant of each type pair and operator (of each element type for selections,
    /// each key type for sorts), the variants (direction and segmentation; rule and
    /// output; order and value size) taken in turn from one to the next: every type,
    /// operator and variant compiles, in about a quarter of the time of `Every`. CI's
    /// compile check, on two cores.
    Diagonal,
}

impl KernelCoverage {
    /// Whether the set of variant `variant` (of `variants`) of the `index`-th type pair,
    /// operator or key type is compiled.
    pub fn keeps(self, index: usize, variant: usize, variants: usize) -> bool {
        match self {
            KernelCoverage::Every => true,
            KernelCoverage::Diagonal => variant == index % variants,
        }
    }
}

/// With the `experiments` feature: the colon-separated numbers of the environment
/// variable `var` (the scan kernels' tuning overrides), or `None` when it is unset or
/// holds anything else.
#[cfg(feature = "experiments")]
pub(crate) fn experiment_numbers(var: &str) -> Option<Vec<u32>> {
    std::env::var(var).ok()?.split(':').map(|x| x.parse().ok()).collect()
}

/// With the `experiments` feature: the N comma-separated numbers of the environment
/// variable `var` (a tuning override for benchmarks), or `None` when it is unset. Panics
/// on anything else, so that a mistyped override never runs as if it were absent.
#[cfg(feature = "experiments")]
pub(crate) fn experiment_override<const N: usize>(var: &str) -> Option<[u32; N]> {
    let text = std::env::var(var).ok()?;
    let numbers: Option<Vec<u32>> = text.split(',').map(|x| x.trim().parse().ok()).collect();
    match numbers.and_then(|v| <[u32; N]>::try_from(v).ok()) {
        Some(shape) => Some(shape),
        None => panic!("{var}={text:?}: expected {N} comma-separated numbers"),
    }
}

#[cfg(all(test, feature = "experiments"))]
mod tests {
    use super::experiment_override;

    #[test]
    fn overrides_parse_exactly_n_numbers() {
        std::env::set_var("SCANRT_TEST_OVERRIDE_OK", "1, 2,3");
        assert_eq!(experiment_override::<3>("SCANRT_TEST_OVERRIDE_OK"), Some([1, 2, 3]));
        assert_eq!(experiment_override::<3>("SCANRT_TEST_OVERRIDE_UNSET"), None);
        std::env::set_var("SCANRT_TEST_OVERRIDE_SHORT", "1,2");
        assert!(std::panic::catch_unwind(|| experiment_override::<3>("SCANRT_TEST_OVERRIDE_SHORT")).is_err());
    }
}
