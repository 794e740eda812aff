//! scanrt: an embeddable GPU prefix-scan runtime.
//!
//! The Rust API ([`Context`], [`Stream`], [`Buffer`], [`ScanDesc`], [`ScanPlan`]) is the
//! real one; the C ABI in [`ffi`] is a thin checked shell over it. See
//! `docs/ARCHITECTURE.md`.
//!
//! ```no_run
//! use scanrt::{Backend, Buffer, Context, Op, ScanDesc};
//! let ctx = Context::new(Backend::Auto, 0)?;
//! let stream = ctx.new_stream()?;
//! let input = Buffer::from_slice(&ctx, &stream, &[1u32, 2, 3, 4])?;
//! let output = Buffer::new(&ctx, scanrt::DType::U32, 4)?;
//! ctx.scan(&stream, &input, &output, &ScanDesc::inclusive(Op::Sum))?;
//! assert_eq!(output.download::<u32>(&stream, 4)?, vec![1, 3, 6, 10]);
//! # Ok::<(), scanrt::Error>(())
//! ```
#![deny(missing_docs)]

#[macro_use]
mod c_enum;
mod tables;

mod array;
mod buffer;
mod context;
#[cfg(feature = "nccl")]
mod distributed;
mod engine;
// The contract has a header of its own (kernels/generated/contract.cuh); keep it out of
// the C ABI's:
/// cbindgen:ignore
pub mod contract;
mod error;
pub mod ffi;
mod kernels;
mod operator;
mod ops;
pub mod recipes;
mod runtime;
mod scalar;
mod scan;
mod select;
mod sort;
mod stream;
mod types;

pub use array::{ArrayView, MAX_DIMS};
pub use buffer::Buffer;
pub use context::Context;
#[cfg(feature = "nccl")]
pub use distributed::{Communicator, GpuPart, MultiGpu, OperatorPart};
pub use error::{Error, Result};
/// The Rust types of f16 and bf16 elements (`half::f16`, `half::bf16`).
pub use half;
pub use operator::{
    compile_operator, HostCombine, HostLoad, HostOperator, HostStore, Operator, OperatorDesc, OperatorScan,
};
pub use ops::{Accumulator, OpDefinition};
pub use runtime::workspace::Workspace;
/// The most streams whose look-back workspaces a context keeps (least recently used go first).
pub use runtime::workspace::POOL_STREAMS as MAX_POOLED_STREAMS;
pub use scalar::{InitValue, Scalar};
pub use scan::carry_views::CarryViews;
pub use scan::desc::{ScanDesc, Segments};
pub use scan::operator_model::Carries;
pub use scan::out_of_core::HostScanOptions;
pub use scan::plan::{ScanIo, ScanPlan};
pub use scan::reference::{reference_scan, reference_scan_segmented};
pub use scan::{RawScan, ScanInfo, TileLengths};
pub use select::desc::{Comparison, Predicate, SelectDesc, SelectOutput, Selection};
pub use select::SelectArrays;
pub use sort::desc::SortDesc;
pub use sort::SortArrays;
pub use stream::Stream;
pub use tables::{
    Algorithm, Backend, ChoiceReason, DType, Direction, LogLevel, Op, ScanrtStatus, SegmentKind, SelectRule, SortOrder,
};
pub use types::{check_types, DTypeInfo, Narrow, NumberKind, ScanTypes, Widen, NARROWING_TYPES, TYPE_PAIRS};

/// The directory of the on-disk kernel cache, or why there is none (turned off, or a
/// directory refused as not private: see `SCANRT_CACHE_DIR` in the README). Without one,
/// every process compiles the kernels it uses.
pub fn kernel_cache_status() -> std::result::Result<std::path::PathBuf, String> {
    runtime::kernel_cache::directory()
}

/// Builds the kernel pack for `sm_<arch>` (every built-in kernel set, compiled with NVRTC
/// on every core) into `dir`, and returns its path and the number of kernel sets. A
/// context whose device the pack serves loads its kernels from it and needs no NVRTC
/// (`runtime::kernel_pack` says where packs are looked for).
pub fn build_kernel_pack(arch: i32, dir: &std::path::Path) -> Result<(std::path::PathBuf, usize)> {
    use rayon::prelude::*;
    let nvrtc = runtime::nvrtc::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    if !target.cubin || target.arch != arch {
        error::bail!(
            CompileError,
            "NVRTC {}.{} cannot build CUBIN for sm_{arch}",
            nvrtc.version.0,
            nvrtc.version.1
        );
    }
    let images = every_built_in_source(arch)
        .par_iter()
        .map(|source| Ok((runtime::kernel_pack::key(source, arch), nvrtc.compile(source, target)?)))
        .collect::<Result<Vec<_>>>()?;
    let path = dir.join(runtime::kernel_pack::file_name(arch));
    runtime::kernel_pack::write(&path, arch, &images)?;
    Ok((path, images.len()))
}

/// Compiles every built-in kernel set for CUDA device `device` into the disk kernel cache
/// ([`kernel_cache_status`]), on every core, and returns how many there are.
pub fn fill_kernel_cache(device: usize) -> Result<usize> {
    let arch = runtime::device::GpuDevice::open(device)?.arch;
    compile_kernel_sets(arch).map(|images| images.len())
}

/// Compiles every built-in kernel set for `sm_<arch>` with NVRTC, without a GPU, on every
/// core and through the disk kernel cache, and returns each image's size in bytes. CI
/// uses it to check that every kernel set compiles; run with the GPU machine's NVRTC
/// version, it fills a cache directory that machine can use (`scripts/stage.sh`).
pub fn compile_kernel_sets(arch: i32) -> Result<Vec<usize>> {
    use rayon::prelude::*;
    let nvrtc = runtime::nvrtc::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    every_built_in_source(arch)
        .par_iter()
        .map(|source| nvrtc.compile_cached(source, target).map(|image| image.len()))
        .collect()
}

/// The source of every built-in kernel set for `sm_<arch>`: the scan's (flat and
/// strided), the select kernels' and the sort's.
fn every_built_in_source(arch: i32) -> Vec<runtime::nvrtc::KernelSource> {
    let scans = scan::kernels::every_specialization(arch)
        .into_iter()
        .map(|s| s.source());
    let selects = select::kernels::every_select_spec().into_iter().map(|s| s.source());
    let sorts = sort::kernels::every_sort_spec().into_iter().map(|s| s.source());
    let strided = scan::strided::kernels::every_strided_spec()
        .into_iter()
        .map(|s| s.source());
    scans.chain(strided).chain(selects).chain(sorts).collect()
}

/// Checks the kernel pack at `path`: its index and every image's checksum. Returns the
/// number of kernel sets.
pub fn check_kernel_pack(path: &std::path::Path) -> Result<usize> {
    runtime::kernel_pack::check(path)
}

/// Compiles the kernel sets that scan `input` into `output` as `desc` says (operator,
/// direction, segmented or not; the regular tile shape and, where there is one, the
/// small-scan shape) with NVRTC for `sm_<arch>`, without a GPU, returning the images'
/// total size. Goes through the disk cache, like [`compile_kernel_sets`].
pub fn compile_specialization(input: DType, output: DType, desc: &ScanDesc, arch: i32) -> Result<usize> {
    let types = desc.types(input, output);
    types.check(desc.op)?;
    let nvrtc = runtime::nvrtc::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    let (regular, small) = scan::kernels::Specialization::all_for(arch, types, desc);
    let mut bytes = 0;
    for spec in std::iter::once(regular).chain(small) {
        bytes += nvrtc.compile_cached(&spec.source(), target)?.len();
    }
    Ok(bytes)
}
