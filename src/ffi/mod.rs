//! The C ABI: a thin shell over the Rust API, split by domain (`context`, `stream`,
//! `buffer`, `array`, `scan`, `select`, `sort`, `operator`, `distributed`, `strings`,
//! `logging`) over `support`: the one panic boundary, the thread-local last error, and
//! the casts from C handles and out-parameters.
//!
//! `include/scanrt.h` is generated from these files by cbindgen (build.rs), with the C
//! enums of src/tables.rs; CI fails when the committed header is stale. Enum-valued
//! arguments travel as `int32_t` and are decoded by the tables (`from_c`), so an
//! out-of-range value from C is an error, never undefined behaviour.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

mod array;
mod buffer;
mod context;
#[cfg(feature = "nccl")]
mod distributed;
mod logging;
mod operator;
mod operator_scan;
mod out_of_core;
mod plan;
mod scan;
mod select;
mod sort;
mod stream;
mod strings;
mod support;
mod versioned;

pub use array::*;
pub use buffer::*;
pub use context::*;
#[cfg(feature = "nccl")]
pub use distributed::*;
pub use logging::*;
pub use operator::*;
pub use out_of_core::*;
pub use plan::*;
pub use scan::*;
pub use select::*;
pub use stream::*;
pub use strings::*;
