//! What a sort computes: the order (`SortOrder`), the key bits it looks at, and the
//! order-preserving unsigned word of each key type that both backends rank.

use crate::error::{bail, Result};
pub use crate::tables::SortOrder;
use crate::types::{DType, NumberKind};

/// A radix sort's description. Keys order as numbers: signed integers as signed; floats
/// by the total order `-inf < ... < -0 < +0 < ... < +inf < NaN` (positive NaNs before
/// negative ones, each by payload), so a sort is defined for every bit pattern and gives
/// every key back bit for bit. The sort is stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SortDesc {
    /// Ascending (the default) or descending.
    pub order: SortOrder,
    /// The lowest bit of the ordered key the sort looks at (0 by default).
    pub begin_bit: u32,
    /// One past the highest (`None`: the key's width). Keys equal in bits
    /// `begin_bit..end_bit` of their ordered word keep their input order: with a range
    /// narrower than the key, the sort orders by those bits only (as CUB's bit range).
    pub end_bit: Option<u32>,
}

impl SortDesc {
    /// Ascending over every bit.
    pub fn ascending() -> SortDesc {
        SortDesc::default()
    }
    /// Descending over every bit.
    pub fn descending() -> SortDesc {
        SortDesc {
            order: SortOrder::Descending,
            ..SortDesc::default()
        }
    }
    /// The bit range for keys of `dtype`, checked.
    pub(crate) fn bits(&self, dtype: DType) -> Result<(u32, u32)> {
        let width = 8 * dtype.size() as u32;
        let end = self.end_bit.unwrap_or(width);
        if self.begin_bit > end || end > width {
            bail!(
                InvalidArgument,
                "bit range {}..{end} is not within the {width} bits of {} keys",
                self.begin_bit,
                dtype.c_name()
            );
        }
        Ok((self.begin_bit, end))
    }
}

/// The digit passes over bits `begin..end`: 8 bits each, at least one (a pass over no
/// bits copies, and writes the indices of an argsort).
pub(crate) fn passes(begin: u32, end: u32) -> u32 {
    (end - begin).div_ceil(8).max(1)
}

/// The order-preserving unsigned word of a key's bits (zero-extended to 64), as the
/// kernels' `OrderedKey` computes it (kernels/device/radix_sort.cuh).
pub(crate) fn ordered_key(dtype: DType, bits: u64) -> u64 {
    let width = 8 * dtype.size() as u32;
    let sign = 1u64 << (width - 1);
    let all = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
    match dtype.info().kind {
        NumberKind::Unsigned => bits,
        NumberKind::Signed => bits ^ sign,
        NumberKind::Float => {
            let mantissa_bits = match dtype {
                DType::F16 => 10,
                DType::BF16 => 7,
                DType::F32 => 23,
                _ => 52,
            };
            let mantissa = (1u64 << mantissa_bits) - 1;
            if bits > (!mantissa & all) {
                bits
            } else if bits & sign != 0 {
                (!bits & all) - mantissa
            } else {
                bits + (sign - mantissa)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The float words order as the documented total order and are a bijection on the
    /// boundaries.
    #[test]
    fn float_keys_follow_the_total_order() {
        let order = [
            f32::NEG_INFINITY,
            -1.0e30,
            -1.0,
            -f32::MIN_POSITIVE / 2.0,
            -0.0,
            0.0,
            f32::MIN_POSITIVE / 2.0,
            1.0,
            f32::INFINITY,
        ];
        let mut words: Vec<u64> = order
            .iter()
            .map(|x| ordered_key(DType::F32, x.to_bits() as u64))
            .collect();
        words.extend(
            [0x7fc0_0000u64, 0x7fff_ffff, 0xff80_0001, 0xffc0_0000, 0xffff_ffff].map(|b| ordered_key(DType::F32, b)),
        );
        assert!(words.windows(2).all(|w| w[0] < w[1]), "{words:x?}");
        assert_eq!(ordered_key(DType::F32, 0xff80_0000), 0);
        assert_eq!(ordered_key(DType::F64, 0xfff0_0000_0000_0000), 0);
        assert_eq!(ordered_key(DType::F64, 0x7fff_ffff_ffff_ffff), 0xfff0_0000_0000_0000);
        assert_eq!(ordered_key(DType::I8, 0x80), 0);
        assert_eq!(ordered_key(DType::I16, 0x7fff), 0xffff);
    }

    /// Every binary16 and bfloat16 word maps to a distinct word in the total order:
    /// numbers by value (-0 before +0), then positive NaNs, then negative ones.
    #[test]
    fn half_keys_follow_the_total_order() {
        for (dtype, value) in [
            (
                DType::F16,
                (|b: u16| half::f16::from_bits(b).to_f64()) as fn(u16) -> f64,
            ),
            (DType::BF16, |b: u16| half::bf16::from_bits(b).to_f64()),
        ] {
            let mut all: Vec<u16> = (0..=u16::MAX).collect();
            let class = |b: u16| match (value(b).is_nan(), b >> 15) {
                (false, _) => 0,
                (true, 0) => 1,
                (true, _) => 2,
            };
            // NaNs by their bits (the payload), after the numbers.
            let number = |b: u16| if class(b) == 0 { value(b) } else { 0.0 };
            all.sort_by(|&a, &b| {
                (class(a), number(a), a >> 15 == 0, a)
                    .partial_cmp(&(class(b), number(b), b >> 15 == 0, b))
                    .unwrap()
            });
            let words: Vec<u64> = all.iter().map(|&b| ordered_key(dtype, b as u64)).collect();
            assert!(words.windows(2).all(|w| w[0] < w[1]), "{dtype:?}");
            assert_eq!(words[0], 0, "{dtype:?}: -inf first");
        }
    }
}
