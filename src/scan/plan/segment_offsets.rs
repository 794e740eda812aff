//! Segments given by offsets, on the GPU: a prepass of the kernel set's
//! `scanrt_segment_offsets` turns them into the bit flags the segmented kernels read, in
//! memory of scanrt's pool that lives for the call (stream-ordered, so graphs capture
//! it). The flags cost the scan n/8 bytes written and read beside its 2n elements.

use cudarc::driver::sys::{CUdeviceptr, CUstream};

use crate::error::Result;
use crate::runtime::device::GpuDevice;
use crate::runtime::driver;
use crate::scan::kernels::{KernelKind, ScanKernels};
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
    /// `SCANRT_OFFSETS_*`.
    kind: u32,
    unused: u32,
}

/// Bit flags made from offsets, in scanrt's pool until released.
pub(super) struct OffsetHeads {
    pub bits: CUdeviceptr,
}

impl OffsetHeads {
    /// Queues on `stream` the bit flags of the `count` offsets of `dtype` at `offsets`
    /// for a scan of `n` elements: zeroed words, then one bit per offset below n.
    ///
    /// # Safety
    /// The device's context is current, `stream` is one of its live streams, and
    /// `offsets` holds `count` offsets of `dtype` (checked by the plan).
    pub unsafe fn queue(
        dev: &GpuDevice,
        kernels: &ScanKernels,
        dtype: DType,
        count: u64,
        offsets: u64,
        n: u64,
        stream: CUstream,
    ) -> Result<OffsetHeads> {
        let bytes = n.div_ceil(32) as usize * 4;
        let bits = dev.scratch.alloc(bytes, stream)?;
        let heads = OffsetHeads { bits };
        driver::zero_async(bits, bytes, stream)?;
        if count > 0 {
            let kernel = kernels
                .get(KernelKind::SegmentOffsets)
                .expect("segmented kernel sets have the offsets kernel");
            let params = SegmentOffsetsParams {
                offsets,
                count: count as i64,
                n: n as i64,
                bits,
                kind: match dtype {
                    DType::U32 => 0,
                    DType::I32 => 1,
                    _ => 2,
                },
                unused: 0,
            };
            // A block per 256 offsets, at most 8192 blocks (the kernel strides).
            let grid = count.div_ceil(256).min(8192) as u32;
            kernel.launch(grid, stream, &params)?;
        }
        Ok(heads)
    }

    /// Frees the flags after the work queued on `stream` (the scan that reads them).
    ///
    /// # Safety
    /// As `ScratchPool::free`: nothing queued after this reads the flags.
    pub unsafe fn release(self, dev: &GpuDevice, stream: CUstream) -> Result<()> {
        dev.scratch.free(self.bits, stream)
    }
}
