//! The harness of the suites that need a CUDA device (or NVRTC): libtest-mimic instead of
//! libtest, so that a test that cannot run where it is run reports "ignored" (with the
//! reason), never "passed". Same command line as libtest (`--list`, `--exact`,
//! `--test-threads`, `--ignored`, ...).

use libtest_mimic::{Arguments, Completion, Trial};

/// A test: its name (as `--exact` matches it) and its body, which panics to fail.
pub type Test = (String, fn());

/// `tests![module::name, ...]`: the named test functions as [`Test`]s.
#[allow(unused_macros)]
macro_rules! tests {
    ($($($path:ident)::+),* $(,)?) => {
        vec![$((stringify!($($path)::+).replace(' ', ""), $($path)::+ as fn())),*]
    };
}
#[allow(unused_imports)]
pub(crate) use tests;

/// Runs `tests` as the command line asks. Each one first asks `missing`, at run time (so
/// that listing the tests touches no device): Some(reason) reports it ignored.
pub fn run(tests: Vec<Test>, missing: fn() -> Option<String>) -> ! {
    let args = Arguments::from_args();
    let trials = tests
        .into_iter()
        .map(|(name, body)| {
            Trial::ignorable_test(name, move || {
                Ok(match missing() {
                    Some(reason) => Completion::ignored_with(reason),
                    None => {
                        body();
                        Completion::Completed
                    }
                })
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit()
}
