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
mod plans;
mod precompile;
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
pub use kernels::KernelCoverage;
pub use operator::{
    compile_operator, compile_operator_set, HostCombine, HostLoad, HostOperator, HostStore, Operator, OperatorDesc,
    OperatorScan,
};
pub use ops::{Accumulator, OpDefinition};
pub use plans::{RunLengthArrays, RunLengthPlan, SelectPlan, SortPlan, SummedAreaPlan};
pub use precompile::{
    build_kernel_pack, check_kernel_pack, compile_kernel_sets, compile_specialization, fill_kernel_cache,
    tuning_provenance,
};
pub use runtime::kernel_pack::add_directory as add_kernel_pack_dir;
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
    Algorithm, Backend, ChoiceReason, DType, Direction, LogLevel, Op, Primitive, ScanrtStatus, SegmentKind, SelectRule,
    SortOrder,
};
pub use types::{check_types, DTypeInfo, Narrow, NumberKind, ScanTypes, Widen, NARROWING_TYPES, TYPE_PAIRS};

/// The CUDA device ordinal of the memory at `addr` (device memory, or managed or mapped
/// host memory of one device), or `None` for memory the driver places on no one device:
/// how a caller that receives bare device pointers (JAX's FFI) finds their context.
pub fn device_of_pointer(addr: u64) -> Result<Option<usize>> {
    runtime::cu::init()?;
    let info = runtime::cu::pointer_info(addr)?;
    Ok(usize::try_from(info.device_ordinal).ok())
}

/// The directory of the on-disk kernel cache, or why there is none (turned off, or a
/// directory refused as not private: see `SCANRT_CACHE_DIR` in the README). Without one,
/// every process compiles the kernels it uses.
pub fn kernel_cache_status() -> std::result::Result<std::path::PathBuf, String> {
    runtime::kernel_cache::directory()
}
