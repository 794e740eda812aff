//! Ranks simulated on one GPU: each rank's part (`RankScan`) planned, begun and finished
//! as `Context::scan_across` does, with the exchange done by device copies between the
//! ranks' arrays of totals instead of NCCL. This reaches every rank count on a machine
//! with one GPU, so the chunk kernels' fold of many earlier totals (`FLAG_INIT_FOLD`, in
//! both directions, for a non-commuting user operator too) is checked against the
//! sequential scan of the whole array. Needs a GPU: `cargo test --lib -- --ignored`.

use super::rank::{PartOperator, RankScan};
use crate::buffer::Buffer;
use crate::context::Context;
use crate::error::Result;
use crate::operator::OperatorScan;
use crate::runtime::cu;
use crate::scan::desc::ScanDesc;
use crate::scan::reference::reference_scan;
use crate::stream::Stream;
use crate::tables::{Backend, Direction, Op};
use crate::types::DType;

/// splitmix64, so a failure reproduces from the printed seed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Runs the planned parts as their ranks would: every `begin`, the all-gather (each
/// rank's slot copied into every rank's array of totals), every `finish`.
fn run_ranks(parts: &[RankScan], stream: &Stream) -> Result<()> {
    // SAFETY: the parts' arrays are live buffers of their lengths; the totals arrays
    // hold one state per rank and live from `begin` to `finish`, all on `stream`.
    unsafe {
        for part in parts {
            part.begin()?;
        }
        let bytes = parts[0].state_bytes();
        for (r, to) in parts.iter().enumerate() {
            for (q, from) in parts.iter().enumerate().filter(|&(q, _)| q != r) {
                let at = (q * bytes) as u64;
                cu::copy_async(to.totals() + at, from.totals() + at, bytes, stream.raw() as _)?;
            }
        }
        for part in parts {
            part.finish()?;
        }
    }
    Ok(())
}

fn lengths(rng: &mut Rng, ranks: usize, long: bool) -> Vec<usize> {
    (0..ranks)
        .map(|r| match rng.below(4) {
            0 => 0,
            _ if long && r == ranks / 2 => (1 << 20) + 7, // found by the reduction
            _ => rng.below(3000) as usize + 1,
        })
        .collect()
}

/// Built-in u32 sums over `ranks` simulated ranks; the whole array's total asked of the
/// ranks `asks_total` names (a rank that asks scans the totals, the others fold them).
fn u32_case(
    ctx: &Context,
    rng: &mut Rng,
    ranks: usize,
    desc: ScanDesc,
    init: Option<u32>,
    asks_total: &dyn Fn(usize) -> bool,
) {
    let desc = &match init {
        Some(v) => desc.with_init(v),
        None => desc,
    };
    let stream = ctx.new_stream().unwrap();
    let lengths = lengths(rng, ranks, ranks == 3);
    let data: Vec<Vec<u32>> = lengths
        .iter()
        .map(|&n| (0..n).map(|_| rng.below(1 << 31) as u32).collect())
        .collect();
    let inputs: Vec<Buffer> = data
        .iter()
        .map(|d| Buffer::from_slice(ctx, &stream, d).unwrap())
        .collect();
    let outputs: Vec<Buffer> = lengths
        .iter()
        .map(|&n| Buffer::new(ctx, DType::U32, n as u64).unwrap())
        .collect();
    let totals: Vec<Buffer> = (0..ranks).map(|_| Buffer::new(ctx, DType::U32, 1).unwrap()).collect();
    let parts: Vec<RankScan> = (0..ranks)
        .map(|r| {
            let operator = PartOperator::Builtin {
                desc,
                input: DType::U32,
                output: DType::U32,
            };
            let total = if asks_total(r) { totals[r].addr() } else { 0 };
            let (input, output) = (&[inputs[r].addr()], &[outputs[r].addr()]);
            RankScan::new(
                ctx,
                &stream,
                operator,
                input,
                output,
                lengths[r] as u64,
                total,
                ranks,
                r,
            )
            .unwrap()
        })
        .collect();
    run_ranks(&parts, &stream).unwrap();
    let want: Vec<u32> = reference_scan(&data.concat(), desc);
    let mut got = Vec::new();
    for (r, out) in outputs.iter().enumerate() {
        got.extend(out.download::<u32>(&stream, lengths[r]).unwrap());
    }
    let what = format!("{ranks} ranks, lengths {lengths:?}, {desc:?}");
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i} is {}, want {}", got[i], want[i]);
    }
    let whole = data.iter().flatten().fold(init.unwrap_or(0), |a, &x| a.wrapping_add(x));
    for r in (0..ranks).filter(|&r| asks_total(r)) {
        assert_eq!(
            totals[r].download::<u32>(&stream, 1).unwrap()[0],
            whole,
            "{what}: rank {r}'s total"
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn simulated_ranks_fold_their_carries() {
    let ctx = Context::new(Backend::Gpu, 0).unwrap();
    let mut rng = Rng(0xF01D);
    eprintln!("simulated ranks: seed {:#x}", rng.0);
    let every = |_| true;
    let none = |_| false;
    let first = |r| r == 0;
    for ranks in [1, 2, 3, 4, 5, 9, 33] {
        for backward in [false, true] {
            for inclusive in [true, false] {
                let mut desc = ScanDesc {
                    inclusive,
                    ..ScanDesc::inclusive(Op::Sum)
                };
                if backward {
                    desc = desc.backward();
                }
                u32_case(&ctx, &mut rng, ranks, desc, None, &none);
                u32_case(&ctx, &mut rng, ranks, desc.deterministic(), None, &none);
                u32_case(&ctx, &mut rng, ranks, desc, None, &first);
                u32_case(&ctx, &mut rng, ranks, desc, Some(5), &every);
            }
        }
    }
}

/// A linear recurrence `h[i] = a[i] h[i-1] + b[i]` (a user operator with 16-byte states
/// that do not commute) over simulated ranks, folded carries in both directions.
#[test]
#[ignore = "needs a GPU"]
fn simulated_ranks_fold_user_states_in_traversal_order() {
    let ctx = Context::new(Backend::Gpu, 0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let op = ctx
        .create_operator(crate::recipes::linear_recurrence(DType::F64).unwrap())
        .unwrap();
    let mut rng = Rng(0x11EA);
    eprintln!("simulated ranks, user states: seed {:#x}", rng.0);
    for ranks in [2, 3, 6, 17] {
        for direction in [Direction::Forward, Direction::Backward] {
            let lengths = lengths(&mut rng, ranks, false);
            // a in {-1, 1} and small integers b: every h is exact.
            let a: Vec<Vec<f64>> = lengths
                .iter()
                .map(|&n| (0..n).map(|_| if rng.below(3) == 0 { -1.0 } else { 1.0 }).collect())
                .collect();
            let b: Vec<Vec<f64>> = lengths
                .iter()
                .map(|&n| (0..n).map(|_| rng.below(9) as f64 - 4.0).collect())
                .collect();
            let upload = |v: &Vec<f64>| Buffer::from_slice(&ctx, &stream, v).unwrap();
            let (a_bufs, b_bufs): (Vec<Buffer>, Vec<Buffer>) =
                (a.iter().map(upload).collect(), b.iter().map(upload).collect());
            let h: Vec<Buffer> = lengths
                .iter()
                .map(|&n| Buffer::new(&ctx, DType::F64, n as u64).unwrap())
                .collect();
            let scan = OperatorScan {
                direction,
                ..Default::default()
            };
            let parts: Vec<RankScan> = (0..ranks)
                .map(|r| {
                    let operator = PartOperator::User { op: &op, scan: &scan };
                    let inputs = [a_bufs[r].addr(), b_bufs[r].addr()];
                    RankScan::new(
                        &ctx,
                        &stream,
                        operator,
                        &inputs,
                        &[h[r].addr()],
                        lengths[r] as u64,
                        0,
                        ranks,
                        r,
                    )
                    .unwrap()
                })
                .collect();
            run_ranks(&parts, &stream).unwrap();
            let (a, b) = (a.concat(), b.concat());
            let mut want = vec![0.0; a.len()];
            let mut state = 0.0;
            let order: Vec<usize> = match direction {
                Direction::Forward => (0..a.len()).collect(),
                Direction::Backward => (0..a.len()).rev().collect(),
            };
            for i in order {
                state = a[i] * state + b[i];
                want[i] = state;
            }
            let got: Vec<f64> = h
                .iter()
                .zip(&lengths)
                .flat_map(|(buf, &n)| buf.download::<f64>(&stream, n).unwrap())
                .collect();
            assert_eq!(got, want, "{ranks} ranks, lengths {lengths:?}, {direction:?}");
        }
    }
}
