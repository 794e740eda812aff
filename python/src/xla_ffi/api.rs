//! The part of XLA's FFI C API (`xla/ffi/api/c_api.h`, API version 0.1, as jaxlib 0.5 to
//! 0.7 ship it) that scanrt's handlers use: the call frame, its buffers and attributes,
//! the metadata query, and the API's error and stream functions. Layouts are the C
//! header's; C enums are `i32` fields compared with the constants here, so that a value
//! this version does not know is never a Rust enum.

use std::ffi::{c_char, c_void};

/// `XLA_FFI_Extension_Metadata`: the extension of a call that asks the handler's metadata.
pub const EXTENSION_METADATA: i32 = 1;
/// `XLA_FFI_ExecutionStage_EXECUTE`.
pub const STAGE_EXECUTE: i32 = 3;
/// `XLA_FFI_AttrType_SCALAR`, `_STRING`.
pub const ATTR_SCALAR: i32 = 3;
pub const ATTR_STRING: i32 = 4;
/// `XLA_FFI_DataType` codes of the attribute scalars scanrt reads.
pub const PRED: i32 = 1;
pub const S32: i32 = 4;
pub const S64: i32 = 5;
pub const U64: i32 = 9;
pub const F32: i32 = 11;
pub const F64: i32 = 12;
/// `XLA_FFI_Error_Code_INVALID_ARGUMENT`, `_INTERNAL`.
pub const ERROR_INVALID_ARGUMENT: i32 = 3;
pub const ERROR_INTERNAL: i32 = 13;
/// The API version scanrt's handlers are written against (older XLA wants it exactly).
pub const API_VERSION: (i32, i32) = (0, 1);
/// `XLA_FFI_CallFrame_STRUCT_SIZE`: up to `attrs` (the `future` after it is not counted).
pub const CALL_FRAME_SIZE: usize = 168;

#[repr(C)]
pub struct ExtensionBase {
    pub struct_size: usize,
    pub kind: i32,
    pub next: *mut ExtensionBase,
}

#[repr(C)]
pub struct ApiVersion {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub major: i32,
    pub minor: i32,
}

#[repr(C)]
pub struct Metadata {
    pub struct_size: usize,
    pub api_version: ApiVersion,
    pub traits: u32,
}

#[repr(C)]
pub struct MetadataExtension {
    pub base: ExtensionBase,
    pub metadata: *mut Metadata,
}

#[repr(C)]
pub struct ByteSpan {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
pub struct Scalar {
    pub dtype: i32,
    pub value: *mut c_void,
}

#[repr(C)]
pub struct Buffer {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub dtype: i32,
    pub data: *mut c_void,
    pub rank: i64,
    pub dims: *const i64,
}

/// `XLA_FFI_Args` and `XLA_FFI_Rets` alike: `size` buffers (every type `BUFFER`).
#[repr(C)]
pub struct Buffers {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub size: i64,
    pub types: *const i32,
    pub buffers: *const *const Buffer,
}

/// `XLA_FFI_Attrs`: sorted by name.
#[repr(C)]
pub struct Attrs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub size: i64,
    pub types: *const i32,
    pub names: *const *const ByteSpan,
    pub attrs: *const *const c_void,
}

#[repr(C)]
pub struct CallFrame {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub api: *const Api,
    pub ctx: *mut c_void,
    pub stage: i32,
    pub args: Buffers,
    pub rets: Buffers,
    pub attrs: Attrs,
}

/// An `XLA_FFI_Error*`: made by the API, owned by XLA once returned.
pub type Error = c_void;

#[repr(C)]
pub struct ErrorCreateArgs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub message: *const c_char,
    pub errc: i32,
}

#[repr(C)]
pub struct StreamGetArgs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub ctx: *mut c_void,
    pub stream: *mut c_void,
}

/// `XLA_FFI_Api`, its first nine fields (the same in every version so far).
#[repr(C)]
pub struct Api {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub api_version: ApiVersion,
    pub internal_api: *mut c_void,
    pub error_create: unsafe extern "C" fn(*mut ErrorCreateArgs) -> *mut Error,
    pub error_get_message: *const c_void,
    pub error_destroy: *const c_void,
    pub handler_register: *const c_void,
    pub stream_get: unsafe extern "C" fn(*mut StreamGetArgs) -> *mut Error,
}

/// A handler: XLA calls it with a call frame and takes a NULL return as success.
pub type Handler = unsafe extern "C" fn(*mut CallFrame) -> *mut Error;
