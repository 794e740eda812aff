//! The recent calls that launched kernels, by serial number, so that a fault a kernel
//! reports later (through the fault mailbox, seen at the next call) names the call it
//! belongs to rather than only the call that happened to find it.
//!
//! Every launch takes the next serial and passes it to its kernels (`ScanParams::call`),
//! which write its low `contract::FAULT_CALL_BITS` bits into the `FaultReport` beside the
//! workspace (serials whose low bits are all 0 are skipped, so 0 means none). The log
//! keeps the last `CALLS_KEPT` calls in a ring of slots, each behind its own lock, so
//! threads launching at once rarely meet; recording copies a few words and allocates
//! nothing.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::contract;

/// Calls the log remembers.
const CALLS_KEPT: usize = 64;

/// What a call scanned, as a fault message names it.
#[derive(Debug, Clone)]
pub(crate) enum CallLabel {
    /// A built-in scan: operator and type names.
    Builtin {
        op: &'static str,
        input: &'static str,
        output: &'static str,
    },
    /// A user-defined operator's scan, by the operator's name.
    Operator(Arc<str>),
}

#[derive(Debug, Clone)]
struct CallRecord {
    serial: u32,
    label: CallLabel,
    n: u64,
    stream: usize,
}

impl fmt::Display for CallRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CallRecord { serial, n, stream, .. } = self;
        match &self.label {
            CallLabel::Builtin { op, input, output } => {
                write!(f, "scan call #{serial} ({op} of {n} {input} -> {output}")?
            }
            CallLabel::Operator(name) => write!(f, "scan call #{serial} (operator {name} over {n} elements")?,
        }
        write!(f, ", queued on stream {stream:#x})")
    }
}

/// The last `CALLS_KEPT` launching calls of one device.
pub(crate) struct CallLog {
    next: AtomicU32,
    slots: [Mutex<Option<CallRecord>>; CALLS_KEPT],
}

impl CallLog {
    pub fn new() -> CallLog {
        CallLog {
            // Serial 0 is never handed out, so a report without one is told apart.
            next: AtomicU32::new(1),
            slots: std::array::from_fn(|_| Mutex::new(None)),
        }
    }

    /// Records a call about to launch and returns its serial, for its kernels' reports.
    pub fn record(&self, label: CallLabel, n: u64, stream: usize) -> u32 {
        let mut serial = self.next.fetch_add(1, Ordering::Relaxed);
        while reported(serial) == 0 {
            serial = self.next.fetch_add(1, Ordering::Relaxed);
        }
        *self.slots[serial as usize % CALLS_KEPT].lock() = Some(CallRecord {
            serial,
            label,
            n,
            stream,
        });
        serial
    }

    /// How a fault message names the call whose serial's reported bits (`reported`) are
    /// `reported_bits`.
    pub fn describe(&self, reported_bits: u32) -> String {
        match &*self.slots[reported_bits as usize % CALLS_KEPT].lock() {
            Some(record) if reported(record.serial) == reported_bits => record.to_string(),
            _ if reported_bits == 0 => "a scan call".to_string(),
            _ => format!("a scan call older than the last {CALLS_KEPT}"),
        }
    }
}

/// The bits of `serial` a kernel's fault report keeps.
fn reported(serial: u32) -> u32 {
    serial & ((1 << contract::FAULT_CALL_BITS) - 1)
}

// A slot is found from the reported bits alone.
const _: () = assert!(CALLS_KEPT.is_power_of_two() && CALLS_KEPT <= 1 << contract::FAULT_CALL_BITS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serial_names_its_call_until_it_is_overwritten() {
        let log = CallLog::new();
        let first = log.record(CallLabel::Operator("cummax".into()), 1 << 20, 0x10);
        assert_eq!(
            log.describe(first),
            format!("scan call #{first} (operator cummax over 1048576 elements, queued on stream 0x10)")
        );
        let label = CallLabel::Builtin {
            op: "sum",
            input: "u32",
            output: "u64",
        };
        for _ in 0..CALLS_KEPT {
            log.record(label.clone(), 5, 0);
        }
        assert_eq!(log.describe(first), "a scan call older than the last 64");
        let last = log.record(label, 7, 0);
        assert!(log
            .describe(last)
            .starts_with(&format!("scan call #{last} (sum of 7 u32 -> u64")));
        assert_eq!(log.describe(0), "a scan call");
    }
}
