//! Host functions of an operator written in Python (`scanrt.Operator(host_combine=...)`),
//! which its scans of NumPy arrays run on the host backend: Python callables, called one
//! element at a time with the GIL held. States travel as `bytes`, array elements as
//! Python numbers.
//!
//! The library's host functions cannot fail, so the first exception a callable raises
//! (or a result of the wrong size or type) is kept in a `HostFailure`; the rest of that
//! scan skips the callables, and the binding raises the exception once the scan returns.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use scanrt::half::{bf16, f16};
use scanrt::{DType, HostOperator};

/// The first error a scan's host callables raised. One per operator, whose host scans
/// take turns (`PyOperator::host_scan`), so each reports its own.
#[derive(Clone, Default)]
pub(crate) struct HostFailure(Arc<Mutex<Option<PyErr>>>);

impl HostFailure {
    /// Forgets an earlier scan's error (a new scan starts).
    pub(crate) fn clear(&self) {
        *self.0.lock() = None;
    }
    /// The error, if a callable raised one since `clear`.
    pub(crate) fn take(&self) -> Option<PyErr> {
        self.0.lock().take()
    }
    pub(crate) fn failed(&self) -> bool {
        self.0.lock().is_some()
    }
    pub(crate) fn keep(&self, error: PyErr) {
        self.0.lock().get_or_insert(error);
    }
}

/// The host functions calling `combine(first, then) -> bytes`, `load(i, x0, ...) -> bytes`
/// and `store(state) -> value or tuple of values`, for states of `size` bytes and the
/// load's and store's array types.
pub(crate) fn host_operator(
    (combine, load, store): (PyObject, Option<PyObject>, Option<PyObject>),
    size: usize,
    (input_types, output_types): (Vec<DType>, Vec<DType>),
    failure: HostFailure,
) -> HostOperator {
    let state_from = move |result: PyResult<Bound<'_, PyAny>>, out: &mut [u8], what: &str| -> PyResult<()> {
        let result = result?;
        let bytes = result
            .downcast::<PyBytes>()
            .map_err(|_| PyTypeError::new_err(format!("host_{what} returned {}, not bytes", type_name(&result))))?;
        if bytes.as_bytes().len() != size {
            return Err(PyValueError::new_err(format!(
                "host_{what} returned {} bytes; the state is {size}",
                bytes.as_bytes().len()
            )));
        }
        out.copy_from_slice(bytes.as_bytes());
        Ok(())
    };
    let on_failure = failure.clone();
    let combine_fn: scanrt::HostCombine = Arc::new(move |l, r, out| {
        if on_failure.failed() {
            return out.fill(0);
        }
        Python::with_gil(|py| {
            let result = combine.bind(py).call1((PyBytes::new(py, l), PyBytes::new(py, r)));
            if let Err(e) = state_from(result, out, "combine") {
                on_failure.keep(e);
            }
        })
    });
    let on_failure = failure.clone();
    let load_fn: Option<scanrt::HostLoad> = load.map(|load| {
        Arc::new(move |i: u64, inputs: &[&[u8]], out: &mut [u8]| {
            if on_failure.failed() {
                return out.fill(0);
            }
            Python::with_gil(|py| {
                let result = (|| {
                    let mut args = vec![i.into_pyobject(py)?.into_any()];
                    for (bytes, &t) in inputs.iter().zip(&input_types) {
                        args.push(number(py, t, bytes)?);
                    }
                    load.bind(py).call1(PyTuple::new(py, args)?)
                })();
                if let Err(e) = state_from(result, out, "load") {
                    on_failure.keep(e);
                }
            })
        }) as scanrt::HostLoad
    });
    let store_fn: Option<scanrt::HostStore> = store.map(|store| {
        Arc::new(move |state: &[u8], outputs: &mut [&mut [u8]]| {
            if failure.failed() {
                return;
            }
            Python::with_gil(|py| {
                let result = (|| {
                    let values = store.bind(py).call1((PyBytes::new(py, state),))?;
                    let values: Vec<Bound<'_, PyAny>> = match values.downcast::<PyTuple>() {
                        Ok(tuple) => tuple.iter().collect(),
                        Err(_) => vec![values],
                    };
                    if values.len() != outputs.len() {
                        return Err(PyValueError::new_err(format!(
                            "host_store returned {} values for {} outputs",
                            values.len(),
                            outputs.len()
                        )));
                    }
                    for ((value, out), &t) in values.iter().zip(outputs.iter_mut()).zip(&output_types) {
                        put_number(t, value, out)?;
                    }
                    Ok(())
                })();
                if let Err(e) = result {
                    failure.keep(e);
                }
            })
        }) as scanrt::HostStore
    });
    HostOperator {
        combine: combine_fn,
        load: load_fn,
        store: store_fn,
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
}

/// One array element (native-endian bytes of `t`) as a Python int or float.
pub(crate) fn number<'py>(py: Python<'py>, t: DType, b: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    macro_rules! of {
        ($ty:ty) => {
            <$ty>::from_ne_bytes(b.try_into().unwrap())
                .into_pyobject(py)?
                .into_any()
        };
    }
    Ok(match t {
        DType::U8 => of!(u8),
        DType::I8 => of!(i8),
        DType::U16 => of!(u16),
        DType::I16 => of!(i16),
        DType::U32 => of!(u32),
        DType::I32 => of!(i32),
        DType::U64 => of!(u64),
        DType::I64 => of!(i64),
        DType::F32 => of!(f32),
        DType::F64 => of!(f64),
        DType::F16 => f16::from_ne_bytes(b.try_into().unwrap())
            .to_f64()
            .into_pyobject(py)?
            .into_any(),
        DType::BF16 => bf16::from_ne_bytes(b.try_into().unwrap())
            .to_f64()
            .into_pyobject(py)?
            .into_any(),
    })
}

/// Writes a Python number as one element of `t` (integers must fit; floats round once).
fn put_number(t: DType, value: &Bound<'_, PyAny>, out: &mut [u8]) -> PyResult<()> {
    macro_rules! int {
        ($ty:ty) => {{
            let v: i128 = value.extract()?;
            let v = <$ty>::try_from(v)
                .map_err(|_| PyOverflowError::new_err(format!("host_store: {v} does not fit {}", t.c_name())))?;
            out.copy_from_slice(&v.to_ne_bytes());
        }};
    }
    let float = || value.extract::<f64>();
    match t {
        DType::U8 => int!(u8),
        DType::I8 => int!(i8),
        DType::U16 => int!(u16),
        DType::I16 => int!(i16),
        DType::U32 => int!(u32),
        DType::I32 => int!(i32),
        DType::U64 => int!(u64),
        DType::I64 => int!(i64),
        DType::F32 => out.copy_from_slice(&(float()? as f32).to_ne_bytes()),
        DType::F64 => out.copy_from_slice(&float()?.to_ne_bytes()),
        DType::F16 => out.copy_from_slice(&f16::from_f64(float()?).to_ne_bytes()),
        DType::BF16 => out.copy_from_slice(&bf16::from_f64(float()?).to_ne_bytes()),
    }
    Ok(())
}
