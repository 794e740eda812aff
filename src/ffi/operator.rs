//! User-defined operators: the description and its conversion, creation (and the
//! built-in recipes), destruction. Their scans are in `operator_scan`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::context::scanrt_context;
use super::strings::{optional_text, required_text};
use super::support::{boundary, non_null, non_null_mut, put, slice_of};
use super::versioned::{init_sized, read_versioned, Versioned};
use crate::error::{bail, Result};
use crate::operator::{HostOperator, Operator, OperatorDesc};
use crate::recipes;
use crate::scalar::InitValue;
use crate::tables::{DType, ScanrtStatus};

/// A compiled user-defined operator of one context; scans may use it from any thread.
pub struct scanrt_operator {
    pub(crate) inner: Operator,
}

/// What a user-defined operator is. Initialise with `scanrt_operator_desc_init`, then
/// set fields; strings are NUL-terminated UTF-8 and are copied by
/// `scanrt_operator_create`.
///
/// `source` is CUDA C++ (compiled by NVRTC without the standard headers; `uint32_t`,
/// `int64_t` and friends are defined) that defines the state type `state_type` (trivially
/// copyable, 4 to 64 bytes, a multiple of 4) and `__device__` functions:
/// `State combine(State a, State b)`, associative with `a` first in sequence order (it
/// need not commute); optionally `State load(int64_t i, I0 x0, ...)` building element `i`
/// from up to four input arrays of `input_dtypes`, and `void store(const State& s, O0& y0,
/// ...)` writing each result to one or two output arrays of `output_dtypes`. Without a
/// load (a store) the scan reads (writes) one array of states.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct scanrt_operator_desc {
    /// `sizeof(scanrt_operator_desc)` as the caller compiled it, set by the
    /// `scanrt_operator_desc_init` macro.
    pub struct_size: usize,
    /// Names the operator in compiler messages (`name(line): error ...`) and logs.
    pub name: *const c_char,
    /// The CUDA source.
    pub source: *const c_char,
    /// The state type's name.
    pub state_type: *const c_char,
    /// `sizeof` of the state type as the host compiled it (checked against the device's).
    pub state_size: usize,
    /// `alignof` of the state type as the host compiled it (checked likewise).
    pub state_align: usize,
    /// The combine function's name.
    pub combine: *const c_char,
    /// The identity: `state_size` bytes.
    pub identity: *const c_void,
    /// The load function's name, or NULL (the input is an array of states).
    pub load: *const c_char,
    /// The `scanrt_dtype` of each input array of `load` (1 to 4).
    pub input_dtypes: *const i32,
    /// How many entries `input_dtypes` has.
    pub num_inputs: usize,
    /// The store function's name, or NULL (the output is an array of states).
    pub store: *const c_char,
    /// The `scanrt_dtype` of each output array of `store` (1 or 2).
    pub output_dtypes: *const i32,
    /// How many entries `output_dtypes` has.
    pub num_outputs: usize,
    /// Host functions for the host backend (NULL: the host backend returns
    /// `SCANRT_STATUS_UNSUPPORTED_COMBINATION`). They may be called from several threads
    /// at once and must not unwind or `longjmp` out. `*out = combine(*a, *b)`: each
    /// pointer addresses one state.
    pub host_combine:
        Option<unsafe extern "C" fn(a: *const c_void, b: *const c_void, out: *mut c_void, user_data: *mut c_void)>,
    /// The host `load` (required with `load` and `host_combine`): `*state = load(index,
    /// *inputs[0], ...)`, `inputs[k]` addressing element `index` of input array k.
    pub host_load: Option<
        unsafe extern "C" fn(index: u64, inputs: *const *const c_void, state: *mut c_void, user_data: *mut c_void),
    >,
    /// The host `store` (required with `store` and `host_combine`): `store(*state,
    /// *outputs[0], ...)`, `outputs[k]` addressing the element of output array k to write.
    pub host_store:
        Option<unsafe extern "C" fn(state: *const c_void, outputs: *const *mut c_void, user_data: *mut c_void)>,
    /// Passed to every host function as `user_data`; must outlive the operator.
    pub host_user_data: *mut c_void,
}

impl Default for scanrt_operator_desc {
    fn default() -> Self {
        scanrt_operator_desc {
            struct_size: std::mem::size_of::<scanrt_operator_desc>(),
            name: std::ptr::null(),
            source: std::ptr::null(),
            state_type: std::ptr::null(),
            state_size: 0,
            state_align: 0,
            combine: std::ptr::null(),
            identity: std::ptr::null(),
            load: std::ptr::null(),
            input_dtypes: std::ptr::null(),
            num_inputs: 0,
            store: std::ptr::null(),
            output_dtypes: std::ptr::null(),
            num_outputs: 0,
            host_combine: None,
            host_load: None,
            host_store: None,
            host_user_data: std::ptr::null_mut(),
        }
    }
}

impl Versioned for scanrt_operator_desc {
    const NAME: &'static str = "scanrt_operator_desc";
    const INIT: &'static str = "scanrt_operator_desc_init";
    const V1_SIZE: usize = 144;
    fn with_size(self, struct_size: usize) -> Self {
        scanrt_operator_desc { struct_size, ..self }
    }
}

const _: () = assert!(std::mem::size_of::<scanrt_operator_desc>() >= scanrt_operator_desc::V1_SIZE);

/// The `count` entries at `p` of one of an operator's array lists (at most four).
pub(super) unsafe fn array_list<'a, T>(p: *const T, count: usize, what: &str) -> Result<&'a [T]> {
    if count > 4 {
        bail!(InvalidArgument, "{what}: {count} arrays, more than any operator takes");
    }
    slice_of(p, count, what)
}

/// `count` dtypes at `p`.
unsafe fn dtypes(p: *const i32, count: usize, what: &str) -> Result<Vec<DType>> {
    array_list(p, count, what)?.iter().map(|&d| DType::from_c(d)).collect()
}

/// The application's `user_data`, shared by its host functions, which the contract
/// requires to be callable from any thread.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);
// SAFETY: scanrt only passes the pointer back to the application's functions, which
// `scanrt_operator_desc` documents as callable from several threads at once.
unsafe impl Send for UserData {}
unsafe impl Sync for UserData {}

fn host_from_c(d: &scanrt_operator_desc, has_load: bool, has_store: bool) -> Result<Option<HostOperator>> {
    let Some(combine) = d.host_combine else {
        if d.host_load.is_some() || d.host_store.is_some() {
            bail!(InvalidArgument, "host_load or host_store given without host_combine");
        }
        return Ok(None);
    };
    let user = UserData(d.host_user_data);
    let load = match (has_load, d.host_load) {
        (false, None) => None,
        (true, Some(load)) => Some(Arc::new(move |i: u64, inputs: &[&[u8]], state: &mut [u8]| {
            let mut pointers = [std::ptr::null::<c_void>(); 4];
            for (p, x) in pointers.iter_mut().zip(inputs) {
                *p = x.as_ptr() as *const c_void;
            }
            let user = user;
            // SAFETY: the application's function, with one element per input and a
            // state-sized output, as documented.
            unsafe { load(i, pointers.as_ptr(), state.as_mut_ptr() as *mut c_void, user.0) }
        }) as _),
        (true, None) => bail!(InvalidArgument, "the operator has a load but no host_load"),
        (false, Some(_)) => bail!(InvalidArgument, "host_load given but the operator has no load"),
    };
    let store = match (has_store, d.host_store) {
        (false, None) => None,
        (true, Some(store)) => Some(Arc::new(move |state: &[u8], outputs: &mut [&mut [u8]]| {
            let mut pointers = [std::ptr::null_mut::<c_void>(); 2];
            for (p, y) in pointers.iter_mut().zip(outputs.iter_mut()) {
                *p = y.as_mut_ptr() as *mut c_void;
            }
            let user = user;
            // SAFETY: as for load.
            unsafe { store(state.as_ptr() as *const c_void, pointers.as_ptr(), user.0) }
        }) as _),
        (true, None) => bail!(InvalidArgument, "the operator has a store but no host_store"),
        (false, Some(_)) => bail!(InvalidArgument, "host_store given but the operator has no store"),
    };
    Ok(Some(HostOperator {
        combine: Arc::new(move |a, b, out| {
            let user = user;
            // SAFETY: as for load: three state-sized byte ranges.
            unsafe {
                combine(
                    a.as_ptr() as *const c_void,
                    b.as_ptr() as *const c_void,
                    out.as_mut_ptr() as *mut c_void,
                    user.0,
                )
            }
        }),
        load,
        store,
    }))
}

/// The Rust description of the caller's.
unsafe fn desc_from_c(desc: *const scanrt_operator_desc) -> Result<OperatorDesc> {
    let d = read_versioned(desc, "desc")?;
    if d.identity.is_null() {
        bail!(NullArgument, "desc->identity must not be NULL");
    }
    if !(4..=crate::contract::MAX_STATE_BYTES as usize).contains(&d.state_size) {
        bail!(
            InvalidArgument,
            "desc->state_size {} is not 4 to {} bytes",
            d.state_size,
            crate::contract::MAX_STATE_BYTES
        );
    }
    let load = optional_text(d.load, "desc->load")?;
    let store = optional_text(d.store, "desc->store")?;
    let inputs = dtypes(d.input_dtypes, d.num_inputs, "desc->input_dtypes")?;
    let outputs = dtypes(d.output_dtypes, d.num_outputs, "desc->output_dtypes")?;
    if load.is_none() && !inputs.is_empty() || store.is_none() && !outputs.is_empty() {
        bail!(
            InvalidArgument,
            "array dtypes given for a missing load or store function"
        );
    }
    let host = host_from_c(&d, load.is_some(), store.is_some())?;
    // SAFETY: the identity holds state_size bytes (the struct's contract), bounded above.
    let identity = std::slice::from_raw_parts(d.identity as *const u8, d.state_size);
    Ok(OperatorDesc {
        name: required_text(d.name, "desc->name")?,
        source: required_text(d.source, "desc->source")?,
        state_type: required_text(d.state_type, "desc->state_type")?,
        state_size: d.state_size,
        state_align: d.state_align,
        combine: required_text(d.combine, "desc->combine")?,
        identity: identity.to_vec(),
        load: load.map(|f| (f, inputs)),
        store: store.map(|f| (f, outputs)),
        host,
        max_length: None,
    })
}

/// Fills the first `size` bytes of `desc` with empty fields and sets `desc->struct_size`.
/// Call it through the `scanrt_operator_desc_init(desc)` macro.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_desc_init_sized(desc: *mut scanrt_operator_desc, size: usize) -> ScanrtStatus {
    boundary(|| init_sized(desc, size, "desc"))
}

/// Creates a user-defined operator of `ctx`. On a GPU context its forward kernels are
/// compiled now (or loaded from the disk cache): a bad source fails here with
/// `SCANRT_STATUS_COMPILE_ERROR` and a message holding the compiler's log, which cites
/// the source's own lines as `name(line)`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_create(
    ctx: *const scanrt_context,
    desc: *const scanrt_operator_desc,
    out: *mut *mut scanrt_operator,
) -> ScanrtStatus {
    boundary(|| create(ctx, out, || desc_from_c(desc)))
}

/// Compiles every kernel of the operator `desc` for `sm_<arch>` (for example 90) into the
/// disk cache, without a GPU: for packaging, or to check a source. Writes the images'
/// total size to `*bytes` (may be NULL).
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_compile(
    desc: *const scanrt_operator_desc,
    arch: i32,
    bytes: *mut usize,
) -> ScanrtStatus {
    boundary(|| {
        let total = crate::operator::compile_operator(&desc_from_c(desc)?, arch)?;
        if let Some(bytes) = bytes.as_mut() {
            *bytes = total;
        }
        Ok(())
    })
}

/// Creates the linear recurrence `h[i] = a[i] * h[i-1] + b[i]` over `dtype`
/// (`SCANRT_DTYPE_F32` or `SCANRT_DTYPE_F64`): inputs `a`, `b`, output `h`. Backward scans
/// run `h[i] = a[i] * h[i+1] + b[i]`. Start from `h0` with the initial state of
/// `scanrt_linear_recurrence_init`; the final state is the last `h` written (the first,
/// backward), which continues a chunked sequence.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_create_linear_recurrence(
    ctx: *const scanrt_context,
    dtype: i32,
    out: *mut *mut scanrt_operator,
) -> ScanrtStatus {
    boundary(|| create(ctx, out, || recipes::linear_recurrence(DType::from_c(dtype)?)))
}

/// Writes the initial state of a linear recurrence over `dtype` starting from `h0` to
/// `state` (`bytes` must be its state size: 8 for f32, 16 for f64).
#[no_mangle]
pub unsafe extern "C" fn scanrt_linear_recurrence_init(
    dtype: i32,
    h0: f64,
    state: *mut c_void,
    bytes: usize,
) -> ScanrtStatus {
    boundary(|| write_state(recipes::recurrence_init(DType::from_c(dtype)?, h0)?, state, bytes))
}

/// Creates the adjoint of the linear recurrence, `lam[i] = g[i] + a[j] * lam[j]` with `j`
/// the element before `i` in traversal order, over `dtype` (as the recurrence): inputs
/// `a`, `g`, output `lam`. Scanned in the other direction with `g` the gradient of a
/// recurrence's `h`, `lam` is the gradient of its `b`, and `lam[i] * h[i-1]` that of
/// `a[i]`. Start from the final state's gradient with `scanrt_linear_recurrence_adjoint_init`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_create_linear_recurrence_adjoint(
    ctx: *const scanrt_context,
    dtype: i32,
    out: *mut *mut scanrt_operator,
) -> ScanrtStatus {
    boundary(|| create(ctx, out, || recipes::linear_recurrence_adjoint(DType::from_c(dtype)?)))
}

/// Writes the initial state of a linear recurrence adjoint over `dtype` that passes `u`
/// (the gradient of the recurrence's final state) to the first element, to `state`
/// (`bytes` must be its state size: 16 for f32, 32 for f64).
#[no_mangle]
pub unsafe extern "C" fn scanrt_linear_recurrence_adjoint_init(
    dtype: i32,
    u: f64,
    state: *mut c_void,
    bytes: usize,
) -> ScanrtStatus {
    boundary(|| {
        write_state(
            recipes::recurrence_adjoint_init(DType::from_c(dtype)?, u)?,
            state,
            bytes,
        )
    })
}

/// Copies a recipe's state to the caller's `bytes` at `state`, which must be its size.
unsafe fn write_state(init: Vec<u8>, state: *mut c_void, bytes: usize) -> Result<()> {
    if bytes != init.len() {
        bail!(InvalidArgument, "the state has {} bytes, not {bytes}", init.len());
    }
    non_null_mut(state as *mut u8, "state")?;
    // SAFETY: `state` holds `bytes` writable bytes (the caller's contract).
    unsafe { std::slice::from_raw_parts_mut(state as *mut u8, bytes) }.copy_from_slice(&init);
    Ok(())
}

/// Creates the running maximum (`max` nonzero) or minimum of `dtype` values (any type)
/// with the index of the extreme (the first in traversal order on ties; NaN propagates:
/// from the first NaN of a segment on, the extreme is that NaN and its index): input `x`,
/// outputs the extreme (`dtype`) and its index (`SCANRT_DTYPE_U32`; sequences of more than
/// 2^32 - 2 elements get `SCANRT_STATUS_UNSUPPORTED_COMBINATION`). An
/// exclusive scan's first result has index `UINT32_MAX`; results that keep an initial
/// value (`scanrt_cumulative_extreme_init`) have index `SCANRT_EXTREME_INITIAL_INDEX`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_create_cumulative_extreme(
    ctx: *const scanrt_context,
    dtype: i32,
    max: i32,
    out: *mut *mut scanrt_operator,
) -> ScanrtStatus {
    boundary(|| {
        create(ctx, out, || {
            recipes::cumulative_extreme(DType::from_c(dtype)?, max != 0)
        })
    })
}

/// Creates `y[i] = log(exp(x[0]) + ... + exp(x[i]))` over `dtype` (f32 or f64; f16 and
/// bf16 arrays with f32 states), numerically stable for inputs up to the type's maximum:
/// input `x`, output `y`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_create_logcumsumexp(
    ctx: *const scanrt_context,
    dtype: i32,
    out: *mut *mut scanrt_operator,
) -> ScanrtStatus {
    boundary(|| create(ctx, out, || recipes::logcumsumexp(DType::from_c(dtype)?)))
}

/// The index of a cumulative extreme's result that keeps the initial value.
pub const SCANRT_EXTREME_INITIAL_INDEX: u32 = u32::MAX - 1;
const _: () = assert!(SCANRT_EXTREME_INITIAL_INDEX == recipes::EXTREME_INITIAL_INDEX);

/// Writes the initial state of a cumulative extreme of `dtype` arrays to `state` (`bytes`
/// must be its state size: 16 for 8-byte types, else 8): `value` points to one `dtype`
/// value, which every segment starts from and which wins ties.
#[no_mangle]
pub unsafe extern "C" fn scanrt_cumulative_extreme_init(
    dtype: i32,
    value: *const c_void,
    state: *mut c_void,
    bytes: usize,
) -> ScanrtStatus {
    boundary(|| {
        let dtype = DType::from_c(dtype)?;
        non_null(value as *const u8, "value")?;
        let mut bits = [0u8; 8];
        // SAFETY: `value` points to one readable `dtype` value (the caller's contract).
        let raw = unsafe { std::slice::from_raw_parts(value as *const u8, dtype.size()) };
        bits[..dtype.size()].copy_from_slice(raw);
        let value = InitValue::from_bits(dtype, u64::from_le_bytes(bits));
        write_state(recipes::cumulative_extreme_init(dtype, value)?, state, bytes)
    })
}

/// Writes the initial state of a logcumsumexp of `dtype` arrays to `state` (`bytes` must
/// be its state size: 8 for f16, bf16 and f32, 16 for f64): `value`, one more term before
/// every segment.
#[no_mangle]
pub unsafe extern "C" fn scanrt_logcumsumexp_init(
    dtype: i32,
    value: f64,
    state: *mut c_void,
    bytes: usize,
) -> ScanrtStatus {
    boundary(|| write_state(recipes::logcumsumexp_init(DType::from_c(dtype)?, value)?, state, bytes))
}

/// Makes `*out` an operator of `ctx` created from `desc()`.
unsafe fn create(
    ctx: *const scanrt_context,
    out: *mut *mut scanrt_operator,
    desc: impl FnOnce() -> Result<OperatorDesc>,
) -> Result<()> {
    put(out, || {
        let ctx = &non_null(ctx, "ctx")?.inner;
        Ok(scanrt_operator {
            inner: ctx.create_operator(desc()?)?,
        })
    })
}

/// Destroys an operator (NULL is a no-op); scans already queued keep its kernels alive.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_destroy(op: *mut scanrt_operator) {
    super::support::destroy(op)
}

/// Writes the operator's state size in bytes to `*bytes`.
#[no_mangle]
pub unsafe extern "C" fn scanrt_operator_state_size(op: *const scanrt_operator, bytes: *mut usize) -> ScanrtStatus {
    boundary(|| {
        *non_null_mut(bytes, "bytes")? = non_null(op, "op")?.inner.desc().state_size;
        Ok(())
    })
}
