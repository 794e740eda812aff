//! Where one call's work goes, asked of the driver once at the call's start and handed
//! down to every launch, workspace and scratch allocation of the call: the stream, the
//! graph it is capturing into, and its id (the key of its pooled workspace).

use crate::error::Result;
use crate::runtime::cu::{self, CUgraph, CUstream};

/// One call's stream, resolved: [`crate::runtime::device::GpuDevice::prepare_launch`]
/// makes it after checking the stream's context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchTarget {
    pub stream: CUstream,
    /// The graph the stream is being captured into, if it is.
    pub capture: Option<CUgraph>,
    /// The driver's id of the stream (per thread for the per-thread default stream),
    /// where it is not capturing: the driver refuses the query during a capture, whose
    /// launches take the graph's workspace instead of the stream's.
    pub stream_id: Option<u64>,
}

impl LaunchTarget {
    /// Asks the driver about `stream`, a stream of the current context.
    pub fn resolve(stream: CUstream) -> Result<LaunchTarget> {
        let capture = cu::capture_graph(stream)?;
        let stream_id = match capture {
            Some(_) => None,
            None => Some(cu::stream_id(stream)?),
        };
        Ok(LaunchTarget {
            stream,
            capture,
            stream_id,
        })
    }
}
