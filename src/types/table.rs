//! **The one table of element types**: each type's size, kind and names (CUDA, NumPy,
//! DLPack, XLA), and the Rust type that carries it. The `DType` enum itself is a row of
//! src/tables.rs.

pub use crate::tables::DType;

/// What kind of number an element type holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    /// Unsigned integers.
    Unsigned,
    /// Two's complement integers.
    Signed,
    /// IEEE 754 floating point.
    Float,
}

/// The properties of an element type.
#[derive(Debug, Clone, Copy)]
pub struct DTypeInfo {
    /// Bytes per element.
    pub size: usize,
    /// What kind of number.
    pub kind: NumberKind,
    /// The CUDA C++ spelling in kernel specialisations (kernels/util/types.cuh).
    pub cuda: &'static str,
    /// The name NumPy, PyTorch and JAX give it (the Python package's dtype names).
    pub name: &'static str,
    /// DLPack's type code (`kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, `kDLBfloat` 4); its bits
    /// are `8 * size`, one lane.
    pub dlpack_code: u8,
    /// XLA's primitive type (`XLA_FFI_DataType`), as JAX's FFI hands buffers over.
    pub xla_code: u8,
}

impl DType {
    /// The element type's properties: **the one table of element types**, one row per
    /// type, that every layer reads (kernel sources, DLPack views, the Python package).
    pub const fn info(self) -> DTypeInfo {
        use NumberKind::*;
        const INT: u8 = 0;
        const UINT: u8 = 1;
        const FLOAT: u8 = 2;
        const BFLOAT: u8 = 4;
        let (size, kind, cuda, name, dlpack_code, xla_code) = match self {
            DType::U8 => (1, Unsigned, "u8", "uint8", UINT, 6),
            DType::I32 => (4, Signed, "i32", "int32", INT, 4),
            DType::U32 => (4, Unsigned, "u32", "uint32", UINT, 8),
            DType::I64 => (8, Signed, "i64", "int64", INT, 5),
            DType::U64 => (8, Unsigned, "u64", "uint64", UINT, 9),
            DType::F32 => (4, Float, "float", "float32", FLOAT, 11),
            DType::F64 => (8, Float, "double", "float64", FLOAT, 12),
            DType::I8 => (1, Signed, "i8", "int8", INT, 2),
            DType::U16 => (2, Unsigned, "u16", "uint16", UINT, 7),
            DType::I16 => (2, Signed, "i16", "int16", INT, 3),
            DType::F16 => (2, Float, "f16", "float16", FLOAT, 10),
            DType::BF16 => (2, Float, "bf16", "bfloat16", BFLOAT, 16),
        };
        DTypeInfo {
            size,
            kind,
            cuda,
            name,
            dlpack_code,
            xla_code,
        }
    }
    /// The type NumPy, PyTorch and JAX call `name` (`bool` arrays are read as `u8`).
    pub fn named(name: &str) -> Option<DType> {
        let name = if name == "bool" { "uint8" } else { name };
        DType::ALL.into_iter().find(|t| t.info().name == name)
    }
    /// The type of XLA's primitive type `code` (XLA's `PRED`, 1, is read as `u8`).
    pub fn of_xla(code: u8) -> Option<DType> {
        let code = if code == 1 { DType::U8.info().xla_code } else { code };
        DType::ALL.into_iter().find(|t| t.info().xla_code == code)
    }
    /// The type of DLPack's `(code, bits, lanes)`.
    pub fn of_dlpack(code: u8, bits: u8, lanes: u16) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|t| lanes == 1 && t.info().dlpack_code == code && 8 * t.size() == bits as usize)
    }
    /// Bytes per element.
    pub const fn size(self) -> usize {
        self.info().size
    }
    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        self.info().kind == NumberKind::Float
    }
    /// Whether it is a 16-bit float (f16, bf16): a storage type that scans read into and
    /// write from an f32 accumulator, never one they compute in.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
    /// The accumulator of a scan written as `self` unless it asks for another: the type
    /// itself, f32 for the half types, 32 bits for 8- and 16-bit integers.
    pub fn default_accumulator(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            DType::U8 | DType::U16 => DType::U32,
            DType::I8 | DType::I16 => DType::I32,
            _ => self,
        }
    }
}
/// Evaluates `$body` with the type alias `$T` bound to the Rust type of a `DType`.
///
/// ```
/// let bytes = scanrt::dispatch_dtype!(scanrt::DType::I16, |T| std::mem::size_of::<T>());
/// assert_eq!(bytes, 2);
/// ```
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's names and DLPack codes find each type again, and no other.
    #[test]
    fn names_and_dlpack_codes_find_their_type() {
        for t in DType::ALL {
            let info = t.info();
            assert_eq!(DType::named(info.name), Some(t));
            assert_eq!(DType::of_dlpack(info.dlpack_code, 8 * info.size as u8, 1), Some(t));
            assert_eq!(DType::of_dlpack(info.dlpack_code, 8 * info.size as u8, 2), None);
            assert_eq!(
                t.c_name().trim_start_matches("SCANRT_DTYPE_").to_lowercase(),
                t.describe()
            );
        }
        assert_eq!(DType::named("bool"), Some(DType::U8));
        assert_eq!(DType::named("complex64"), None);
    }
}
