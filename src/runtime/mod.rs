//! The GPU runtime, which knows nothing of scans: the one door to the driver (`cu`, the
//! only module that makes raw driver calls), devices and their
//! loaded modules (`device`), NVRTC (`nvrtc`) and its disk cache (`kernel_cache`), kernels
//! compiled ahead of time (`kernel_pack`), one call's stream as the driver describes it once
//! (`launch_target`), look-back workspaces (`workspace`,
//! `graph_workspace` for captured scans, `launch_workspace` choosing one per launch), one
//! call's temporary memory (`scratch`), the fault mailbox kernels report to (`faults`)
//! and the log of recent calls that names a faulting one (`calls`). Algorithms
//! (`crate::scan`, `crate::select`, `crate::sort`) generate sources and launch kernels on
//! it.

pub(crate) mod calls;
pub(crate) mod cu;
pub(crate) mod device;
pub(crate) mod faults;
pub(crate) mod graph_workspace;
pub(crate) mod kernel_cache;
pub(crate) mod kernel_pack;
pub(crate) mod launch_target;
pub(crate) mod launch_workspace;
pub(crate) mod nvrtc;
pub(crate) mod scratch;
pub(crate) mod trust;
pub(crate) mod workspace;

use std::hash::Hash;
use std::sync::Arc;

use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use crate::error::Result;

/// A map whose values are built once per key, even when threads ask for the same key at
/// the same moment (the others wait for the first), without holding the map's lock while
/// building. A failed build is not cached: the next caller tries again.
pub(crate) struct Memo<K, V> {
    cells: Mutex<FxHashMap<K, Arc<OnceCell<V>>>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            cells: Mutex::new(FxHashMap::default()),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    pub fn get_or_try_init(&self, key: &K, build: impl FnOnce() -> Result<V>) -> Result<V> {
        let cell = {
            let mut cells = self.cells.lock();
            match cells.get(key) {
                Some(cell) => cell.clone(),
                None => cells.entry(key.clone()).or_default().clone(),
            }
        };
        cell.get_or_try_init(build).cloned()
    }

    /// Drops every value.
    pub fn clear(&self) {
        self.cells.lock().clear();
    }
}
