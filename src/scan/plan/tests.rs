//! The plan's choices: algorithm and launch flags.
use super::*;
use crate::contract::*;
use crate::scan::desc::ScanDesc;
use crate::tables::Op;
use crate::types::{DType, ScanTypes};

/// The choice for a built-in scan of `output` values, as `ScanPlan::new` makes it.
fn choose(desc: &ScanDesc, output: DType) -> (Algorithm, ChoiceReason) {
    choose_algorithm(desc.algorithm, desc.deterministic, desc.order_sensitive(output))
}

#[test]
fn algorithm_choice_and_reason() {
    let sum = ScanDesc::inclusive(Op::Sum);
    use Algorithm::*;
    use ChoiceReason::*;
    assert_eq!(choose(&sum, DType::F32), (SinglePass, Fastest));
    assert_eq!(
        choose(&sum.deterministic(), DType::F32),
        (DeterministicSinglePass, Deterministic)
    );
    assert_eq!(
        choose(&ScanDesc::inclusive(Op::Product).deterministic(), DType::F64),
        (DeterministicSinglePass, Deterministic)
    );
    // Order-independent operators and types keep the regular single pass.
    for (op, dtype) in [(Op::Sum, DType::U32), (Op::Max, DType::F32), (Op::BitXor, DType::I64)] {
        let desc = ScanDesc::inclusive(op).deterministic();
        assert_eq!(choose(&desc, dtype), (SinglePass, OrderIndependent));
    }
    // A named algorithm runs as named, unless it would break a determinism promise.
    assert_eq!(choose(&sum.with_algorithm(Matrix), DType::F32), (Matrix, Requested));
    assert_eq!(
        choose(&sum.with_algorithm(Matrix).deterministic(), DType::F32),
        (Matrix, Requested)
    );
    assert_eq!(
        choose(&sum.with_algorithm(SinglePass).deterministic(), DType::F32),
        (DeterministicSinglePass, Deterministic)
    );
    assert_eq!(
        choose(&sum.with_algorithm(DeterministicSinglePass), DType::U32),
        (DeterministicSinglePass, Requested)
    );
}

#[test]
fn vector_flags_follow_the_traversal() {
    // (input, output, segments, n) of a u32 sum.
    type Req = (u64, u64, u64, u64);
    let req = |input: u64, output: u64, segments: u64, n: u64| -> Req { (input, output, segments, n) };
    let model = BuiltinOperator::new(Op::Sum, crate::types::ScanTypes::new(DType::U32, DType::U32, None));
    let flags = |&(input, output, segments, n): &Req, d: &ScanDesc, a: Algorithm| {
        let shape = d.shape(ScanTypes::new(DType::U32, DType::U32, None)).unwrap();
        let (inputs, outputs) = ([input], [output]);
        let arrays = ScanArrays {
            segments,
            ..ScanArrays::new(&inputs, &outputs, Carries::default())
        };
        shape_flags(&shape, a) | address_flags(&arrays, &model, n, &shape)
    };
    let forward = ScanDesc::inclusive(Op::Sum);
    let backward = forward.backward();
    let vec = FLAG_VECTOR_IN | FLAG_VECTOR_OUT;
    // Forward tiles start at the array start; backward tiles end at the array end.
    assert_eq!(
        flags(&req(0x1000, 0x2000, 0, 6), &forward, Algorithm::SinglePass) & vec,
        vec
    );
    assert_eq!(
        flags(&req(0x1000, 0x2000, 0, 6), &backward, Algorithm::SinglePass) & vec,
        0
    );
    assert_eq!(
        flags(&req(0x1008, 0x2008, 0, 6), &backward, Algorithm::SinglePass) & vec,
        vec
    );
    // Byte flags: aligned like the tiles, and their kind in bits 6-7.
    let bytes = forward.segmented(Segments::ByteFlags);
    let f = flags(&req(0x1000, 0x2000, 0x3000, 6), &bytes, Algorithm::SinglePass);
    assert_ne!(f & FLAG_VECTOR_HEADS, 0);
    assert_eq!(f >> HEADS_KIND_SHIFT & HEADS_KIND_MASK, HEADS_BYTES);
    let f = flags(
        &req(0x1000, 0x2000, 0x3000, 6),
        &bytes.backward(),
        Algorithm::SinglePass,
    );
    assert_eq!(f & FLAG_VECTOR_HEADS, 0);
    let keys = forward.segmented(Segments::Keys(DType::I64));
    let f = flags(
        &req(0x1000, 0x2000, 0x3000, 6),
        &keys,
        Algorithm::DeterministicSinglePass,
    );
    assert_eq!(f >> HEADS_KIND_SHIFT & HEADS_KIND_MASK, HEADS_KEYS8);
    assert_ne!(f & FLAG_DETERMINISTIC, 0);
    assert_ne!(f & FLAG_VECTOR_HEADS, 0);
    // Backward keys: aligned when the end of the key array is (7 * 8 bytes from 0x3008).
    let f = flags(&req(0x1000, 0x2000, 0x3008, 7), &keys.backward(), Algorithm::SinglePass);
    assert_ne!(f & FLAG_VECTOR_HEADS, 0);
    let f = flags(&req(0x1000, 0x2000, 0x3008, 7), &keys, Algorithm::SinglePass);
    assert_eq!(f & FLAG_VECTOR_HEADS, 0);
}
