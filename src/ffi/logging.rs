//! Logging to the application: a C callback that receives what scanrt logs through the
//! `log` facade (kernel compiles, cache hits and misses, backend choice and fallbacks,
//! workspace faults). Rust applications install any `log` logger instead.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};

use once_cell::sync::Lazy;
use parking_lot::RwLock;

use super::support::boundary;
use crate::error::bail;
use crate::tables::{LogLevel, ScanrtStatus};

/// Receives one log line: the `scanrt_log_level`, the module that logged it (for example
/// `scanrt::runtime::nvrtc`) and the message, both NUL-terminated and valid only during
/// the call. Called on whichever thread logs; it must not call back into scanrt.
pub type scanrt_log_callback =
    Option<unsafe extern "C" fn(user: *mut c_void, level: i32, target: *const c_char, message: *const c_char)>;

struct Sink {
    callback: unsafe extern "C" fn(*mut c_void, i32, *const c_char, *const c_char),
    /// The application's pointer, passed back untouched (stored as an integer: scanrt
    /// never dereferences it).
    user: usize,
    level: LogLevel,
}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

thread_local! {
    /// This thread is inside the application's callback.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

struct CallbackLogger;

static LOGGER: CallbackLogger = CallbackLogger;

fn level_of(level: log::Level) -> LogLevel {
    match level {
        log::Level::Error => LogLevel::Error,
        log::Level::Warn => LogLevel::Warn,
        log::Level::Info => LogLevel::Info,
        log::Level::Debug => LogLevel::Debug,
        log::Level::Trace => LogLevel::Trace,
    }
}

fn filter_of(level: LogLevel) -> log::LevelFilter {
    match level {
        LogLevel::Off => log::LevelFilter::Off,
        LogLevel::Error => log::LevelFilter::Error,
        LogLevel::Warn => log::LevelFilter::Warn,
        LogLevel::Info => log::LevelFilter::Info,
        LogLevel::Debug => log::LevelFilter::Debug,
        LogLevel::Trace => log::LevelFilter::Trace,
    }
}

impl log::Log for CallbackLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target().starts_with("scanrt")
            && SINK
                .read()
                .as_ref()
                .is_some_and(|sink| level_of(metadata.level()) as i32 <= sink.level as i32)
    }

    fn log(&self, record: &log::Record) {
        // A callback that calls scanrt, which logs, would reenter it: drop such lines.
        if IN_CALLBACK.with(Cell::get) || !self.enabled(record.metadata()) {
            return;
        }
        let text = |s: String| CString::new(s.replace('\0', " ")).unwrap_or_default();
        let (target, message) = (text(record.target().to_string()), text(record.args().to_string()));
        if let Some(sink) = SINK.read().as_ref() {
            // SAFETY: the application registered this function for exactly these
            // arguments; the strings outlive the call.
            IN_CALLBACK.with(|c| c.set(true));
            unsafe {
                (sink.callback)(
                    sink.user as *mut c_void,
                    level_of(record.level()) as i32,
                    target.as_ptr(),
                    message.as_ptr(),
                )
            };
            IN_CALLBACK.with(|c| c.set(false));
        }
    }

    fn flush(&self) {}
}

/// The log crate takes one logger per process, for good: scanrt's, unless the
/// application installed another first.
static INSTALLED: Lazy<bool> = Lazy::new(|| log::set_logger(&LOGGER).is_ok());

/// Sends scanrt's log lines up to `max_level` (a `scanrt_log_level`) to `callback`, with
/// `user` passed back to it; a NULL callback or `SCANRT_LOG_OFF` stops logging. The
/// callback replaces an earlier one; once this returns, the earlier one is no longer
/// running. Lines logged while the callback runs on the same thread (it called scanrt)
/// are dropped. Fails with `SCANRT_STATUS_INVALID_ARGUMENT` when called from the
/// callback, or when another logger of Rust's `log` crate already serves the process (a
/// Rust application that installed its own: scanrt logs there).
#[no_mangle]
pub unsafe extern "C" fn scanrt_set_log_callback(
    callback: scanrt_log_callback,
    user: *mut c_void,
    max_level: i32,
) -> ScanrtStatus {
    boundary(|| {
        let level = LogLevel::from_c(max_level)?;
        let sink = callback.filter(|_| level != LogLevel::Off).map(|callback| Sink {
            callback,
            user: user as usize,
            level,
        });
        if sink.is_some() && !*INSTALLED {
            bail!(
                InvalidArgument,
                "another logger of the log crate serves this process; scanrt logs there"
            );
        }
        if IN_CALLBACK.with(Cell::get) {
            bail!(
                InvalidArgument,
                "scanrt_set_log_callback was called from the log callback"
            );
        }
        let filter = if sink.is_some() {
            filter_of(level)
        } else {
            log::LevelFilter::Off
        };
        let mut current = SINK.write();
        *current = sink;
        // The level filter is the process's: set it only where the logger is scanrt's.
        if *INSTALLED {
            log::set_max_level(filter);
        }
        Ok(())
    })
}
