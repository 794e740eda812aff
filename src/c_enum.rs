//! `c_enum!`: one closed table (a status, an element type, an operator, ...) written once
//! in `src/tables.rs`, generating its Rust enum, its names and its decoding here, and its
//! C enum in `include/scanrt.h` (build.rs includes the same table with a C-emitting
//! version of this macro).
//!
//! Each row: `Variant = value, "C_SUFFIX", "text";` where the C constant is the enum's
//! prefix plus the suffix and `text` is the short human-readable name C callers get from
//! the `*_string` functions. Doc comments become the Rust and the C documentation.

macro_rules! c_enums {
    ($(
        $(#[doc = $doc:literal])*
        pub enum $name:ident ($c_type:literal, $prefix:literal) $(default $default:ident)? {
            $(
                $(#[doc = $vdoc:literal])*
                $variant:ident = $value:literal, $suffix:literal, $text:literal;
            )*
        }
    )*) => {$(
        $(#[doc = $doc])*
        #[repr(i32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[doc = $vdoc])* $variant = $value, )*
        }

        impl $name {
            /// Every value, in the order of the table.
            pub const ALL: [$name; <[&str]>::len(&[$(stringify!($variant)),*])] = [$($name::$variant),*];

            /// The C enum constant's name (`SCANRT_...`), as error messages spell it.
            pub fn c_name(self) -> &'static str {
                match self { $($name::$variant => concat!($prefix, $suffix)),* }
            }

            /// A short human-readable name.
            pub fn describe(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }

            /// `describe` as a NUL-terminated static string, for C.
            #[allow(dead_code)]
            pub(crate) fn describe_nul(self) -> &'static [u8] {
                match self { $($name::$variant => concat!($text, "\0").as_bytes()),* }
            }

            /// The value C passed, decoded: unknown values are `InvalidArgument`.
            #[allow(dead_code)]
            pub(crate) fn from_c(v: i32) -> $crate::error::Result<$name> {
                match v {
                    $($value => Ok($name::$variant),)*
                    _ => Err($crate::error::Error::new(
                        $crate::error::ScanrtStatus::InvalidArgument,
                        format!(concat!("unknown ", $c_type, " value {}"), v),
                    )),
                }
            }
        }

        $(impl Default for $name {
            fn default() -> Self { $name::$default }
        })?
    )*};
}
