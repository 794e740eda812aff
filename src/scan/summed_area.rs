//! Summed-area tables (integral images): the inclusive scan of a 2-D array along both of
//! its axes, as two strided scans: along the rows into the output, then along the
//! output's columns in place (`scan::strided`). That moves each element four times
//! (read, write, read, write); a single pass would move it twice but needs a look-back
//! in two dimensions: each tile waits for the row prefixes of the tile to its left and,
//! once its rows are scanned, for the column prefixes of the tile above (two decoupled
//! chains per tile, with tickets that number tiles row-major so both predecessors come
//! first). Not built: the two passes run at the strided scan's speed each.

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
    /// backward scans combine from the last row and column). Any built-in operator; the
    /// first pass's results are rounded to the output type before the second pass
    /// combines them. No initial value (it would enter along both axes).
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
