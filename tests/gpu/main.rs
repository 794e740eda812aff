//! The GPU suite, by topic. Each test prints "skipped: no CUDA device" and passes where
//! there is no GPU; on a GPU machine they run (scripts/gpu-tests-parallel.sh runs each in
//! a process of its own).

#[path = "../common/mod.rs"]
mod common;
mod support;

mod applications;
mod backward_segmented;
mod bad_input;
mod determinism;
mod kernels;
mod scans;
