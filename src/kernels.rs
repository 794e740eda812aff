//! The CUDA sources in `kernels/`, embedded by include name. build.rs lists the
//! directory, so a new header needs no entry here.

/// Every header under `kernels/`, as `(include name, text)`.
pub(crate) const KERNEL_HEADERS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_headers.rs"));

/// Which of the built-in kernel sets a compile ahead of time ([`crate::compile_kernel_sets`])
/// compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelCoverage {
    /// Every set: what a kernel pack or a filled cache holds.
    Every,
    /// One variant of each type pair and operator (of each element type for selections,
    /// each key type for sorts), the variants (direction and segmentation; rule and
    /// output; order and value size) taken in turn from one to the next: every type,
    /// operator and variant compiles, in about a quarter of the time of `Every`. CI's
    /// compile check, on two cores.
    Diagonal,
}

impl KernelCoverage {
    /// Whether the set of variant `variant` (of `variants`) of the `index`-th type pair,
    /// operator or key type is compiled.
    pub fn keeps(self, index: usize, variant: usize, variants: usize) -> bool {
        match self {
            KernelCoverage::Every => true,
            KernelCoverage::Diagonal => variant == index % variants,
        }
    }
}

/// With the `experiments` feature: the colon-separated numbers of the environment
/// variable `var` (the scan kernels' tuning overrides), or `None` when it is unset or
/// holds anything else.
#[cfg(feature = "experiments")]
pub(crate) fn experiment_numbers(var: &str) -> Option<Vec<u32>> {
    std::env::var(var).ok()?.split(':').map(|x| x.parse().ok()).collect()
}

/// With the `experiments` feature: the N comma-separated numbers of the environment
/// variable `var` (a tuning override for benchmarks), or `None` when it is unset. Panics
/// on anything else, so that a mistyped override never runs as if it were absent.
#[cfg(feature = "experiments")]
pub(crate) fn experiment_override<const N: usize>(var: &str) -> Option<[u32; N]> {
    let text = std::env::var(var).ok()?;
    let numbers: Option<Vec<u32>> = text.split(',').map(|x| x.trim().parse().ok()).collect();
    match numbers.and_then(|v| <[u32; N]>::try_from(v).ok()) {
        Some(shape) => Some(shape),
        None => panic!("{var}={text:?}: expected {N} comma-separated numbers"),
    }
}

#[cfg(all(test, feature = "experiments"))]
mod tests {
    use super::experiment_override;

    #[test]
    fn overrides_parse_exactly_n_numbers() {
        std::env::set_var("SCANRT_TEST_OVERRIDE_OK", "1, 2,3");
        assert_eq!(experiment_override::<3>("SCANRT_TEST_OVERRIDE_OK"), Some([1, 2, 3]));
        assert_eq!(experiment_override::<3>("SCANRT_TEST_OVERRIDE_UNSET"), None);
        std::env::set_var("SCANRT_TEST_OVERRIDE_SHORT", "1,2");
        assert!(std::panic::catch_unwind(|| experiment_override::<3>("SCANRT_TEST_OVERRIDE_SHORT")).is_err());
    }
}
