//! The user-defined operators of the examples, shared with the test suites (which check
//! them against sequential loops): each is CUDA source for the GPU plus host functions
//! for the host backend.
#![allow(dead_code)] // each example uses one of them

use std::sync::Arc;

use scanrt::{DType, HostOperator, OperatorDesc};

/// Seconds per call of `call` on `stream`: one call first (its kernels load), then the
/// mean of ten queued back to back.
pub fn seconds_per_call<T>(stream: &scanrt::Stream, call: impl Fn() -> scanrt::Result<T>) -> scanrt::Result<f64> {
    call()?;
    stream.synchronize()?;
    let started = std::time::Instant::now();
    for _ in 0..10 {
        call()?;
    }
    stream.synchronize()?;
    Ok(started.elapsed().as_secs_f64() / 10.0)
}

/// Seed 001's line of sight: which points of a terrain profile an observer at point 0
/// sees. Inputs: each point's rise above the observer and its distance (f32); a point is
/// visible when its view angle `rise / distance` is at least every angle before it.
/// Outputs: visible (u32 0/1) and the horizon angle before the point (f32).
///
/// The state describes a stretch of the profile: the angle of its last point, the largest
/// angle before that point and the largest angle of all. A NaN `last` marks the empty
/// stretch (the identity); angles are never NaN.
pub fn line_of_sight() -> OperatorDesc {
    const SOURCE: &str = r#"
// __int_as_float(0xff800000) is -infinity (NVRTC has no INFINITY macro).
struct Sight { float last, before, all; };
__device__ Sight extend(Sight first, Sight then) {
    if (isnan(then.last)) return first;
    if (isnan(first.last)) return then;
    return Sight{then.last, fmaxf(first.all, then.before), fmaxf(first.all, then.all)};
}
__device__ Sight point(int64_t, float rise, float distance) {
    const float angle = distance > 0 ? rise / distance : __int_as_float(0xff800000);
    return Sight{angle, __int_as_float(0xff800000), angle};
}
__device__ void visibility(const Sight& s, uint32_t& visible, float& horizon) {
    visible = s.last >= s.before;
    horizon = s.before;
}
"#;
    let state =
        |b: &[u8]| -> [f32; 3] { [0, 1, 2].map(|k| f32::from_ne_bytes(b[4 * k..4 * k + 4].try_into().unwrap())) };
    let put = |s: [f32; 3], out: &mut [u8]| {
        for (k, v) in s.iter().enumerate() {
            out[4 * k..4 * k + 4].copy_from_slice(&v.to_ne_bytes());
        }
    };
    let host = HostOperator {
        combine: Arc::new(move |a, b, out| {
            let (first, then) = (state(a), state(b));
            let r = if then[0].is_nan() {
                first
            } else if first[0].is_nan() {
                then
            } else {
                [then[0], first[2].max(then[1]), first[2].max(then[2])]
            };
            put(r, out)
        }),
        load: Some(Arc::new(move |_, x, out| {
            let (rise, distance) = (
                f32::from_ne_bytes(x[0].try_into().unwrap()),
                f32::from_ne_bytes(x[1].try_into().unwrap()),
            );
            let angle = if distance > 0.0 {
                rise / distance
            } else {
                f32::NEG_INFINITY
            };
            put([angle, f32::NEG_INFINITY, angle], out)
        })),
        store: Some(Arc::new(move |s, y| {
            let s = state(s);
            y[0].copy_from_slice(&u32::from(s[0] >= s[1]).to_ne_bytes());
            y[1].copy_from_slice(&s[1].to_ne_bytes());
        })),
    };
    let identity: Vec<u8> = [f32::NAN, f32::NEG_INFINITY, f32::NEG_INFINITY]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    OperatorDesc::new("line_of_sight", SOURCE, "Sight", 12, 4, "extend", &identity)
        .with_load("point", &[DType::F32, DType::F32])
        .with_store("visibility", &[DType::U32, DType::F32])
        .with_host(host)
}

/// Fibonacci numbers mod 2^32 as a product of 2x2 matrices: the scan reads an array of
/// matrices (each Q = [[1, 1], [1, 0]] for Fibonacci) and writes element (0, 1) of each
/// running product: Q^(i+1) holds F(i+1) there.
pub fn fibonacci_matrix() -> OperatorDesc {
    const SOURCE: &str = r#"
struct Mat2 { uint32_t m[4]; };  // row-major, arithmetic mod 2^32
__device__ Mat2 mat_mul(Mat2 x, Mat2 y) {
    return Mat2{{x.m[0] * y.m[0] + x.m[1] * y.m[2], x.m[0] * y.m[1] + x.m[1] * y.m[3],
                 x.m[2] * y.m[0] + x.m[3] * y.m[2], x.m[2] * y.m[1] + x.m[3] * y.m[3]}};
}
__device__ void fibonacci(const Mat2& q, uint32_t& f) { f = q.m[1]; }
"#;
    let host = HostOperator {
        combine: Arc::new(|a, b, out| {
            let (x, y) = (matrix(a), matrix(b));
            for (k, v) in mat_mul(x, y).iter().enumerate() {
                out[4 * k..4 * k + 4].copy_from_slice(&v.to_ne_bytes());
            }
        }),
        load: None,
        store: Some(Arc::new(|s, y| y[0].copy_from_slice(&s[4..8]))),
    };
    let identity: Vec<u8> = [1u32, 0, 0, 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
    OperatorDesc::new("fibonacci_matrix", SOURCE, "Mat2", 16, 4, "mat_mul", &identity)
        .with_store("fibonacci", &[DType::U32])
        .with_host(host)
}

/// A 2x2 matrix from its bytes.
pub fn matrix(bytes: &[u8]) -> [u32; 4] {
    [0, 1, 2, 3].map(|k| u32::from_ne_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap()))
}

/// The row-major product mod 2^32.
pub fn mat_mul(x: [u32; 4], y: [u32; 4]) -> [u32; 4] {
    let (a, b) = (x, y);
    [
        a[0].wrapping_mul(b[0]).wrapping_add(a[1].wrapping_mul(b[2])),
        a[0].wrapping_mul(b[1]).wrapping_add(a[1].wrapping_mul(b[3])),
        a[2].wrapping_mul(b[0]).wrapping_add(a[3].wrapping_mul(b[2])),
        a[2].wrapping_mul(b[1]).wrapping_add(a[3].wrapping_mul(b[3])),
    ]
}

/// Multi-precision addition (the seeds' carry scan): two numbers as arrays of u32 limbs,
/// least significant first, added limb by limb with the carries found by a scan of
/// generate/propagate states instead of a loop. Inputs: the limbs of `a` and `b`;
/// outputs: the sum's limbs and the carry out of each limb (the last one's is the sum's
/// carry out). Segments add several numbers at once, each on its own.
///
/// The state describes a run of limbs: whether it generates a carry (G), passes one in
/// through (P), the carry into its last limb from the limbs before it (C), whether a
/// carry into the run reaches its last limb (Q), and its last limb's sum (without carry).
pub fn carry_chain() -> OperatorDesc {
    const SOURCE: &str = r#"
enum : uint32_t { G = 1, P = 2, C = 4, Q = 8, EMPTY = 16 };
struct Carry { uint32_t flags, sum; };
__device__ Carry chain(Carry first, Carry then) {
    if (then.flags & EMPTY) return first;
    if (first.flags & EMPTY) return then;
    const uint32_t g = first.flags & G;  // the carry into `then`
    uint32_t flags = 0;
    if ((then.flags & G) || ((then.flags & P) && g)) flags |= G;
    if ((first.flags & P) && (then.flags & P)) flags |= P;
    if ((then.flags & C) || ((then.flags & Q) && g)) flags |= C;
    if ((then.flags & Q) && (first.flags & P)) flags |= Q;
    return Carry{flags, then.sum};
}
__device__ Carry limb(int64_t, uint32_t a, uint32_t b) {
    const uint32_t sum = a + b;
    return Carry{(sum < a ? G : 0u) | (sum == 0xffffffffu ? P : 0u) | Q, sum};
}
__device__ void digits(const Carry& s, uint32_t& sum, uint32_t& carry) {
    sum = s.sum + ((s.flags & C) ? 1u : 0u);
    carry = s.flags & G;
}
"#;
    let host = HostOperator {
        combine: Arc::new(|a, b, out| {
            let (first, then) = (carry_state(a), carry_state(b));
            put_carry_state(chain(first, then), out)
        }),
        load: Some(Arc::new(|_, x, out| {
            let (a, b) = (
                u32::from_ne_bytes(x[0].try_into().unwrap()),
                u32::from_ne_bytes(x[1].try_into().unwrap()),
            );
            put_carry_state(limb(a, b), out)
        })),
        store: Some(Arc::new(|s, y| {
            let (flags, sum) = carry_state(s);
            y[0].copy_from_slice(&sum.wrapping_add(u32::from(flags & CARRY_C != 0)).to_ne_bytes());
            y[1].copy_from_slice(&(flags & CARRY_G).to_ne_bytes());
        })),
    };
    let identity: Vec<u8> = [CARRY_EMPTY, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
    OperatorDesc::new("carry_chain", SOURCE, "Carry", 8, 4, "chain", &identity)
        .with_load("limb", &[DType::U32, DType::U32])
        .with_store("digits", &[DType::U32, DType::U32])
        .with_host(host)
}

const CARRY_G: u32 = 1;
const CARRY_P: u32 = 2;
const CARRY_C: u32 = 4;
const CARRY_Q: u32 = 8;
const CARRY_EMPTY: u32 = 16;

/// A carry state `(flags, sum)` from its bytes, and back.
fn carry_state(bytes: &[u8]) -> (u32, u32) {
    let word = |k: usize| u32::from_ne_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
    (word(0), word(1))
}
fn put_carry_state((flags, sum): (u32, u32), out: &mut [u8]) {
    out[..4].copy_from_slice(&flags.to_ne_bytes());
    out[4..8].copy_from_slice(&sum.to_ne_bytes());
}

/// The host twin of the source's `limb` and `chain`.
fn limb(a: u32, b: u32) -> (u32, u32) {
    let sum = a.wrapping_add(b);
    let flags = if sum < a { CARRY_G } else { 0 } | if sum == u32::MAX { CARRY_P } else { 0 } | CARRY_Q;
    (flags, sum)
}
fn chain(first: (u32, u32), then: (u32, u32)) -> (u32, u32) {
    if then.0 & CARRY_EMPTY != 0 {
        return first;
    }
    if first.0 & CARRY_EMPTY != 0 {
        return then;
    }
    let (f, t) = (first.0, then.0);
    let g = f & CARRY_G != 0;
    let mut flags = 0;
    if t & CARRY_G != 0 || (t & CARRY_P != 0 && g) {
        flags |= CARRY_G;
    }
    if f & CARRY_P != 0 && t & CARRY_P != 0 {
        flags |= CARRY_P;
    }
    if t & CARRY_C != 0 || (t & CARRY_Q != 0 && g) {
        flags |= CARRY_C;
    }
    if t & CARRY_Q != 0 && f & CARRY_P != 0 {
        flags |= CARRY_Q;
    }
    (flags, then.1)
}

/// Lexical analysis by a scan (the seeds' finite-state machine): each character of a text
/// becomes the transition function of a small lexer (one next state per state, 8 bytes),
/// and the scan composes them, so element i holds the lexer's state after character i
/// when started blank. Input: the text (u8); output: that state (u32, `LEX_*`).
///
/// The lexer: identifiers (`[A-Za-z_][A-Za-z0-9_]*`), numbers (`[0-9]+`), strings in
/// double quotes with backslash escapes, one-character punctuation, and blanks.
pub fn lexer() -> OperatorDesc {
    const SOURCE: &str = r#"
struct Lex { unsigned char next[8]; };
__device__ Lex compose(Lex first, Lex then) {
    Lex r;
    for (int s = 0; s < 8; ++s) r.next[s] = then.next[first.next[s]];
    return r;
}
// Character classes: letter or '_', digit, '"', '\\', blank, other.
__device__ int lex_class(unsigned c) {
    if ((c | 32) - 'a' < 26 || c == '_') return 0;
    if (c - '0' < 10) return 1;
    if (c == '"') return 2;
    if (c == '\\') return 3;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') return 4;
    return 5;
}
// States: 0 blank, 1 identifier, 2 number, 3 in a string, 4 after a backslash in one,
// 5 punctuation, 6 a string's closing quote, 7 unused.
__device__ unsigned char lex_step(int s, int k) {
    if (s == 7) return 7;
    if (s == 3) return k == 2 ? 6 : k == 3 ? 4 : 3;
    if (s == 4) return 3;
    const unsigned char start[6] = {1, 2, 3, 5, 0, 5};
    if (s == 1 && k == 1) return 1;  // digits continue an identifier
    return start[k];
}
__device__ Lex character(int64_t, u8 c) {
    const int k = lex_class(c);
    Lex r;
    for (int s = 0; s < 8; ++s) r.next[s] = lex_step(s, k);
    return r;
}
__device__ void state_after(const Lex& f, uint32_t& state) { state = f.next[0]; }
"#;
    let host = HostOperator {
        combine: Arc::new(|a, b, out| {
            for s in 0..8 {
                out[s] = b[a[s] as usize];
            }
        }),
        load: Some(Arc::new(|_, x, out| {
            let k = lex_class(x[0][0]);
            for (s, next) in out.iter_mut().enumerate().take(8) {
                *next = lex_step(s as u8, k);
            }
        })),
        store: Some(Arc::new(|f, y| y[0].copy_from_slice(&u32::from(f[0]).to_ne_bytes()))),
    };
    let identity: Vec<u8> = (0..8).collect();
    OperatorDesc::new("lexer", SOURCE, "Lex", 8, 1, "compose", &identity)
        .with_load("character", &[DType::U8])
        .with_store("state_after", &[DType::U32])
        .with_host(host)
}

/// The lexer's states (`lexer`).
pub const LEX_BLANK: u32 = 0;
pub const LEX_IDENTIFIER: u32 = 1;
pub const LEX_NUMBER: u32 = 2;
pub const LEX_STRING: u32 = 3;
pub const LEX_ESCAPE: u32 = 4;
pub const LEX_PUNCTUATION: u32 = 5;
pub const LEX_STRING_END: u32 = 6;

/// The lexer's character class of `c` (as the source's `lex_class`).
pub fn lex_class(c: u8) -> usize {
    match c {
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => 0,
        b'0'..=b'9' => 1,
        b'"' => 2,
        b'\\' => 3,
        b' ' | b'\n' | b'\t' | b'\r' => 4,
        _ => 5,
    }
}

/// The lexer's next state from `s` on a character of class `k` (as the source's `lex_step`).
pub fn lex_step(s: u8, k: usize) -> u8 {
    match (s, k) {
        (7, _) => 7,
        (3, 2) => 6,
        (3, 3) => 4,
        (3, _) | (4, _) => 3,
        (1, 1) => 1,
        _ => [1, 2, 3, 5, 0, 5][k],
    }
}

/// Whether the lexer's move from state `before` to `after` starts a token.
pub fn starts_token(before: u32, after: u32) -> bool {
    match after {
        LEX_IDENTIFIER => before != LEX_IDENTIFIER,
        LEX_NUMBER => before != LEX_NUMBER,
        LEX_STRING => before != LEX_STRING && before != LEX_ESCAPE,
        LEX_PUNCTUATION => true,
        _ => false,
    }
}

/// Histograms of every prefix (the seeds' range histograms): each element becomes a
/// histogram of itself over `HISTOGRAM_BINS` equal bins of [0, 1) (values outside count
/// in the first or last bin), and the scan adds them lane by lane, so element i holds the
/// histogram of elements 0..=i and any range's histogram is the difference of two.
/// Input: the values (f32); output: the histograms as whole states (`HISTOGRAM_BINS`
/// u32 counts each, a u8 array).
pub fn range_histogram() -> OperatorDesc {
    const SOURCE: &str = r#"
struct Histogram { uint32_t count[8]; };
__device__ Histogram add(Histogram first, Histogram then) {
    Histogram r;
    for (int k = 0; k < 8; ++k) r.count[k] = first.count[k] + then.count[k];
    return r;
}
__device__ Histogram one(int64_t, float x) {
    Histogram r = {};
    const float scaled = x * 8.0f;
    const int bin = scaled >= 7.0f ? 7 : scaled >= 0.0f ? (int)scaled : 0;  // NaN: bin 0
    r.count[bin] = 1;
    return r;
}
"#;
    let host = HostOperator {
        combine: Arc::new(|a, b, out| {
            let (x, y) = (histogram(a), histogram(b));
            put_histogram(std::array::from_fn(|k| x[k].wrapping_add(y[k])), out)
        }),
        load: Some(Arc::new(|_, x, out| {
            let mut h = [0u32; HISTOGRAM_BINS];
            h[histogram_bin(f32::from_ne_bytes(x[0].try_into().unwrap()))] = 1;
            put_histogram(h, out)
        })),
        store: None,
    };
    OperatorDesc::new("range_histogram", SOURCE, "Histogram", 32, 4, "add", &[0u8; 32])
        .with_load("one", &[DType::F32])
        .with_host(host)
}

/// The number of bins of `range_histogram`.
pub const HISTOGRAM_BINS: usize = 8;

/// The bin of `x` (as the source's `one`: below 0 and NaN in the first, from 7/8 in the last).
pub fn histogram_bin(x: f32) -> usize {
    let scaled = x * 8.0;
    if scaled >= 7.0 {
        7
    } else if scaled >= 0.0 {
        scaled as usize
    } else {
        0
    }
}

/// A histogram state from its bytes, and back.
pub fn histogram(bytes: &[u8]) -> [u32; HISTOGRAM_BINS] {
    std::array::from_fn(|k| u32::from_ne_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap()))
}
fn put_histogram(h: [u32; HISTOGRAM_BINS], out: &mut [u8]) {
    for (k, v) in h.iter().enumerate() {
        out[4 * k..4 * k + 4].copy_from_slice(&v.to_ne_bytes());
    }
}
