//! Compiling kernels ahead of time, without a GPU: kernel packs, a filled disk cache, and
//! CI's check that the kernel sets compile.

use crate::error::{bail, Result};
use crate::kernels::{KernelCoverage, RegisteredFamily};
use crate::runtime::device::GpuDevice;
use crate::runtime::kernel_pack;
use crate::runtime::nvrtc::{KernelSource, Nvrtc};
use crate::scan::{self, desc::ScanDesc};
use crate::tables::DType;
use crate::{select, sort};

/// Builds the kernel pack for `sm_<arch>` (every built-in kernel set, compiled with NVRTC
/// on every core through the disk kernel cache, so a filled cache packs at once) into
/// `dir`, and returns its path and the number of kernel sets. A
/// context whose device the pack serves loads its kernels from it and needs no NVRTC
/// (`runtime::kernel_pack` says where packs are looked for).
pub fn build_kernel_pack(arch: i32, dir: &std::path::Path) -> Result<(std::path::PathBuf, usize)> {
    use rayon::prelude::*;
    let nvrtc = Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    if !target.cubin || target.arch != arch {
        bail!(
            CompileError,
            "NVRTC {}.{} cannot build CUBIN for sm_{arch}",
            nvrtc.version.0,
            nvrtc.version.1
        );
    }
    let images = built_in_sources(arch, KernelCoverage::Every)
        .par_iter()
        .map(|source| Ok((kernel_pack::key(source, arch), nvrtc.compile_cached(source, target)?)))
        .collect::<Result<Vec<_>>>()?;
    let path = dir.join(kernel_pack::file_name(arch));
    kernel_pack::write(&path, arch, &images)?;
    Ok((path, images.len()))
}

/// Compiles every built-in kernel set for CUDA device `device` into the disk kernel cache
/// ([`crate::kernel_cache_status`]), on every core, and returns how many there are.
pub fn fill_kernel_cache(device: usize) -> Result<usize> {
    let arch = GpuDevice::open(device)?.arch;
    compile_kernel_sets(arch, KernelCoverage::Every).map(|images| images.len())
}

/// Compiles the built-in kernel sets for `sm_<arch>` that `coverage` names with NVRTC,
/// without a GPU, on every core and through the disk kernel cache, and returns each
/// image's size in bytes. CI uses it to check that the kernel sets compile; run with the
/// GPU machine's NVRTC version, it fills a cache directory that machine can use
/// (`scripts/stage.sh`).
pub fn compile_kernel_sets(arch: i32, coverage: KernelCoverage) -> Result<Vec<usize>> {
    use rayon::prelude::*;
    let nvrtc = Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    built_in_sources(arch, coverage)
        .par_iter()
        .map(|source| nvrtc.compile_cached(source, target).map(|image| image.len()))
        .collect()
}

/// The registry of kernel families: every family whose built-in sets kernel packs, a
/// filled cache and CI's compile check hold. A new family is one line here.
const FAMILIES: &[RegisteredFamily] = &[
    RegisteredFamily::of::<scan::kernels::ScanFamily>(),
    RegisteredFamily::of::<scan::strided::kernels::StridedFamily>(),
    RegisteredFamily::of::<select::kernels::SelectFamily>(),
    RegisteredFamily::of::<sort::kernels::SortFamily>(),
];

/// The source of the built-in kernel sets for `sm_<arch>` that `coverage` names, of every
/// registered family.
fn built_in_sources(arch: i32, coverage: KernelCoverage) -> Vec<KernelSource> {
    FAMILIES
        .iter()
        .flat_map(|family| {
            let sources = (family.built_in_sources)(arch, coverage);
            log::debug!("{}: {} built-in kernel sets", family.name, sources.len());
            sources
        })
        .collect()
}

/// Which benchmark chose each tuning row of every kernel family for `sm_<arch>`, as
/// `(family, provenance)`.
pub fn tuning_provenance(arch: i32) -> Vec<(&'static str, &'static str)> {
    FAMILIES
        .iter()
        .flat_map(|family| (family.tuning_provenance)(arch).into_iter().map(|p| (family.name, p)))
        .collect()
}

/// Checks the kernel pack at `path`: its index and every image's checksum. Returns the
/// number of kernel sets.
pub fn check_kernel_pack(path: &std::path::Path) -> Result<usize> {
    kernel_pack::check(path)
}

/// Compiles the kernel sets that scan `input` into `output` as `desc` says (operator,
/// direction, segmented or not; the regular tile shape and, where there is one, the
/// small-scan shape) with NVRTC for `sm_<arch>`, without a GPU, returning the images'
/// total size. Goes through the disk cache, like [`compile_kernel_sets`].
pub fn compile_specialization(input: DType, output: DType, desc: &ScanDesc, arch: i32) -> Result<usize> {
    let types = desc.types(input, output);
    types.check(desc.op)?;
    let nvrtc = Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    let (regular, small) = scan::kernels::Specialization::all_for(arch, types, desc);
    let mut bytes = 0;
    for spec in std::iter::once(regular).chain(small) {
        bytes += nvrtc.compile_cached(&spec.source(), target)?.len();
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered family has built-in sets on each architecture of the packs, and
    /// says where each of its tuning rows comes from (a benchmark, or the row it copies).
    #[test]
    fn every_family_has_built_in_sets_and_tuning_provenance() {
        for arch in [80, 90, 100] {
            for family in FAMILIES {
                let sources = (family.built_in_sources)(arch, KernelCoverage::Diagonal);
                assert!(!sources.is_empty(), "{} has no built-in sets on sm_{arch}", family.name);
                let provenance = (family.tuning_provenance)(arch);
                assert!(!provenance.is_empty(), "{} has no tuning rows", family.name);
                assert!(
                    provenance.iter().all(|p| p.len() > 20),
                    "{}: {provenance:?}",
                    family.name
                );
            }
        }
    }
}
