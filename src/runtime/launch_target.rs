//! Where one call's work goes, asked of the driver once at the call's start and handed
//! down to every launch, workspace and scratch allocation of the call: the stream and the
//! graph it is capturing into. (The stream's id, the key of its pooled workspace, is asked
//! only by the pool, where a launch takes one: not on every call, and never during a
//! capture, which the driver refuses.)

use crate::error::Result;
use crate::runtime::cu::{self, CUgraph, CUstream};

/// One call's stream, resolved: [`crate::runtime::device::GpuDevice::prepare_launch`]
/// makes it after checking the stream's context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchTarget {
    pub stream: CUstream,
    /// The graph the stream is being captured into, if it is.
    pub capture: Option<CUgraph>,
}

impl LaunchTarget {
    /// Asks the driver about `stream`, a stream of the current context.
    pub fn resolve(stream: CUstream) -> Result<LaunchTarget> {
        Ok(LaunchTarget {
            stream,
            capture: cu::capture_graph(stream)?,
        })
    }
}
