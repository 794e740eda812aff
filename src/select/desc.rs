//! What a selection computes: which elements it keeps (`Selection`), and what it writes
//! (`SelectOutput`, the capacity).

use std::sync::Arc;

use crate::error::{bail, Result};
use crate::scalar::InitValue;
use crate::types::DType;

/// How a comparison selection compares each element with its operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `x == operand`.
    Equal,
    /// `x != operand`.
    NotEqual,
    /// `x < operand`.
    Less,
    /// `x <= operand`.
    LessEqual,
    /// `x > operand`.
    Greater,
    /// `x >= operand`.
    GreaterEqual,
}

impl Comparison {
    /// The CUDA expression on `x` and `operand`.
    pub(crate) fn cuda(self) -> &'static str {
        match self {
            Comparison::Equal => "x == operand",
            Comparison::NotEqual => "x != operand",
            Comparison::Less => "x < operand",
            Comparison::LessEqual => "x <= operand",
            Comparison::Greater => "x > operand",
            Comparison::GreaterEqual => "x >= operand",
        }
    }
    /// The comparison on the host (IEEE semantics: NaN compares unequal to everything).
    pub(crate) fn holds<T: PartialOrd>(self, x: T, operand: T) -> bool {
        match self {
            Comparison::Equal => x == operand,
            Comparison::NotEqual => x != operand,
            Comparison::Less => x < operand,
            Comparison::LessEqual => x <= operand,
            Comparison::Greater => x > operand,
            Comparison::GreaterEqual => x >= operand,
        }
    }
}

/// A user-defined predicate: CUDA source defining `__device__ bool FUNCTION(T x)` for the
/// element type `T`, and the same test on the host for the host backend.
#[derive(Clone)]
pub struct Predicate {
    /// CUDA source that defines the function.
    pub source: String,
    /// The function's name.
    pub function: String,
    /// The host backend's test, on the element's bits (zero-extended to 64).
    pub host: Option<Arc<dyn Fn(u64) -> bool + Send + Sync>>,
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Predicate({})", self.function)
    }
}

/// Which elements a selection keeps (a partition puts them first).
#[derive(Debug, Clone)]
pub enum Selection {
    /// One byte per element, nonzero keeps it (a `U8` array beside the input).
    ByteFlags,
    /// Flags packed 32 to a `U32` word: bit i of word w is element 32·w + i.
    BitFlags,
    /// Elements for which `x <comparison> operand` holds (the operand has the element type).
    Compare(Comparison, InitValue),
    /// Elements that are not zero (-0.0 is zero).
    NonZero,
    /// Elements that are not NaN (every integer).
    NotNan,
    /// The first element of each run of equal elements (unique): `x[i] != x[i-1]` with
    /// `==`, so every NaN starts a run and -0.0 and +0.0 share one.
    RunHeads,
    /// A user-defined predicate.
    Predicate(Predicate),
}

impl Selection {
    /// The type of the selection's data beside the input, if it has any.
    pub fn data_type(&self) -> Option<DType> {
        match self {
            Selection::ByteFlags => Some(DType::U8),
            Selection::BitFlags => Some(DType::U32),
            _ => None,
        }
    }
    /// Entries of selection data `n` elements need.
    pub(crate) fn data_entries(&self, n: u64) -> u64 {
        match self {
            Selection::BitFlags => n.div_ceil(32),
            _ => n,
        }
    }
    /// Checks the selection against the element type.
    pub(crate) fn check(&self, dtype: DType) -> Result<()> {
        match self {
            Selection::Compare(_, operand) if operand.dtype() != dtype => bail!(
                InvalidArgument,
                "the comparison's operand is a {} but the elements are {}",
                operand.dtype().c_name(),
                dtype.c_name()
            ),
            Selection::Predicate(p) if !is_identifier(&p.function) => bail!(
                InvalidArgument,
                "predicate function {:?} is not a C identifier",
                p.function
            ),
            _ => Ok(()),
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub use crate::tables::SelectOutput;

/// A selection, partition or unique: which elements, what is written, and at most how
/// many selected elements are written (the count always counts them all).
#[derive(Debug, Clone)]
pub struct SelectDesc {
    /// Which elements are selected.
    pub selection: Selection,
    /// What is written.
    pub output: SelectOutput,
    /// Write at most this many selected elements (`None`: all; selections only), as
    /// torch's `nonzero_static`: the output's length need only be the capacity.
    pub capacity: Option<u64>,
}

impl SelectDesc {
    /// Keeps the elements `selection` chooses, writing their values.
    pub fn new(selection: Selection) -> SelectDesc {
        SelectDesc {
            selection,
            output: SelectOutput::Values,
            capacity: None,
        }
    }
    /// Writes the selected elements' indices instead of their values.
    pub fn indices(mut self) -> Self {
        self.output = SelectOutput::Indices;
        self
    }
    /// Writes at most `capacity` selected elements.
    pub fn with_capacity(mut self, capacity: u64) -> Self {
        self.capacity = Some(capacity);
        self
    }
}
