//! Kernel packs installed by pip (`scanrt/_packs.py` finds them): the directories the
//! extension looks in besides its own.

use pyo3::prelude::*;

/// Looks for kernel packs in `path` too (`scanrt::add_kernel_pack_dir`).
#[pyfunction]
pub(crate) fn add_kernel_pack_dir(path: std::path::PathBuf) {
    scanrt::add_kernel_pack_dir(&path);
}
