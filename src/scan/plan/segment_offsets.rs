//! Segments given by offsets, on the GPU: a prepass of the kernel set's
//! `scanrt_segment_offsets` turns them into the bit flags the segmented kernels read, in
//! memory of scanrt's pool that lives for the call (stream-ordered, so graphs capture
//! it). The flags cost the scan n/8 bytes written and read beside its 2n elements. With
//! carries per segment the prepass also writes the segment table after the flags, and
//! the totals of empty segments.

use crate::contract::{self, StateBytes};
use crate::error::Result;
use crate::runtime::cu::{self, CUdeviceptr, CUstream};
use crate::runtime::device::GpuDevice;
use crate::scan::kernels::ScanKernels;
use crate::scan::translation_unit::KernelKind;
use crate::tables::DType;

/// The parameters of `scanrt_segment_offsets` (kernels/device/segment_offsets.cuh), in
/// the order of its signature.
#[repr(C)]
#[derive(Clone, Copy)]
struct SegmentOffsetsParams {
    offsets: u64,
    count: i64,
    n: i64,
    bits: u64,
    /// `contract::OFFSETS_*`.
    kind: u32,
    /// The scan's `FLAG_*` bits (`FLAG_SEGMENT_CARRIES`, the initial value's).
    flags: u32,
    init_bits: u64,
    carry_out: u64,
    /// The scalar initial value of states other than 4 or 8 bytes.
    init: StateBytes,
}

/// What the prepass needs of a scan with carries per segment.
#[derive(Clone, Copy)]
pub(super) struct SegmentCarryParams {
    /// The scan's launch flags.
    pub flags: u32,
    /// The scan's `init_bits` and `carry_out`.
    pub init_bits: u64,
    pub carry_out: u64,
    pub init: StateBytes,
}

/// Bit flags made from offsets, in scanrt's pool until released.
pub(super) struct OffsetHeads {
    pub bits: CUdeviceptr,
}

impl OffsetHeads {
    /// Queues on `stream` the bit flags of the `count` offsets of `dtype` at `offsets`
    /// for a scan of `n` elements: zeroed words, then one bit per offset below n. With
    /// `carries` (a scan with `FLAG_SEGMENT_CARRIES`), also the segment table after the
    /// flags and the totals of empty segments.
    ///
    /// # Safety
    /// The device's context is current, `stream` is one of its live streams, and
    /// `offsets` holds `count` offsets of `dtype` (checked by the plan).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn queue(
        dev: &GpuDevice,
        kernels: &ScanKernels,
        dtype: DType,
        count: u64,
        offsets: u64,
        n: u64,
        carries: Option<SegmentCarryParams>,
        stream: CUstream,
    ) -> Result<OffsetHeads> {
        let flag_bytes = n.div_ceil(32) as usize * 4;
        let bytes = match carries {
            Some(_) => contract::segment_table_offset(n) as usize + std::mem::size_of::<contract::SegmentTable>(),
            None => flag_bytes,
        };
        let bits = dev.scratch.alloc(bytes.max(4), stream)?;
        // The zeroed flags, then the prepass (with carries the table is written whatever
        // the count).
        let queued = || -> Result<()> {
            if flag_bytes > 0 {
                cu::zero_async(bits, flag_bytes, stream)?;
            }
            if count > 0 || carries.is_some() {
                let kernel = kernels
                    .get(KernelKind::SegmentOffsets)
                    .expect("segmented kernel sets have the offsets kernel");
                let params = SegmentOffsetsParams {
                    offsets,
                    count: count as i64,
                    n: n as i64,
                    bits,
                    kind: match dtype {
                        DType::U32 => contract::OFFSETS_U32,
                        DType::I32 => contract::OFFSETS_I32,
                        _ => contract::OFFSETS_64,
                    },
                    flags: carries.map_or(0, |c| c.flags),
                    init_bits: carries.map_or(0, |c| c.init_bits),
                    carry_out: carries.map_or(0, |c| c.carry_out),
                    init: carries.map_or(StateBytes::default(), |c| c.init),
                };
                // A block per 256 offsets, at most 8192 blocks (the kernel strides).
                let grid = count.div_ceil(256).clamp(1, 8192) as u32;
                kernel.launch(grid, stream, &params)?;
            }
            Ok(())
        };
        let heads = OffsetHeads { bits };
        match queued() {
            Ok(()) => Ok(heads),
            Err(e) => {
                // No scan will read the flags: they go back to the pool (after what was
                // queued).
                let _ = heads.release(dev, stream);
                Err(e)
            }
        }
    }

    /// Frees the flags after the work queued on `stream` (the scan that reads them).
    ///
    /// # Safety
    /// As `ScratchPool::free`: nothing queued after this reads the flags.
    pub unsafe fn release(self, dev: &GpuDevice, stream: CUstream) -> Result<()> {
        dev.scratch.free(self.bits, stream)
    }
}
