//! CUDA user objects: what a captured graph keeps alive until its last executable graph
//! is destroyed.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUgraph};

use super::check::check;
use crate::error::Result;

/// Hands `value` to a CUDA user object that `graph` (and every executable graph
/// instantiated from it) holds; `destroy` gets the pointer back with the last of them
/// (CUDA forbids driver calls there). On failure `value` is released at once: dropped
/// here, or by `destroy` once the object was made.
///
/// # Safety
/// `graph` is being captured; `destroy` takes the pointer as a `Box<T>` exactly once.
pub(crate) unsafe fn retain_in_graph<T>(
    graph: CUgraph,
    value: Box<T>,
    destroy: unsafe extern "C" fn(*mut c_void),
) -> Result<()> {
    let value = Box::into_raw(value);
    let mut object: sys::CUuserObject = std::ptr::null_mut();
    let created = check(
        sys::cuUserObjectCreate(
            &mut object,
            value as *mut c_void,
            Some(destroy),
            1,
            sys::CUuserObject_flags_enum::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as u32,
        ),
        "cuUserObjectCreate",
    );
    if let Err(e) = created {
        drop(Box::from_raw(value));
        return Err(e);
    }
    // Moves our reference to the graph: the object lives as long as the graph and every
    // executable graph instantiated from it.
    check(
        sys::cuGraphRetainUserObject(
            graph,
            object,
            1,
            sys::CUuserObjectRetain_flags_enum::CU_GRAPH_USER_OBJECT_MOVE as u32,
        ),
        "cuGraphRetainUserObject",
    )
    .inspect_err(|_| {
        sys::cuUserObjectRelease(object, 1);
    })
}
