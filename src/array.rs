//! The typed array view every scan takes: an address, an element type, a shape and
//! strides in elements, as DLPack describes a tensor (`ArrayView::from_dlpack` maps one
//! onto the other field by field). A [`Buffer`] is one such view of memory scanrt owns;
//! device pointers of other libraries and host slices are others. A scan runs along one
//! axis of its input view and writes an output view of the same shape.

use std::marker::PhantomData;

use crate::buffer::Buffer;
use crate::error::{bail, Result};
use crate::scalar::Scalar;
use crate::types::DType;
use dlpark::ffi::{DLDataType, DLTensor};

/// The most dimensions a view has.
pub const MAX_DIMS: usize = 8;

/// A view of `shape` elements of `dtype` at `addr`, element `[i0, i1, ...]` at
/// `addr + (i0 * strides[0] + i1 * strides[1] + ...) * dtype.size()`. Device memory on a
/// GPU context, host memory on the host backend. `'a` is the lifetime of the memory
/// (a borrowed [`Buffer`] or slice); views made from raw addresses promise it.
#[derive(Debug, Clone, Copy)]
pub struct ArrayView<'a> {
    addr: u64,
    dtype: DType,
    ndim: usize,
    shape: [u64; MAX_DIMS],
    strides: [i64; MAX_DIMS],
    /// The memory is a scanrt buffer of this context (its engine's address; the buffer
    /// keeps the engine alive as long as the view borrows it), of checked length: no
    /// driver query is needed, and a call of another context refuses it.
    pub(crate) owner: Option<usize>,
    /// A call may write it (a view of a mutable borrow, or of raw memory).
    pub(crate) writable: bool,
    memory: PhantomData<&'a ()>,
}

/// How a scan along one axis walks a view's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AxisLayout {
    /// One contiguous sequence of `n` elements.
    Flat { n: u64 },
    /// `rows` contiguous rows of `len` elements, one after the other: the scan runs
    /// along each row (the batched-rows scan).
    Rows { rows: u64, len: u64 },
    /// Any other layout (columns, pitches, inner axes, transposes): the strided scan's.
    Strided,
}

impl<'a> ArrayView<'a> {
    /// A row-major (C-contiguous) view of `shape`.
    ///
    /// # Safety
    /// `addr` holds `shape`'s product of `dtype` elements for `'a` (device memory of the
    /// context a scan runs on, or host memory on the host backend; a selection's count
    /// may also be page-locked host memory), and nothing else
    /// writes them while a scan that reads or writes them is queued or running.
    pub unsafe fn contiguous(addr: u64, dtype: DType, shape: &[u64]) -> Result<ArrayView<'a>> {
        if shape.len() > MAX_DIMS {
            return Self::strided(addr, dtype, shape, &[]);
        }
        let mut strides = [0i64; MAX_DIMS];
        let mut step = 1i64;
        for (d, &extent) in shape.iter().enumerate().rev() {
            strides[d] = step;
            step = step.saturating_mul(extent.max(1).min(i64::MAX as u64) as i64);
        }
        Self::strided(addr, dtype, shape, &strides[..shape.len()])
    }

    /// A view of `shape` with `strides` (in elements, as DLPack and NumPy's
    /// `strides / itemsize`).
    ///
    /// # Safety
    /// As [`ArrayView::contiguous`], for every element the strides reach.
    pub unsafe fn strided(addr: u64, dtype: DType, shape: &[u64], strides: &[i64]) -> Result<ArrayView<'a>> {
        if shape.len() > MAX_DIMS || shape.len() != strides.len() {
            bail!(
                InvalidArgument,
                "an array view has at most {MAX_DIMS} dimensions and one stride per dimension ({} and {} given)",
                shape.len(),
                strides.len()
            );
        }
        let mut view = ArrayView {
            addr,
            dtype,
            ndim: shape.len(),
            shape: [0; MAX_DIMS],
            strides: [0; MAX_DIMS],
            owner: None,
            writable: true,
            memory: PhantomData,
        };
        view.shape[..shape.len()].copy_from_slice(shape);
        view.strides[..shape.len()].copy_from_slice(strides);
        if view.len().is_none() {
            bail!(
                LengthOverflow,
                "an array of shape {shape:?} has more than 2^64 elements"
            );
        }
        if view.len() != Some(0) && addr == 0 {
            bail!(NullArgument, "an array view of {:?} elements at address 0", shape);
        }
        Ok(view)
    }

    /// The whole of `buffer`, one dimension, read only.
    pub fn of_buffer(buffer: &'a Buffer) -> ArrayView<'a> {
        ArrayView {
            writable: false,
            ..Self::written_buffer(buffer)
        }
    }

    /// The whole of `buffer`, one dimension, for a call to write (or to read and write
    /// in place: the view is `Copy`).
    pub fn of_buffer_mut(buffer: &'a mut Buffer) -> ArrayView<'a> {
        Self::written_buffer(buffer)
    }

    /// `buffer` seen as row-major `shape` (its product at most the buffer's length), read
    /// only.
    pub fn of_buffer_shaped(buffer: &'a Buffer, shape: &[u64]) -> Result<ArrayView<'a>> {
        Ok(ArrayView {
            writable: false,
            ..Self::written_buffer_shaped(buffer, shape)?
        })
    }

    /// `buffer` seen as row-major `shape`, for a call to write.
    pub fn of_buffer_shaped_mut(buffer: &'a mut Buffer, shape: &[u64]) -> Result<ArrayView<'a>> {
        Self::written_buffer_shaped(buffer, shape)
    }

    /// A writable view of a buffer through a shared borrow: for the buffer entry points
    /// whose outputs are `&Buffer` (device memory, ordered by the stream).
    pub(crate) fn written_buffer(buffer: &'a Buffer) -> ArrayView<'a> {
        ArrayView {
            owner: Some(buffer.ctx.id()),
            ..Self::flat(buffer.addr(), buffer.dtype(), buffer.len())
        }
    }

    /// As [`ArrayView::written_buffer`], seen as row-major `shape`.
    pub(crate) fn written_buffer_shaped(buffer: &'a Buffer, shape: &[u64]) -> Result<ArrayView<'a>> {
        // SAFETY: the buffer lives for 'a; its length is checked below.
        let view = unsafe { Self::contiguous(buffer.addr(), buffer.dtype(), shape)? };
        if view.len() > Some(buffer.len()) {
            bail!(
                BufferTooSmall,
                "a view of shape {shape:?} needs {} elements but the buffer holds {}",
                view.len().unwrap_or(u64::MAX),
                buffer.len()
            );
        }
        Ok(ArrayView {
            owner: Some(buffer.ctx.id()),
            ..view
        })
    }

    /// A host slice, read only (host backend).
    pub fn of_slice<T: Scalar>(slice: &'a [T]) -> ArrayView<'a> {
        ArrayView {
            writable: false,
            ..Self::flat(slice.as_ptr() as u64, T::DTYPE, slice.len() as u64)
        }
    }

    /// A mutable host slice, for outputs (host backend).
    pub fn of_slice_mut<T: Scalar>(slice: &'a mut [T]) -> ArrayView<'a> {
        Self::flat(slice.as_mut_ptr() as u64, T::DTYPE, slice.len() as u64)
    }

    fn flat(addr: u64, dtype: DType, len: u64) -> ArrayView<'a> {
        let mut shape = [0; MAX_DIMS];
        let mut strides = [0; MAX_DIMS];
        shape[0] = len;
        strides[0] = 1;
        ArrayView {
            addr,
            dtype,
            ndim: 1,
            shape,
            strides,
            owner: None,
            writable: true,
            memory: PhantomData,
        }
    }

    /// The address of element `[0, 0, ...]`.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The extent of each dimension.
    pub fn shape(&self) -> &[u64] {
        &self.shape[..self.ndim]
    }
    /// The stride of each dimension, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides[..self.ndim]
    }
    /// The number of elements (`None` past 2^64).
    pub fn len(&self) -> Option<u64> {
        self.shape().iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }
    /// Whether the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// Whether dimensions `first..` have the strides of a compact row-major array.
    fn compact_from(&self, first: usize) -> bool {
        let mut step = 1i64;
        for d in (first..self.ndim).rev() {
            // Extent-1 dimensions take any stride (NumPy and torch leave them arbitrary).
            if self.shape[d] != 1 && self.strides[d] != step {
                return false;
            }
            step = step.saturating_mul(self.shape[d] as i64);
        }
        true
    }

    /// `axis` counted from the front (negative: from the end, as NumPy counts; a 0-D view
    /// has the one axis 0), or `InvalidArgument` when out of range.
    pub(crate) fn normal_axis(&self, axis: isize) -> Result<usize> {
        let ndim = self.ndim.max(1) as isize;
        let a = if axis < 0 { axis + ndim } else { axis };
        if !(0..ndim).contains(&a) {
            bail!(
                InvalidArgument,
                "axis {axis} is out of range for an array of {} dimensions",
                self.ndim
            );
        }
        Ok(a as usize)
    }

    /// How a scan along `axis` (negative: from the end, as NumPy counts) walks the view,
    /// or why no kernel scans such a layout yet.
    pub(crate) fn axis_layout(&self, axis: isize) -> Result<AxisLayout> {
        let a = self.normal_axis(axis)?;
        let n = self.len().unwrap_or(u64::MAX);
        if n == 0 {
            return Ok(AxisLayout::Flat { n });
        }
        let len = if self.ndim == 0 { 1 } else { self.shape[a] };
        let after: u64 = self.shape()[(a + 1).min(self.ndim)..].iter().product();
        if !self.compact_from(0) || after > 1 {
            return Ok(AxisLayout::Strided);
        }
        Ok(if len == n || len == 0 {
            AxisLayout::Flat { n }
        } else {
            AxisLayout::Rows { rows: n / len, len }
        })
    }

    /// The same view, read only (as an input; a call that would write it refuses it).
    pub fn read_only(mut self) -> ArrayView<'a> {
        self.writable = false;
        self
    }

    /// The same elements with the last two axes reversed (element `[.., i, j]` is this
    /// view's `[.., rows - 1 - i, cols - 1 - j]`): a backward summed-area table is the
    /// forward one of these. The view holds at least two dimensions and no empty one.
    pub(crate) fn flipped_last_two(mut self) -> ArrayView<'a> {
        let size = self.dtype.size() as i64;
        for d in self.ndim - 2..self.ndim {
            let last = (self.shape[d] as i64 - 1).wrapping_mul(self.strides[d]);
            self.addr = self.addr.wrapping_add(last.wrapping_mul(size) as u64);
            self.strides[d] = self.strides[d].wrapping_neg();
        }
        self
    }

    /// The length of a 1-D contiguous view; otherwise `UnsupportedCombination` naming it
    /// as `what`.
    pub(crate) fn flat_len(&self, what: &str) -> Result<u64> {
        match self.axis_layout(-1)? {
            AxisLayout::Flat { n } if self.shape().len() <= 1 => Ok(n),
            _ => bail!(
                UnsupportedCombination,
                "the {what} is a 1-D contiguous array (shape {:?})",
                self.shape()
            ),
        }
    }

    /// The number of elements of a C-contiguous (or empty) view of any number of
    /// dimensions (its elements in memory order, as NumPy's `ravel` reads them); otherwise
    /// `UnsupportedCombination` naming it as `what`.
    pub(crate) fn compact_len(&self, what: &str) -> Result<u64> {
        // An empty view has no layout (libraries give its strides any values).
        if !self.is_empty() && !self.compact_from(0) {
            bail!(
                UnsupportedCombination,
                "the {what} is a C-contiguous array (shape {:?}, strides {:?})",
                self.shape(),
                self.strides()
            );
        }
        Ok(self.len().unwrap_or(u64::MAX))
    }

    /// `InvalidArgument` naming the view as `what` unless its address is a multiple of its
    /// element size: kernels read and write whole elements, and the host backend typed
    /// ones. (`what` is formatted only on failure: scans check on every call.)
    pub(crate) fn check_aligned(&self, what: impl std::fmt::Display) -> Result<()> {
        let size = self.dtype.size() as u64;
        if !self.addr().is_multiple_of(size) {
            bail!(
                InvalidArgument,
                "the {what} at {:#x} is not aligned to its {size}-byte elements",
                self.addr()
            );
        }
        Ok(())
    }

    /// [`ArrayView::check_aligned`] of each view given (`None`: an array the call has not).
    pub(crate) fn check_all_aligned(views: &[(Option<&ArrayView>, &str)]) -> Result<()> {
        for &(view, what) in views {
            if let Some(view) = view {
                view.check_aligned(what)?;
            }
        }
        Ok(())
    }

    /// Whether the view is a buffer of the context `ctx_id` (of checked length), or a
    /// `ContextMismatch` when it is a buffer of another context.
    pub(crate) fn known_to(&self, ctx_id: usize) -> Result<bool> {
        match self.owner {
            Some(owner) if owner != ctx_id => {
                bail!(ContextMismatch, "an array view of a buffer of another scanrt context")
            }
            owner => Ok(owner.is_some()),
        }
    }

    /// Bytes from the first element to past the last, for a compact view.
    pub(crate) fn bytes(&self) -> u64 {
        self.len().unwrap_or(u64::MAX).saturating_mul(self.dtype.size() as u64)
    }

    /// Whether the memory of two compact views overlaps.
    pub(crate) fn overlaps(&self, other: &ArrayView) -> bool {
        !self.is_empty()
            && !other.is_empty()
            && self.addr < other.addr.saturating_add(other.bytes())
            && other.addr < self.addr.saturating_add(self.bytes())
    }

    /// Checks that `output` can receive a scan of `self`: writable, the same shape (its
    /// own type).
    pub(crate) fn check_output(&self, output: &ArrayView) -> Result<()> {
        if !output.writable {
            bail!(
                InvalidArgument,
                "the output is a read-only view (ArrayView::of_slice); pass ArrayView::of_slice_mut"
            );
        }
        if self.shape() != output.shape() {
            bail!(
                InvalidArgument,
                "the output's shape {:?} differs from the input's {:?}",
                output.shape(),
                self.shape()
            );
        }
        Ok(())
    }
}

/// DLPack's element types that are scanrt's (the table: `DType::info`).
fn dtype_of_dlpack(t: DLDataType) -> Result<DType> {
    match DType::of_dlpack(t.code.0, t.bits, t.lanes) {
        Some(dtype) => Ok(dtype),
        None => bail!(
            UnsupportedCombination,
            "DLPack type (code {}, {} bits, {} lanes) is not a scanrt element type",
            t.code.0,
            t.bits,
            t.lanes
        ),
    }
}

impl<'a> ArrayView<'a> {
    /// The view of a DLPack tensor: `data + byte_offset`, its dtype, shape and strides
    /// (NULL strides, as DLPack before 1.2 allows: row-major compact). Whether its device
    /// suits the context is checked when a scan runs (a GPU context asks the driver).
    ///
    /// # Safety
    /// `tensor` is a valid DLTensor whose memory lives for `'a`, as for
    /// [`ArrayView::strided`].
    pub unsafe fn from_dlpack(tensor: &DLTensor) -> Result<ArrayView<'a>> {
        let dtype = dtype_of_dlpack(tensor.dtype)?;
        let ndim = usize::try_from(tensor.ndim).unwrap_or(usize::MAX);
        if ndim > MAX_DIMS {
            bail!(
                UnsupportedCombination,
                "a DLPack tensor of {} dimensions; scanrt views have at most {MAX_DIMS}",
                tensor.ndim
            );
        }
        let dims = |p: *const i64| -> &[i64] {
            if ndim == 0 || p.is_null() {
                &[]
            } else {
                // SAFETY: DLPack's shape and strides hold ndim entries.
                unsafe { std::slice::from_raw_parts(p, ndim) }
            }
        };
        let shape = dims(tensor.shape);
        if shape.len() != ndim || shape.iter().any(|&d| d < 0) {
            bail!(InvalidArgument, "a DLPack tensor with a missing or negative shape");
        }
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let addr = (tensor.data as u64).wrapping_add(tensor.byte_offset);
        match dims(tensor.strides) {
            [] if ndim > 0 => Self::contiguous(addr, dtype, &shape),
            strides => Self::strided(addr, dtype, &shape, strides),
        }
    }
}
