//! Values of the element types: the Rust types that carry them ([`Scalar`], sealed to
//! exactly the types of [`DType`]) and a typed initial value kept as its bits
//! ([`InitValue`]).

use crate::types::DType;

/// A typed initial value: a value of one element type, kept as its bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitValue {
    dtype: DType,
    bits: u64,
}

impl InitValue {
    /// The initial value `v`.
    pub fn of<T: Scalar>(v: T) -> InitValue {
        InitValue {
            dtype: T::DTYPE,
            bits: v.to_bits(),
        }
    }
    /// A value of `dtype` given as its bits (the low bytes for 4-byte types).
    pub(crate) fn from_bits(dtype: DType, bits: u64) -> InitValue {
        InitValue { dtype, bits }
    }
    /// The value's element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The value's bits, zero-extended to 64.
    pub(crate) fn bits(&self) -> u64 {
        self.bits
    }
    /// The value as `T`, when it is a `T`.
    pub fn value<T: Scalar>(&self) -> Option<T> {
        (T::DTYPE == self.dtype).then(|| T::from_bits(self.bits))
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Rust element types usable with the typed API: exactly the types of [`DType`]. Sealed,
/// because buffer copies trust `DTYPE` to give the size of `Self`.
pub trait Scalar: sealed::Sealed + Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// The element type `Self` is.
    const DTYPE: DType;
    /// The value's bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value whose bits are the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! scalar {
    ($($t:ty: $d:ident, $to:expr, $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn to_bits(self) -> u64 {
                ($to)(self)
            }
            fn from_bits(bits: u64) -> Self {
                ($from)(bits)
            }
        }
        // The typed API copies `DType::size()` bytes per element of `Self`.
        const _: () = assert!(std::mem::size_of::<$t>() == DType::$d.size());
    )*};
}
scalar! {
    u8: U8, |v: u8| v as u64, |b: u64| b as u8;
    i8: I8, |v: i8| v as u8 as u64, |b: u64| b as u8 as i8;
    u16: U16, |v: u16| v as u64, |b: u64| b as u16;
    i16: I16, |v: i16| v as u16 as u64, |b: u64| b as u16 as i16;
    i32: I32, |v: i32| v as u32 as u64, |b: u64| b as u32 as i32;
    u32: U32, |v: u32| v as u64, |b: u64| b as u32;
    i64: I64, |v: i64| v as u64, |b: u64| b as i64;
    u64: U64, |v: u64| v, |b: u64| b;
    f32: F32, |v: f32| v.to_bits() as u64, |b: u64| f32::from_bits(b as u32);
    f64: F64, |v: f64| v.to_bits(), f64::from_bits;
    half::f16: F16, |v: half::f16| v.to_bits() as u64, |b: u64| half::f16::from_bits(b as u16);
    half::bf16: BF16, |v: half::bf16| v.to_bits() as u64, |b: u64| half::bf16::from_bits(b as u16);
}
