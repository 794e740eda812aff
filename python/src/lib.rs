//! `scanrt._scanrt`: the Python bindings, a thin layer over the Rust crate. Python passes
//! each array as a plain description (`arrays::ArrayArg`: address, dtype, shape, strides,
//! device) that `scanrt/_arrays.py` reads off the caller's array, and the stream the
//! call runs on; one module per domain turns them into the crate's calls, with the GIL
//! released around device work, and errors into Python exceptions (`errors`).

mod arrays;
mod distributed;
mod errors;
mod operator;
mod operator_host;
mod operator_scan;
mod out_of_core;
mod packs;
mod scan;
mod select;
mod sort;
mod xla_ffi;

use pyo3::prelude::*;

#[pymodule]
fn _scanrt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScanrtError", m.py().get_type::<errors::ScanrtError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan::recipe_scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan_takes, m)?)?;
    m.add_function(wrap_pyfunction!(scan::summed_area_table, m)?)?;
    m.add_function(wrap_pyfunction!(out_of_core::scan_out_of_core, m)?)?;
    m.add_function(wrap_pyfunction!(sort::sort, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::scan_across, m)?)?;
    m.add_function(wrap_pyfunction!(select::select, m)?)?;
    m.add_function(wrap_pyfunction!(arrays::synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(arrays::dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(xla_ffi::xla_handlers, m)?)?;
    m.add_function(wrap_pyfunction!(packs::add_kernel_pack_dir, m)?)?;
    m.add_class::<operator::PyOperator>()?;
    Ok(())
}
