//! What a user-defined operator is ([`OperatorDesc`], with its host functions) and how
//! one of its scans runs ([`OperatorScan`]), and the checks a description passes.

use std::sync::Arc;

use crate::contract::{StateBytes, MAX_STATE_BYTES};
use crate::error::{bail, Result};
use crate::scan::desc::{ScanShape, Segments};
use crate::scan::operator_model::ArrayLayout;
use crate::tables::{Algorithm, Direction};
use crate::types::DType;

/// A host `combine`: `out = combine(a, b)`, states as their bytes.
pub type HostCombine = Arc<dyn Fn(&[u8], &[u8], &mut [u8]) + Send + Sync>;
/// A host `load`: `state = load(i, inputs...)`, one element's bytes per input array.
pub type HostLoad = Arc<dyn Fn(u64, &[&[u8]], &mut [u8]) + Send + Sync>;
/// A host `store`: `store(state, outputs...)`, one element's bytes per output array.
pub type HostStore = Arc<dyn Fn(&[u8], &mut [&mut [u8]]) + Send + Sync>;

/// Host implementations of an operator's functions, for the host backend. States and
/// elements travel as their bytes (native endianness).
#[derive(Clone)]
pub struct HostOperator {
    /// `out = combine(a, b)`.
    pub combine: HostCombine,
    /// `state = load(i, inputs...)` (transforms only).
    pub load: Option<HostLoad>,
    /// `store(state, outputs...)` (transforms only).
    pub store: Option<HostStore>,
}

/// What a user-defined operator is: its CUDA source and the names in it.
#[derive(Clone)]
pub struct OperatorDesc {
    /// Names the operator in compiler messages (`name(line): error ...`) and logs.
    pub name: String,
    /// CUDA C++ defining the state type and the functions below (`__device__`). NVRTC
    /// compiles it without the standard headers; `uint32_t` and friends are defined.
    pub source: String,
    /// The state type's name.
    pub state_type: String,
    /// `sizeof` and `alignof` of the state type as the host sees it.
    pub state_size: usize,
    /// See `state_size`.
    pub state_align: usize,
    /// The combine function's name: `State combine(State a, State b)`.
    pub combine: String,
    /// The identity's bytes (`state_size` of them).
    pub identity: Vec<u8>,
    /// The load function's name and the types of its input arrays (1 to 4), or None:
    /// the input is an array of states. `State load(int64_t i, I0 x0, ...)` builds
    /// element i (its index in memory order).
    pub load: Option<(String, Vec<DType>)>,
    /// The store function's name and the types of its output arrays (1 or 2), or None:
    /// the output is an array of states.
    pub store: Option<(String, Vec<DType>)>,
    /// Host implementations, for the host backend.
    pub host: Option<HostOperator>,
    /// The most elements a sequence may have, where the state keeps the load's index `i`
    /// in fewer bits than `i` has (a cumulative extreme's u32 index): a longer scan is
    /// refused rather than its indices wrapping. None: no limit.
    pub max_length: Option<u64>,
}

/// How an operator scan runs: the same choices as a built-in scan's [`ScanDesc`](crate::ScanDesc), with
/// the initial value as the state's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorScan {
    /// Inclusive (element i includes input i) or exclusive.
    pub inclusive: bool,
    /// The initial state's bytes (every segment starts from it); None: the identity.
    pub init: Option<Vec<u8>>,
    /// The algorithm asked for. `deterministic` runs the fixed-order look-back (a user
    /// operator's result may depend on association order).
    pub algorithm: Algorithm,
    /// Forward or backward.
    pub direction: Direction,
    /// Bitwise identical results on every run.
    pub deterministic: bool,
    /// Segments, as for built-in scans.
    pub segments: Segments,
}

impl Default for OperatorScan {
    fn default() -> Self {
        OperatorScan {
            inclusive: true,
            init: None,
            algorithm: Algorithm::Auto,
            direction: Direction::Forward,
            deterministic: false,
            segments: Segments::None,
        }
    }
}

impl OperatorScan {
    /// An inclusive forward scan.
    pub fn inclusive() -> Self {
        Self::default()
    }
    /// An exclusive forward scan.
    pub fn exclusive() -> Self {
        OperatorScan {
            inclusive: false,
            ..Self::default()
        }
    }
    /// Starts from the state with these bytes.
    pub fn with_init(mut self, init: Vec<u8>) -> Self {
        self.init = Some(init);
        self
    }
    /// Traverses from the last element.
    pub fn backward(mut self) -> Self {
        self.direction = Direction::Backward;
        self
    }
    /// Asks for bitwise identical results on every run.
    pub fn deterministic(mut self) -> Self {
        self.deterministic = true;
        self
    }
    /// Restarts at each segment.
    pub fn segmented(mut self, segments: Segments) -> Self {
        self.segments = segments;
        self
    }
    /// Runs `algorithm`.
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }
    /// What the plan works with: the same choices, the initial state as bytes, checked
    /// against the state of the operator `desc`.
    pub(crate) fn shape(&self, desc: &OperatorDesc) -> Result<ScanShape> {
        if let Some(init) = &self.init {
            if init.len() != desc.state_size {
                bail!(
                    InvalidArgument,
                    "operator {}: the initial state has {} bytes, the state {}",
                    desc.name,
                    init.len(),
                    desc.state_size
                );
            }
        }
        Ok(ScanShape {
            inclusive: self.inclusive,
            init: self.init.as_deref().map(StateBytes::from_bytes),
            algorithm: self.algorithm,
            direction: self.direction,
            deterministic: self.deterministic,
            segments: self.segments,
        })
    }
}

fn is_identifier(name: &str) -> bool {
    let mut parts = name.split("::");
    parts.all(|p| {
        let mut chars = p.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

impl OperatorDesc {
    /// An operator on states of `state_size` bytes (alignment `state_align`) scanned in
    /// arrays of states: `source` defines `state_type` and `combine`.
    pub fn new(
        name: &str,
        source: &str,
        state_type: &str,
        state_size: usize,
        state_align: usize,
        combine: &str,
        identity: &[u8],
    ) -> OperatorDesc {
        OperatorDesc {
            name: name.into(),
            source: source.into(),
            state_type: state_type.into(),
            state_size,
            state_align,
            combine: combine.into(),
            identity: identity.into(),
            load: None,
            store: None,
            host: None,
            max_length: None,
        }
    }
    /// Refuses scans of sequences longer than `n` elements ([`OperatorDesc::max_length`]).
    pub fn with_max_length(mut self, n: u64) -> Self {
        self.max_length = Some(n);
        self
    }
    /// `UnsupportedCombination` when a sequence of `n` elements is longer than the
    /// operator indexes.
    pub(crate) fn check_length(&self, n: u64) -> Result<()> {
        match self.max_length {
            Some(max) if n > max => bail!(
                UnsupportedCombination,
                "operator {} indexes sequences of at most {max} elements; this one has {n}",
                self.name
            ),
            _ => Ok(()),
        }
    }
    /// Builds each element with `load` from arrays of `inputs`.
    pub fn with_load(mut self, load: &str, inputs: &[DType]) -> Self {
        self.load = Some((load.into(), inputs.into()));
        self
    }
    /// Writes each result with `store` to arrays of `outputs`.
    pub fn with_store(mut self, store: &str, outputs: &[DType]) -> Self {
        self.store = Some((store.into(), outputs.into()));
        self
    }
    /// Host implementations for the host backend.
    pub fn with_host(mut self, host: HostOperator) -> Self {
        self.host = Some(host);
        self
    }

    pub(crate) fn input_types(&self) -> Option<&[DType]> {
        self.load.as_ref().map(|(_, t)| t.as_slice())
    }
    pub(crate) fn output_types(&self) -> Option<&[DType]> {
        self.store.as_ref().map(|(_, t)| t.as_slice())
    }
    /// The arrays of one side of a transform (`types`), or one array of states.
    pub(crate) fn array_layouts(&self, types: Option<&[DType]>) -> Vec<ArrayLayout> {
        types.map_or_else(
            || {
                vec![ArrayLayout {
                    size: self.state_size,
                    align: self.state_align,
                }]
            },
            |t| t.iter().map(|&d| ArrayLayout::of(d)).collect(),
        )
    }

    /// The checks a description passes before anything is compiled.
    pub fn check(&self) -> Result<()> {
        let size = self.state_size;
        if !(4..=MAX_STATE_BYTES as usize).contains(&size) || !size.is_multiple_of(4) {
            bail!(
                InvalidArgument,
                "operator {}: state_size {size} must be a multiple of 4 from 4 to {MAX_STATE_BYTES}",
                self.name
            );
        }
        if !self.state_align.is_power_of_two() || self.state_align > 16 || !size.is_multiple_of(self.state_align) {
            bail!(
                InvalidArgument,
                "operator {}: state_align {} must be a power of two of at most 16 that divides state_size",
                self.name,
                self.state_align
            );
        }
        if self.identity.len() != size {
            bail!(
                InvalidArgument,
                "operator {}: the identity has {} bytes, the state {size}",
                self.name,
                self.identity.len()
            );
        }
        if self.name.is_empty() || self.name.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
            bail!(
                InvalidArgument,
                "an operator name must be nonempty, without quotes, backslashes or control characters"
            );
        }
        let mut names = vec![("state_type", &self.state_type), ("combine", &self.combine)];
        if let Some((load, _)) = &self.load {
            names.push(("load", load));
        }
        if let Some((store, _)) = &self.store {
            names.push(("store", store));
        }
        for (what, name) in names {
            if !is_identifier(name) {
                bail!(
                    InvalidArgument,
                    "operator {}: {what} {name:?} is not a C++ name",
                    self.name
                );
            }
        }
        if let Some(inputs) = self.input_types() {
            if !(1..=4).contains(&inputs.len()) {
                bail!(
                    InvalidArgument,
                    "operator {}: a load takes 1 to 4 input arrays, not {}",
                    self.name,
                    inputs.len()
                );
            }
        }
        if let Some(outputs) = self.output_types() {
            if !(1..=2).contains(&outputs.len()) {
                bail!(
                    InvalidArgument,
                    "operator {}: a store writes 1 or 2 output arrays, not {}",
                    self.name,
                    outputs.len()
                );
            }
        }
        if self.source.contains('\0') {
            bail!(InvalidArgument, "operator {}: the source holds a NUL byte", self.name);
        }
        Ok(())
    }

    /// Bytes per element of the bulk-copy kernel's buffers: the input or the output arrays
    /// together, whichever are larger; a plain array is one of states. States wider than
    /// that do not park in the buffer: the kernel rescans the inputs instead
    /// (kernels/device/single_pass_bulk.cuh, `BulkTile`).
    pub(crate) fn bulk_element_bytes(&self) -> usize {
        let total = |types: Option<&[DType]>| types.map_or(self.state_size, |t| t.iter().map(|d| d.size()).sum());
        total(self.input_types()).max(total(self.output_types()))
    }

    /// Whether inputs and outputs are plain arrays of states.
    pub(crate) fn plain_arrays(&self) -> bool {
        self.load.is_none() && self.store.is_none()
    }
}
