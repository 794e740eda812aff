//! The scan algorithm: what a scan computes (`desc`), its plan (`plan`: validated once,
//! algorithm, kernel set, workspace and launch chosen once), the context's scan entry
//! points (`api`), its GPU kernel sets (`kernels`) and their tuning (`tuning`), the host
//! backend (`host`), the checks of a scan's shape and addresses (`checks`) and the
//! sequential reference (`reference`). This file holds the raw request and what a call
//! reports.

pub(crate) mod api;
pub(crate) mod carry_views;
pub(crate) mod checks;
pub(crate) mod desc;
pub(crate) mod host;
pub(crate) mod kernels;
pub(crate) mod launch;
pub(crate) mod operator_model;
pub(crate) mod out_of_core;
pub(crate) mod plan;
pub(crate) mod reference;
pub(crate) mod strided;
pub(crate) mod summed_area;
pub(crate) mod translation_unit;
pub(crate) mod tuning;

use crate::tables::{Algorithm, Backend, ChoiceReason};
use crate::types::DType;
use desc::ScanDesc;

/// The tile lengths of the kernels a scan may run, in elements (0 where its kernel set
/// has no such kernel): [`Context::tile_lengths`](crate::Context::tile_lengths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileLengths {
    /// The register-staged single pass (every set; also the matrix scan's tiles).
    pub register_staged: u64,
    /// The bulk-copy single pass, for large scans.
    pub bulk: u64,
    /// The one-wave single pass, for scans whose tiles all fit on the device at once.
    pub wave: u64,
    /// The cluster kernel, for scans of at most `cluster_blocks` of its tiles.
    pub cluster: u64,
    /// The most tiles of one cluster the tuning asks for (a device may hold fewer:
    /// the scan then takes the other kernels).
    pub cluster_blocks: u32,
}

/// What a scan call did: where it ran, which algorithm, and why that one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanInfo {
    /// Where the scan ran.
    pub backend: Backend,
    /// The algorithm that ran.
    pub algorithm: Algorithm,
    /// Why that algorithm.
    pub reason: ChoiceReason,
}

/// One scan over raw addresses: host addresses on the host backend, device addresses on
/// a GPU. `output` may equal `input` (in place) when both types have the same size.
#[derive(Debug, Clone, Copy)]
pub struct RawScan {
    /// Address of the input elements.
    pub input: u64,
    /// Their type.
    pub input_dtype: DType,
    /// Address of the output elements (may equal `input`).
    pub output: u64,
    /// Their type (the accumulator type).
    pub output_dtype: DType,
    /// Elements to scan.
    pub n: u64,
    /// The segment flags or keys of a segmented scan (see [`ScanDesc::segments`]); 0 otherwise.
    pub segments: u64,
}

impl RawScan {
    /// An unsegmented scan of `n` elements.
    pub fn new(input: u64, input_dtype: DType, output: u64, output_dtype: DType, n: u64) -> RawScan {
        RawScan {
            input,
            input_dtype,
            output,
            output_dtype,
            n,
            segments: 0,
        }
    }
    /// Bytes of input read.
    pub fn input_bytes(&self) -> u64 {
        self.n * self.input_dtype.size() as u64
    }
    /// Bytes of output written.
    pub fn output_bytes(&self) -> u64 {
        self.n * self.output_dtype.size() as u64
    }
    /// Bytes of segment data this scan reads (0 when unsegmented).
    pub fn segment_bytes(&self, desc: &ScanDesc) -> u64 {
        desc.segments.data_bytes(self.n).unwrap_or(0)
    }
}
