//! Strided scans on the host backend: the shared sweep of `common::strided` (every
//! layout, type pair, operator, direction and carry form) at small shapes, empty ones
//! included.

use scanrt::{Backend, Context};

use crate::common::strided::sweep;

#[test]
fn strided_layouts_match_the_reference() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (2, 3, 5), (1, 65, 33), (3, 100, 2), (2, 0, 3), (1, 7, 0)];
    let failures = sweep(&ctx, &stream, 0x57_81DE, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn summed_area_tables_match_nested_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (1, 7, 5), (2, 13, 40), (1, 0, 3), (1, 9, 70)];
    let failures = crate::common::summed_area::summed_area_tables(&ctx, &stream, 0x5A7, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn user_operators_along_an_axis_match_sequential_loops() {
    let ctx = Context::new(Backend::Host, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let shapes = [(1, 1, 1), (2, 3, 5), (1, 65, 33), (3, 40, 2), (2, 0, 3), (1, 7, 0)];
    let failures = crate::common::strided_operators::sweep(&ctx, &stream, 0x0957_81DE, &shapes);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
