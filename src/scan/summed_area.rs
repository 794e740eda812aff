//! Summed-area tables (integral images): the inclusive scan of a 2-D array along both of
//! its axes. On the GPU an inclusive table whose association order may vary is built in
//! one pass (`strided::summed_area_table`: each element read and written once; backward
//! through views reversed along both axes): each tile scans its rows, then its columns,
//! and waits for two decoupled look-backs, the carries of its rows from the tiles to its
//! left and the row above it from the tile above (kernels/device/summed_area_rows.cuh).
//! Every other table (exclusive, fixed-order float sums, layouts whose tiles would not
//! hold the table's columns, the host backend) is two strided scans: along the rows into
//! the output, then along the output's columns in place, each element read and written
//! twice.

use crate::array::{ArrayView, AxisLayout};
use crate::context::Context;
use crate::error::{bail, Result};
use crate::scan::desc::{ScanDesc, Segments};
use crate::scan::{strided, ScanInfo};
use crate::stream::Stream;
use crate::tables::Algorithm;

impl Context {
    /// The summed-area table of `input` over its last two axes (earlier axes are a batch
    /// of tables) into `output` (the same shape; any strides, as
    /// [`Context::scan_array`]): element `[.., i, j]` of the output combines every input
    /// element `[.., i', j']` with `i' <= i` and `j' <= j` (`<` for exclusive scans;
    /// backward scans combine from the last row and column). Any built-in operator; where
    /// the table takes two passes, the first pass's results are rounded to the output type
    /// before the second pass combines them. No initial value (it would enter along both
    /// axes).
    pub fn summed_area_table(
        &self,
        stream: &Stream,
        input: &ArrayView,
        output: &ArrayView,
        desc: &ScanDesc,
    ) -> Result<ScanInfo> {
        let ndim = input.shape().len();
        if ndim < 2 {
            bail!(
                InvalidArgument,
                "a summed-area table takes an array of at least 2 dimensions (shape {:?})",
                input.shape()
            );
        }
        if desc.init.is_some() || desc.segments != Segments::None {
            bail!(
                InvalidArgument,
                "a summed-area table takes no initial value and no segments"
            );
        }
        if desc.algorithm == Algorithm::Matrix {
            bail!(
                UnsupportedCombination,
                "a summed-area table's column pass is a strided scan, which the single pass runs \
                 (deterministic = true for a fixed association order)"
            );
        }
        input.check_output(output)?;
        if let Some(info) = strided::summed_area_table(self, stream, input, output, desc)? {
            return Ok(info);
        }
        // The column pass scans the output in place: whatever would refuse it is refused
        // before the row pass writes anything.
        let columns = ndim as isize - 2;
        let scanned = output.read_only();
        desc.types(output.dtype(), output.dtype()).check(desc.op)?;
        if output.axis_layout(columns)? == AxisLayout::Strided {
            strided::check_layout(&scanned, output, ndim - 2)?;
        }
        self.scan_array(stream, input, output, ndim as isize - 1, desc)?;
        self.scan_array(stream, &scanned, output, columns, desc)
    }
}
