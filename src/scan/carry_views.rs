//! The carries of a scan of views (`CarryViews`): the initial value read from memory and
//! the total written there, as views; checked here for every scan that takes them (a 1-D
//! scan uses their first element, a batch of sequences one element per sequence).

use crate::array::ArrayView;
use crate::error::{bail, Result};
use crate::scan::operator_model::Carries;
use crate::types::DType;

/// The carries of a scan of views: each a view of at least one element of the scan's
/// accumulator type (the output type unless the descriptor widens it). A scan of a 1-D
/// view uses their first element; a scan along an axis of a larger view takes one carry in
/// for every sequence or one per sequence, and one carry out per sequence, in the
/// row-major order of the other axes.
#[derive(Debug, Clone, Copy, Default)]
pub struct CarryViews<'a> {
    /// The initial value (instead of the descriptor's).
    pub carry_in: Option<&'a ArrayView<'a>>,
    /// Receives the total; may be the same element as `carry_in`.
    pub carry_out: Option<&'a ArrayView<'a>>,
}

/// A checked carry view: its address and length (0 and 0 where none was given).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckedCarry {
    pub addr: u64,
    pub len: u64,
}

impl CarryViews<'_> {
    /// Both views checked: of this context where they are buffers, of the accumulator
    /// type, 1-D, the carry out writable (alignment and the initial value are
    /// `checks::check_carries`'s).
    pub(crate) fn checked(&self, accumulator: DType, ctx_id: usize) -> Result<[CheckedCarry; 2]> {
        let check = |view: Option<&ArrayView>, what: &str, written: bool| -> Result<CheckedCarry> {
            let Some(view) = view else {
                return Ok(CheckedCarry::default());
            };
            view.known_to(ctx_id)?;
            if view.dtype() != accumulator {
                bail!(
                    InvalidArgument,
                    "the {what} is a {} array but the scan accumulates in {}",
                    view.dtype().c_name(),
                    accumulator.c_name()
                );
            }
            let len = view.flat_len(what)?;
            if written && !view.writable {
                bail!(InvalidArgument, "the {what} is read only");
            }
            Ok(CheckedCarry { addr: view.addr(), len })
        };
        Ok([
            check(self.carry_in, "carry in", false)?,
            check(self.carry_out, "carry out", true)?,
        ])
    }

    /// The addresses of a 1-D scan's carries, which hold `states` elements each: 1, or
    /// one per segment.
    pub(crate) fn addresses(&self, accumulator: DType, ctx_id: usize, states: u64) -> Result<Carries> {
        let [carry_in, carry_out] = self.checked(accumulator, ctx_id)?;
        for (carry, given, what) in [
            (carry_in, self.carry_in.is_some(), "carry in"),
            (carry_out, self.carry_out.is_some(), "carry out"),
        ] {
            if given && carry.len < states {
                bail!(
                    BufferTooSmall,
                    "the {what} holds {} elements; the scan needs {states}",
                    carry.len
                );
            }
        }
        Ok(Carries {
            carry_in: carry_in.addr,
            carry_out: carry_out.addr,
        })
    }
}
