//! User-defined operators from CUDA source (`scanrt.Operator`): the description is kept
//! once, and compiled (NVRTC, the disk cache) into one `scanrt::Operator` per device at
//! its first scan there. Scans of NumPy arrays run on the host backend through Python host
//! functions (operator_host.rs), when the operator has them.

use std::collections::HashMap;
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use scanrt::{Direction, Operator, OperatorDesc, OperatorScan};

use crate::arrays::{device_of, dtype_named, segment_data, stream, ArrayArg, SegmentData};
use crate::errors::IntoPy;
use crate::operator_host::{host_operator, HostFailure};
use crate::operator_scan::run_scan;

/// A user-defined operator (`scanrt.Operator`), shared with the XLA handlers once a
/// JAX call has named it ([`xla_operator`]).
#[pyclass(name = "Operator", module = "scanrt._scanrt", frozen)]
pub(crate) struct PyOperator(Arc<OperatorState>);

/// An operator's description and its compiled form on each device it has scanned on.
pub(crate) struct OperatorState {
    pub desc: OperatorDesc,
    compiled: Mutex<HashMap<i64, Operator>>,
    /// The first error of the host functions' last scan, if it has host functions.
    host_failure: HostFailure,
    /// Held by a host-backend scan from clearing `host_failure` to taking it, so that a
    /// scan on another thread neither clears its error nor reports it.
    host_scan: Mutex<()>,
}

/// The operators JAX calls have named, by handle (their index). Kept for the process's
/// life: a compiled XLA computation may call one after its Python object is gone.
static XLA_OPERATORS: Lazy<Mutex<Vec<Arc<OperatorState>>>> = Lazy::new(|| Mutex::new(Vec::new()));

/// The operator with the XLA handle `handle` ([`PyOperator::xla_handle`]).
pub(crate) fn xla_operator(handle: i64) -> Option<Arc<OperatorState>> {
    let all = XLA_OPERATORS.lock();
    usize::try_from(handle).ok().and_then(|i| all.get(i).cloned())
}

/// `(function, [dtype names])` of a load or store.
type Edge = (String, Vec<String>);

fn edge_types(edge: &Option<Edge>) -> PyResult<Option<(String, Vec<scanrt::DType>)>> {
    edge.as_ref()
        .map(|(f, names)| {
            Ok((
                f.clone(),
                names.iter().map(|n| dtype_named(n)).collect::<PyResult<_>>()?,
            ))
        })
        .transpose()
}

#[pymethods]
impl PyOperator {
    #[new]
    /// `host`: `(combine, load, store)` Python callables for the host backend (load and
    /// store where the operator has them).
    #[pyo3(signature = (*, name, source, state, state_size, state_align, combine, identity, load=None, store=None, host=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        name: &str,
        source: &str,
        state: &str,
        state_size: usize,
        state_align: usize,
        combine: &str,
        identity: Vec<u8>,
        load: Option<Edge>,
        store: Option<Edge>,
        host: Option<(PyObject, Option<PyObject>, Option<PyObject>)>,
    ) -> PyResult<Self> {
        let mut desc = OperatorDesc::new(name, source, state, state_size, state_align, combine, &identity);
        let (load, store) = (edge_types(&load)?, edge_types(&store)?);
        if let Some((f, types)) = &load {
            desc = desc.with_load(f, types);
        }
        if let Some((f, types)) = &store {
            desc = desc.with_store(f, types);
        }
        let host_failure = HostFailure::default();
        if let Some((combine, host_load, host_store)) = host {
            if host_load.is_some() != load.is_some() || host_store.is_some() != store.is_some() {
                return Err(PyTypeError::new_err(format!(
                    "operator {name}: host functions come as the device's do (a host_load for a load, a host_store for a store)"
                )));
            }
            let types = (
                load.map(|(_, t)| t).unwrap_or_default(),
                store.map(|(_, t)| t).unwrap_or_default(),
            );
            let functions = host_operator(
                (combine, host_load, host_store),
                state_size,
                types,
                host_failure.clone(),
            );
            desc = desc.with_host(functions);
        }
        desc.check().py_err()?;
        Ok(PyOperator(Arc::new(OperatorState {
            desc,
            compiled: Mutex::new(HashMap::new()),
            host_failure,
            host_scan: Mutex::new(()),
        })))
    }

    /// The handle by which XLA's `scanrt_operator` calls name this operator.
    fn xla_handle(&self) -> i64 {
        let mut all = XLA_OPERATORS.lock();
        let index = all.iter().position(|o| Arc::ptr_eq(o, &self.0)).unwrap_or_else(|| {
            all.push(self.0.clone());
            all.len() - 1
        });
        index as i64
    }

    /// Scans `inputs` into `outputs` (1-D arrays of one GPU) as the flags say, on
    /// `stream`; `initial` is a state's bytes, `segments` byte flags, `offsets` offsets or
    /// `keys` keys;
    /// `carry_in` and `carry_out` contiguous arrays of whole states (one, or one per
    /// segment with offsets) read before and written after the scan.
    /// `axis`: scan the arrays as they lie along that axis, each sequence on its own.
    #[pyo3(signature = (*, inputs, outputs, inclusive=true, reverse=false, initial=None, deterministic=false, stream, segments=None, offsets=None, carry_in=None, carry_out=None, axis=None, keys=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        inputs: Vec<ArrayArg>,
        outputs: Vec<ArrayArg>,
        inclusive: bool,
        reverse: bool,
        initial: Option<Vec<u8>>,
        deterministic: bool,
        stream: usize,
        segments: Option<ArrayArg>,
        offsets: Option<ArrayArg>,
        carry_in: Option<ArrayArg>,
        carry_out: Option<ArrayArg>,
        axis: Option<isize>,
        keys: Option<ArrayArg>,
    ) -> PyResult<()> {
        let all: Vec<&ArrayArg> = inputs
            .iter()
            .chain(&outputs)
            .chain(carry_in.iter())
            .chain(carry_out.iter())
            .collect();
        let device = device_of(&all)?;
        let state = &self.0;
        let op = py.allow_threads(|| state.compiled_on(device)).map_err(|e| match e {
            NotCompiled::Unhosted(message) => PyTypeError::new_err(message),
            NotCompiled::Failed(e) => crate::errors::to_py(e),
        })?;
        let segments = segment_data(SegmentData {
            flags: segments,
            offsets,
            keys,
        })?;
        let mut scan = OperatorScan {
            inclusive,
            init: initial,
            direction: if reverse {
                Direction::Backward
            } else {
                Direction::Forward
            },
            deterministic,
            ..OperatorScan::default()
        };
        if let Some((data, kind)) = &segments {
            device_of(&[all[0], data])?;
            scan = scan.segmented(*kind);
        }
        let ctx = op.context().clone();
        let s = self::stream(&ctx, device, stream)?;
        // SAFETY: the Python caller keeps the arrays referenced during the call.
        let views = |arrays: &[ArrayArg], writable: bool| -> PyResult<Vec<scanrt::ArrayView<'static>>> {
            arrays.iter().map(|a| unsafe { a.view(writable) }).collect()
        };
        let (ins, outs) = (views(&inputs, false)?, views(&outputs, true)?);
        let result = state.one_scan(ctx.backend(), || {
            // SAFETY: as above.
            unsafe {
                run_scan(
                    py,
                    &op,
                    &s,
                    (&ins, &outs),
                    segments.map(|(d, _)| d),
                    &scan,
                    [carry_in, carry_out],
                    axis,
                )
            }
        });
        // An exception of a host function outranks what the scan made of its results.
        match result {
            (_, Some(error)) => Err(error),
            (result, None) => result,
        }
    }

    /// The operator's name.
    #[getter]
    fn name(&self) -> &str {
        &self.0.desc.name
    }
}

/// Why an operator has no compiled form for a device.
pub(crate) enum NotCompiled {
    /// Host arrays, and the operator has no host functions.
    Unhosted(String),
    Failed(scanrt::Error),
}

impl OperatorState {
    /// The operator compiled for `device`'s context (its kernels load at the first scan;
    /// -1: the host backend, through its host functions). Without the GIL.
    pub(crate) fn compiled_on(&self, device: i64) -> Result<Operator, NotCompiled> {
        if device < 0 && self.desc.host.is_none() {
            return Err(NotCompiled::Unhosted(format!(
                "operator {} scans host arrays through host functions (host_combine=...), which it has not",
                self.desc.name
            )));
        }
        if let Some(op) = self.compiled.lock().get(&device) {
            return Ok(op.clone());
        }
        let ctx = crate::arrays::shared_context(device).map_err(NotCompiled::Failed)?;
        let op = ctx.create_operator(self.desc.clone()).map_err(NotCompiled::Failed)?;
        self.compiled.lock().insert(device, op.clone());
        Ok(op)
    }

    /// Runs `scan`, one host scan of the operator at a time (its callables take the GIL,
    /// so the wait lets go of it between tries), and returns its result with the first
    /// exception a host function raised during it.
    pub(crate) fn one_scan<R>(&self, backend: scanrt::Backend, scan: impl FnOnce() -> R) -> (R, Option<PyErr>) {
        let _one_host_scan = (backend == scanrt::Backend::Host).then(|| loop {
            if let Some(guard) = self.host_scan.try_lock() {
                break guard;
            }
            Python::with_gil(|py| py.allow_threads(std::thread::yield_now));
        });
        self.host_failure.clear();
        let result = scan();
        (result, self.host_failure.take())
    }
}
