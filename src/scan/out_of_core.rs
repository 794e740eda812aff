//! Out-of-core scans: an array in host memory, as large as the host holds, scanned
//! through the GPU in chunks. Each chunk's upload, scan and download go on three streams
//! over three buffer slots, so that one chunk uploads while the one before it is scanned
//! and the one before that downloads; the running total is carried from chunk to chunk
//! in device memory (the scan's carry in and carry out are one element). Page-locked
//! host memory moves at the link's speed; the driver stages pageable memory at its own.
//! Either array may instead be device memory of the context (a device array too large
//! to have its result beside it, scanned into host memory; or a host array scanned into
//! device memory): that side is read or written in place, with no copy and no slots.
//! On the host backend it is one host scan.

use crate::context::Context;
use crate::error::{bail, Result};
use crate::runtime::cu::{self, Event};
use crate::scalar::Scalar;
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::operator_model::Carries;
use crate::scan::plan::ScanIo;
use crate::scan::{RawScan, ScanInfo};
use crate::{Buffer, Direction};

/// Elements per chunk unless told otherwise.
const DEFAULT_CHUNK: u64 = 1 << 26;
/// Buffer slots: a chunk uploading, one scanning, one downloading.
const SLOTS: usize = 3;

/// How [`Context::scan_host_array`] runs.
#[derive(Default)]
pub struct HostScanOptions<'a> {
    /// Elements per chunk (0: 2^26), at most the whole array.
    pub chunk: u64,
    /// Called after each chunk's results reached host memory, with the elements done so
    /// far and the array's length.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
}

impl Context {
    /// Scans `input`, an array in host memory of any length (larger than the GPU's
    /// memory too), into `output` (at least as long) through the GPU, as `desc` says
    /// (unsegmented), and returns once the results are in `output`. Upload, scan and
    /// download of successive chunks overlap; page-locked memory (`cudaHostAlloc`,
    /// `cudaHostRegister`) moves fastest. On the host backend: a host scan.
    pub fn scan_host_array<I: Scalar, O: Scalar>(
        &self,
        input: &[I],
        output: &mut [O],
        desc: &ScanDesc,
        options: HostScanOptions,
    ) -> Result<ScanInfo> {
        let n = input.len() as u64;
        if (output.len() as u64) < n {
            bail!(
                BufferTooSmall,
                "output holds {} elements but the input has {n}",
                output.len()
            );
        }
        let req = RawScan::new(input.as_ptr() as u64, I::DTYPE, output.as_mut_ptr() as u64, O::DTYPE, n);
        // SAFETY: the slices hold n elements and are borrowed for the call, which returns
        // once every copy completed.
        unsafe { self.scan_host_raw(&req, desc, options) }
    }

    /// [`Context::scan_host_array`] on raw addresses (`req.segments` unused), each either
    /// host memory or device memory of this context (both device memory: one scan).
    ///
    /// # Safety
    /// `req.input` and `req.output` hold `req.n` elements of their types, not accessed by
    /// anything else during the call (work queued on device memory among them has
    /// completed: the chunks run on streams of their own).
    pub unsafe fn scan_host_raw(
        &self,
        req: &RawScan,
        desc: &ScanDesc,
        mut options: HostScanOptions,
    ) -> Result<ScanInfo> {
        let (n, in_type, out_type) = (req.n, req.input_dtype, req.output_dtype);
        if n > 0 && (req.input == 0 || req.output == 0) {
            bail!(NullArgument, "NULL input or output for n = {n} elements");
        }
        if desc.segments != Segments::None {
            bail!(UnsupportedCombination, "out-of-core scans are unsegmented");
        }
        let (Some(in_bytes), Some(out_bytes)) = (
            n.checked_mul(in_type.size() as u64),
            n.checked_mul(out_type.size() as u64),
        ) else {
            bail!(LengthOverflow, "arrays of n = {n} elements overflow the address space");
        };
        let in_place = req.input == req.output && in_type.size() == out_type.size();
        if !in_place && crate::scan::checks::overlaps(req.input, in_bytes, req.output, out_bytes) {
            bail!(PartialOverlap, "input and output overlap without being the same range");
        }
        if self.gpu().is_err() {
            let req = RawScan { segments: 0, ..*req };
            // The host backend's stream is synchronous.
            let info = self.scan_raw(&self.new_stream()?, &req, desc, None)?;
            if let Some(progress) = options.progress.as_mut() {
                progress(n, n);
            }
            return Ok(info);
        }
        let dev = self.gpu()?;
        let _current = dev.enter()?;
        let on_device = |addr: u64, bytes: u64, what: &str| -> Result<bool> {
            let device = cu::is_plain_device_memory_type(cu::pointer_info(addr)?.memory_type);
            if device && bytes > 0 {
                dev.check_device_range(addr, bytes, what)?;
            }
            Ok(device)
        };
        let input_on_device = n > 0 && on_device(req.input, in_bytes, "input")?;
        let output_on_device = n > 0 && on_device(req.output, out_bytes, "output")?;
        if input_on_device && output_on_device {
            let stream = self.new_stream()?;
            let req = RawScan { segments: 0, ..*req };
            let info = self.scan_raw(&stream, &req, desc, None)?;
            stream.synchronize()?;
            if let Some(progress) = options.progress.as_mut() {
                progress(n, n);
            }
            return Ok(info);
        }
        // At most the asked chunk, and no more than the scan's elements (a chunk larger
        // than n would only size buffers no chunk fills).
        let chunk = match options.chunk {
            0 => DEFAULT_CHUNK,
            c => c,
        }
        .min(n.max(1));
        let local = ScanDesc { init: None, ..*desc };
        let full = self.plan(in_type, out_type, chunk, &local)?;
        let last_len = n % chunk;
        let last = (last_len > 0)
            .then(|| self.plan(in_type, out_type, last_len, &local))
            .transpose()?;
        let accumulator = desc.types(in_type, out_type).accumulator;
        let carry = Buffer::new(self, accumulator, 1)?;
        let carries = Carries {
            carry_in: carry.addr(),
            carry_out: carry.addr(),
        };
        // A slot's buffers: None on the side that lives in device memory.
        let buffer = |dtype, needed: bool| needed.then(|| Buffer::new(self, dtype, chunk)).transpose();
        let slots: Vec<(Option<Buffer>, Option<Buffer>)> = (0..SLOTS)
            .map(|_| Ok((buffer(in_type, !input_on_device)?, buffer(out_type, !output_on_device)?)))
            .collect::<Result<_>>()?;
        let (up, scan, down) = (self.new_stream()?, self.new_stream()?, self.new_stream()?);
        let events = |_| Ok([Event::new()?, Event::new()?, Event::new()?]);
        let events: Vec<[Event; 3]> = (0..SLOTS).map(events).collect::<Result<_>>()?;
        // The carry starts as the initial value (a scan of nothing writes it).
        let start = Carries {
            carry_in: 0,
            carry_out: carry.addr(),
        };
        // SAFETY: the carry is a live buffer of this context.
        unsafe {
            self.plan(in_type, out_type, 0, desc)?
                .execute(&scan, &ScanIo::new(0, 0).with_carries(start), None)?;
        }
        let chunks = n.div_ceil(chunk);
        let range = |c: u64| (c * chunk, ((c + 1) * chunk).min(n));
        // Until the last download is waited for, copies may read and write the slices:
        // after an error, what was issued is waited for before returning.
        let issued = (|| -> Result<ScanInfo> {
            let (mut issued_len, mut done) = (std::collections::VecDeque::new(), 0u64);
            let mut info = full.info();
            for step in 0..chunks {
                // A backward scan takes the chunks from the last.
                let c = if desc.direction == Direction::Backward {
                    chunks - 1 - step
                } else {
                    step
                };
                let (lo, hi) = range(c);
                let len = hi - lo;
                let slot = step as usize % SLOTS;
                // `done`: the slot's chunk is in the output (downloaded, or scanned into
                // device memory), and its buffers are free.
                let [uploaded, scanned, done_event] = &events[slot];
                if step >= SLOTS as u64 {
                    done_event.synchronize()?;
                    done += issued_len.pop_front().unwrap_or(0);
                    if let Some(progress) = options.progress.as_mut() {
                        progress(done, n);
                    }
                }
                let (in_buf, out_buf) = &slots[slot];
                let plan = if len == chunk {
                    &full
                } else {
                    last.as_ref().expect("a partial chunk")
                };
                // SAFETY: the host ranges lie in the slices, which outlive the work (the last
                // download is waited for below); the buffers hold a chunk each; every stream
                // and event belongs to this context.
                unsafe {
                    let input = match in_buf {
                        Some(buf) => {
                            let host_in = (req.input + lo * in_type.size() as u64) as *mut std::ffi::c_void;
                            let bytes = len as usize * in_type.size();
                            cu::copy_host_async(host_in, buf.addr(), bytes, false, up.raw() as _)?;
                            uploaded.record(up.raw() as _)?;
                            uploaded.wait_on(scan.raw() as _)?;
                            buf.addr()
                        }
                        None => req.input + lo * in_type.size() as u64,
                    };
                    let output = match out_buf {
                        Some(buf) => buf.addr(),
                        None => req.output + lo * out_type.size() as u64,
                    };
                    // Device ranges were checked above, whole.
                    let io = ScanIo {
                        known_buffers: true,
                        ..ScanIo::new(input, output).with_carries(carries)
                    };
                    info = plan.execute(&scan, &io, None)?;
                    match out_buf {
                        Some(buf) => {
                            scanned.record(scan.raw() as _)?;
                            scanned.wait_on(down.raw() as _)?;
                            let host_out = (req.output + lo * out_type.size() as u64) as *mut std::ffi::c_void;
                            let bytes = len as usize * out_type.size();
                            cu::copy_host_async(host_out, buf.addr(), bytes, true, down.raw() as _)?;
                            done_event.record(down.raw() as _)?;
                        }
                        None => done_event.record(scan.raw() as _)?,
                    }
                }
                issued_len.push_back(len);
            }
            Ok(info)
        })();
        let drained = [&up, &scan, &down].iter().try_for_each(|s| s.synchronize());
        let info = issued?;
        drained?;
        if let Some(progress) = options.progress.as_mut() {
            progress(n, n);
        }
        Ok(info)
    }
}
