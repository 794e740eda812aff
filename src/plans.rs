//! One plan per primitive on the Rust face, as on the C face (`scanrt_plan_create`): made
//! once from a description, executed on a stream and the arrays of one call. A scan's
//! plan is [`ScanPlan`](crate::ScanPlan) (`Context::plan`), which also fixes its types
//! and length; these fix what the primitive computes and take any arrays it accepts.

use crate::array::ArrayView;
use crate::context::Context;
use crate::error::Result;
use crate::scan::desc::ScanDesc;
use crate::scan::ScanInfo;
use crate::select::desc::{SelectDesc, SelectOutput, Selection};
use crate::select::SelectArrays;
use crate::sort::desc::SortDesc;
use crate::sort::SortArrays;
use crate::stream::Stream;
use crate::types::DType;

/// A selection, partition or unique (`Context::select_plan`).
#[derive(Clone)]
pub struct SelectPlan {
    ctx: Context,
    desc: SelectDesc,
}

/// A run-length encoding (`Context::run_length_plan`).
#[derive(Clone)]
pub struct RunLengthPlan {
    select: SelectPlan,
}

/// The arrays of one run-length encoding: each run's value into `values`, its length into
/// `lengths` (`U32` or `U64`), the number of runs into `num_runs` (one `U64` or `I64`).
pub struct RunLengthArrays<'a> {
    /// The elements, C-contiguous of any shape, read in memory order.
    pub input: ArrayView<'a>,
    /// Each run's value (as many elements as the input).
    pub values: ArrayView<'a>,
    /// Each run's length (as many elements as the input).
    pub lengths: ArrayView<'a>,
    /// The number of runs, written by the call (stream-ordered).
    pub num_runs: ArrayView<'a>,
}

/// A stable radix sort (`Context::sort_plan`).
#[derive(Clone)]
pub struct SortPlan {
    ctx: Context,
    desc: SortDesc,
}

/// A summed-area table (`Context::summed_area_plan`).
#[derive(Clone)]
pub struct SummedAreaPlan {
    ctx: Context,
    desc: ScanDesc,
}

impl Context {
    /// The plan of a selection as `desc` says ([`Context::select`]).
    pub fn select_plan(&self, desc: &SelectDesc) -> Result<SelectPlan> {
        Ok(SelectPlan {
            ctx: self.clone(),
            desc: desc.clone(),
        })
    }
    /// The plan of a run-length encoding ([`Context::run_length_encode`]).
    pub fn run_length_plan(&self) -> Result<RunLengthPlan> {
        let desc = SelectDesc {
            selection: Selection::RunHeads,
            output: SelectOutput::RunLengths,
            capacity: None,
        };
        Ok(RunLengthPlan {
            select: self.select_plan(&desc)?,
        })
    }
    /// The plan of a sort as `desc` says ([`Context::sort`]).
    pub fn sort_plan(&self, desc: &SortDesc) -> Result<SortPlan> {
        Ok(SortPlan {
            ctx: self.clone(),
            desc: *desc,
        })
    }
    /// The plan of a summed-area table as `desc` says ([`Context::summed_area_table`]).
    pub fn summed_area_plan(&self, desc: &ScanDesc) -> Result<SummedAreaPlan> {
        Ok(SummedAreaPlan {
            ctx: self.clone(),
            desc: *desc,
        })
    }
}

impl SelectPlan {
    /// Runs the selection on `arrays`, asynchronously on `stream` for a GPU.
    pub fn execute(&self, stream: &Stream, arrays: &SelectArrays) -> Result<()> {
        self.ctx.select(stream, arrays, &self.desc)
    }
}

impl RunLengthPlan {
    /// Runs the encoding on `arrays`, asynchronously on `stream` for a GPU.
    pub fn execute(&self, stream: &Stream, arrays: &RunLengthArrays) -> Result<()> {
        let selection = SelectArrays {
            input: arrays.input,
            flags: None,
            output: arrays.values,
            rejected: None,
            lengths: Some(arrays.lengths),
            num_selected: arrays.num_runs,
        };
        self.select.execute(stream, &selection)
    }
}

impl SortPlan {
    /// Bytes of temporary memory a sort of `n` keys of `key` (with values of `values`)
    /// takes in `SortArrays::temp` ([`Context::sort_temp_bytes`]).
    pub fn workspace_bytes(&self, n: u64, key: DType, values: Option<DType>) -> u64 {
        self.ctx.sort_temp_bytes(n, key, values)
    }
    /// Runs the sort on `arrays`, asynchronously on `stream` for a GPU.
    pub fn execute(&self, stream: &Stream, arrays: &SortArrays) -> Result<()> {
        self.ctx.sort(stream, arrays, &self.desc)
    }
}

impl SummedAreaPlan {
    /// Runs the table of `input` into `output`, asynchronously on `stream` for a GPU.
    pub fn execute(&self, stream: &Stream, input: &ArrayView, output: &ArrayView) -> Result<ScanInfo> {
        self.ctx.summed_area_table(stream, input, output, &self.desc)
    }
}
