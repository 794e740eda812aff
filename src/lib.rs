//! scanrt: an embeddable GPU prefix-scan runtime.
//!
//! The Rust API ([`Context`], [`Stream`], [`Buffer`], [`ScanDesc`]) is the real one; the
//! C ABI in [`ffi`] is a thin checked shell over it. See `docs/ARCHITECTURE.md`.
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

mod context;
mod error;
pub mod ffi;
mod gpu;
mod host;
mod ops;
mod reference;
mod scan;
mod types;

pub use context::{Backend, Buffer, Context, ScanInfo, Stream};
pub use error::{Error, Result, ScanrtStatus};
pub use gpu::launch::Workspace;
/// The most streams whose look-back workspaces a context keeps (least recently used go first).
pub use gpu::workspace::POOL_STREAMS as MAX_POOLED_STREAMS;
pub use ops::{Accumulator, Widen};
pub use reference::{reference_scan, reference_scan_segmented};
pub use scan::RawScan;
pub use types::{check_types, Algorithm, ChoiceReason, DType, Direction, InitValue, Op, Scalar, ScanDesc, Segments};

/// The directory of the on-disk kernel cache, or why there is none (turned off, or a
/// directory refused as not private: see `SCANRT_CACHE_DIR` in the README). Without one,
/// every process compiles the kernels it uses.
pub fn kernel_cache_status() -> std::result::Result<std::path::PathBuf, String> {
    gpu::kernel_cache::directory()
}

/// Every (input, output) type pair scanrt accepts.
pub const TYPE_PAIRS: [(DType, DType); 14] = {
    use DType::*;
    [
        (U8, I32),
        (U8, U32),
        (U8, I64),
        (U8, U64),
        (I32, I32),
        (I32, I64),
        (U32, U32),
        (U32, U64),
        (U32, I64),
        (I64, I64),
        (U64, U64),
        (F32, F32),
        (F32, F64),
        (F64, F64),
    ]
};

/// Compiles the kernel specialisations that scan `input` into `output` as `desc` says
/// (operator, direction, segmented or not; the regular tile shape and, where there is one,
/// the small-scan shape) with NVRTC for `sm_<arch>`, without a GPU, returning the images'
/// total size. Used by CI to check that every specialisation compiles.
/// Goes through the disk cache, so a run with the GPU machine's NVRTC version fills a
/// cache directory that machine can use (`scripts/stage.sh`).
pub fn compile_specialization(input: DType, output: DType, desc: &ScanDesc, arch: i32) -> Result<usize> {
    check_types(input, output, desc.op)?;
    let nvrtc = gpu::jit::Nvrtc::load()?;
    let target = nvrtc.target_for(arch)?;
    let (regular, small) = gpu::jit::Specialization::all_for(arch, input, output, desc);
    let mut bytes = 0;
    for spec in std::iter::once(regular).chain(small) {
        bytes += nvrtc.compile_cached(&spec, target)?.len();
    }
    Ok(bytes)
}
