//! The host-kernel contract, in one place: the parameter blocks of the scan and select
//! kernels, the look-back workspace header, the fault report, and the flag and layout constants.
//! build.rs generates `kernels/generated/contract.cuh` from this file with cbindgen, so
//! host and device share one definition (the generated header is committed; CI fails
//! when it is stale).
//!
//! The host writes these structs as the driver hands them to kernels: `#[repr(C)]`, the
//! same layout on both sides by construction.

/// The parameters of every scan kernel. Kernels declare the fields as separate parameters
/// (`SCANRT_SCAN_PARAMS`, generated from this struct), and the host passes the struct as
/// their parameter buffer, whose layout the driver makes the same. Addresses are device
/// pointers; 0 where a kernel has no use for one.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanParams {
    /// The input elements (`const In*`).
    pub input: u64,
    /// The output elements (`Acc*`); may equal `input`.
    pub output: u64,
    /// Segment flags or keys (`const void*`), in memory order; 0 when unsegmented; the
    /// row length for `HEADS_ROWS`.
    pub heads: u64,
    /// The look-back workspace: a `LookbackHeader` and its status slots (the matrix scan
    /// keeps its tile sums in the slot area).
    pub workspace: u64,
    /// Where a kernel reports a refused workspace or an expired look-back (`FaultReport*`).
    pub report: u64,
    /// Elements to scan.
    pub n: i64,
    /// Status slots the host checked the workspace to hold.
    pub status_capacity: i64,
    /// The initial value's bits (the low bytes for 4-byte types), used with `FLAG_HAS_INIT`;
    /// with `FLAG_INIT_IN_MEMORY`, the device address of the value.
    pub init_bits: u64,
    /// Where an unsegmented scan writes its total (the inclusive value of its last element
    /// in traversal order, so the initial value for nothing scanned); 0: nowhere.
    pub carry_out: u64,
    /// Rows with a pitch (`HEADS_ROWS` scans on the bulk-copy kernel only): elements
    /// between the starts of the input's rows, whose length is `heads`; 0: the rows
    /// follow each other.
    pub in_pitch: i64,
    /// The same for the output.
    pub out_pitch: i64,
    /// `FLAG_*` bits, and a `HEADS_*` kind at `HEADS_KIND_SHIFT`.
    pub flags: u32,
    /// The launching call's serial number, which a kernel writes into its fault report
    /// so that the host can name the call (`runtime::calls`).
    pub call: u32,
}

// The host passes ScanParams to kernels as the bytes of their parameter list, so it must
// have no padding: its fields' sizes add up to its size.
const _: () = assert!(std::mem::size_of::<ScanParams>() == 11 * 8 + 2 * 4);

/// The largest state a user-defined operator may scan, in bytes.
pub const MAX_STATE_BYTES: u32 = 64;

/// The bytes of a user-defined operator's initial value (`MAX_STATE_BYTES` of them).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateBytes {
    /// The value's bytes, in the first `sizeof(State)` bytes.
    pub words: [u64; 8],
}

impl StateBytes {
    /// A state of at most `MAX_STATE_BYTES` bytes (longer input is cut there; callers
    /// check the length first), zero-padded.
    pub fn from_bytes(bytes: &[u8]) -> StateBytes {
        let mut state = StateBytes::default();
        for (word, chunk) in state.words.iter_mut().zip(bytes.chunks(8)) {
            let mut padded = [0u8; 8];
            padded[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(padded);
        }
        state
    }

    /// The state's bytes (`MAX_STATE_BYTES` of them, zero-padded past the state).
    pub fn bytes(&self) -> [u8; MAX_STATE_BYTES as usize] {
        let mut out = [0u8; MAX_STATE_BYTES as usize];
        for (chunk, word) in out.chunks_mut(8).zip(self.words) {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        out
    }

    /// A built-in type's value, as its bits zero-extended to 64 (`ScanParams::init_bits`).
    pub fn from_bits(bits: u64) -> StateBytes {
        let mut state = StateBytes::default();
        state.words[0] = bits;
        state
    }
}

/// The further parameters of a user-defined operator's kernels, after `ScanParams`'s
/// (`SCANRT_OPERATOR_PARAMS`): the host passes `ScanParams` and this struct back to back
/// as one parameter buffer (`OperatorLaunch`), laid out as the kernels declare them.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorParams {
    /// Transform inputs 1-3 (input 0 is `ScanParams::input`); 0 where unused.
    pub input1: u64,
    /// See `input1`.
    pub input2: u64,
    /// See `input1`.
    pub input3: u64,
    /// Transform output 1 (output 0 is `ScanParams::output`); 0 where unused.
    pub output1: u64,
    /// The initial value of a state wider than 8 bytes (narrower ones use `init_bits`).
    pub init: StateBytes,
}

/// The parameter buffer of a user-defined operator's kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorLaunch {
    /// The parameters every scan kernel takes.
    pub scan: ScanParams,
    /// The operator kernels' own.
    pub operator: OperatorParams,
}

const _: () = assert!(std::mem::size_of::<OperatorLaunch>() == 11 * 8 + 2 * 4 + 4 * 8 + 64);

/// The parameters of the select and partition kernels (`SCANRT_SELECT_PARAMS`), passed
/// as ScanParams are. Addresses are device pointers; 0 where a kernel has no use for one.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SelectParams {
    /// The input elements (`const T*`).
    pub input: u64,
    /// The selection's flags (bytes, or bits in 32-bit words); 0 for predicates.
    pub selection: u64,
    /// Where the selected elements (or their indices) go.
    pub output: u64,
    /// A two-array partition's rejected elements, or a run-length encoding's lengths; 0
    /// otherwise.
    pub second: u64,
    /// Where the number of selected elements is written (`unsigned long long*`).
    pub num_selected: u64,
    /// The look-back workspace (a `LookbackHeader` and its status slots).
    pub workspace: u64,
    /// Where a kernel reports a refused workspace or an expired look-back (`FaultReport*`).
    pub report: u64,
    /// Elements of the input.
    pub n: i64,
    /// Status slots the host checked the workspace to hold.
    pub status_capacity: i64,
    /// Selected elements past this many are counted but not written.
    pub capacity: u64,
    /// A comparison's operand, as the element type's bits.
    pub operand_bits: u64,
    /// `FLAG_VECTOR_IN` (whole tiles load as vectors), `FLAG_VECTOR_HEADS` (byte flags
    /// load as words), `SELECT_FLAG_COUNT_U32` (the count's width).
    pub flags: u32,
    /// The launching call's serial number (as `ScanParams::call`).
    pub call: u32,
}

const _: () = assert!(std::mem::size_of::<SelectParams>() == 11 * 8 + 2 * 4);

/// The parameters of the radix sort's kernels (`SCANRT_SORT_PARAMS`): the histogram
/// kernel reads `keys_in`, `n`, `histograms`, `begin_bit` and `end_bit`; a digit pass
/// reads one portion of at most 2^31 elements (`keys_in`, `values_in` and `n` are the
/// portion's) and scatters into the whole output.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SortParams {
    /// The portion's keys.
    pub keys_in: u64,
    /// The whole output of the pass.
    pub keys_out: u64,
    /// The portion's values (0: keys only, or `SORT_FLAG_INDICES`).
    pub values_in: u64,
    /// The whole output of the pass's values.
    pub values_out: u64,
    /// Digit counts (`unsigned long long`, zero-filled): the histogram kernel adds every
    /// pass's `[passes][256]` and counts its finished blocks in the word after them; its
    /// last block makes each pass's counts the digits' bin starts. A digit pass reads its
    /// own 256 bin starts.
    pub histograms: u64,
    /// The pass's per-digit counts of the earlier portions (256 `unsigned long long`).
    pub carry_in: u64,
    /// Where the portion's last tile writes `carry_in` plus its own counts, for the next
    /// portion; 0 for the last portion.
    pub carry_out: u64,
    /// The look-back workspace (a `LookbackHeader` and 256 status slots per tile).
    pub workspace: u64,
    /// Where a kernel reports a refused workspace or an expired look-back (`FaultReport*`).
    pub report: u64,
    /// Elements of the portion (the histogram kernel: of the whole input).
    pub n: i64,
    /// Status slots the host checked the workspace to hold.
    pub status_capacity: i64,
    /// The portion's first element's index (`SORT_FLAG_INDICES` values).
    pub index_base: u64,
    /// The pass's lowest key bit (the histogram kernel: the sort's).
    pub begin_bit: u32,
    /// One past the pass's highest key bit (the histogram kernel: the sort's).
    pub end_bit: u32,
    /// `SORT_FLAG_*` bits.
    pub flags: u32,
    /// The launching call's serial number (as `ScanParams::call`).
    pub call: u32,
}

const _: () = assert!(std::mem::size_of::<SortParams>() == 12 * 8 + 4 * 4);

/// The parameters of the strided scan kernel (`SCANRT_STRIDED_PARAMS`): a scan along the
/// middle axis of a `[batches][len][columns]` view, element `(b, i, c)` at
/// `b * batch_stride + i * row_stride + c * column_stride` elements from its base (the
/// input's and the output's strides each their own), each `(b, c)` an independent
/// sequence.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StridedParams {
    /// The input's element `(0, 0, 0)` (`const In*`).
    pub input: u64,
    /// The output's element `(0, 0, 0)` (`Out*`); may be the input, with its strides.
    pub output: u64,
    /// The look-back workspace (a `LookbackHeader` and `columns` status slots per tile).
    pub workspace: u64,
    /// Where a kernel reports a refused workspace or an expired look-back (`FaultReport*`).
    pub report: u64,
    /// Elements between the input's batches.
    pub in_batch_stride: i64,
    /// Elements between the input's rows (along the scanned axis).
    pub in_row_stride: i64,
    /// Elements between the output's batches.
    pub out_batch_stride: i64,
    /// Elements between the output's rows.
    pub out_row_stride: i64,
    /// Elements between the input's columns (1: adjacent, read in whole rows of a strip).
    pub in_column_stride: i64,
    /// Elements between the output's columns.
    pub out_column_stride: i64,
    /// Batches (independent groups of columns).
    pub batches: i64,
    /// Elements of each sequence (rows along the scanned axis).
    pub len: i64,
    /// Adjacent columns of each batch.
    pub columns: i64,
    /// Status slots the host checked the workspace to hold.
    pub status_capacity: i64,
    /// As `ScanParams::init_bits`; with `FLAG_PER_SEQUENCE_CARRIES`, the address of one
    /// initial value per sequence (`batches * columns` accumulators).
    pub init_bits: u64,
    /// Where each sequence's total goes (`batches * columns` accumulators); 0: nowhere.
    pub carry_out: u64,
    /// Per-sequence carries: sequence `(b, c)` is the carries' element
    /// `b * carry_batch_stride + c * carry_column_stride`.
    pub carry_batch_stride: i64,
    /// See `carry_batch_stride`.
    pub carry_column_stride: i64,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The launching call's serial number (as `ScanParams::call`).
    pub call: u32,
}

const _: () = assert!(std::mem::size_of::<StridedParams>() == 18 * 8 + 2 * 4);

/// A digit pass writes each element's index (`index_base` + its position in the
/// portion) as its value, instead of reading `values_in`: the first pass of an argsort.
pub const SORT_FLAG_INDICES: u32 = 1;
/// The keys are 16-byte aligned, read as vectors (histogram kernel).
pub const SORT_FLAG_VECTOR_IN: u32 = 2;
/// A digit pass reads keys as the words it ranks (an earlier pass wrote them so), not as
/// the caller's bits.
pub const SORT_FLAG_RANKED_IN: u32 = 4;
/// A digit pass writes keys as the words it ranks, for a later pass (else as the caller's
/// bits: the last pass).
pub const SORT_FLAG_RANKED_OUT: u32 = 8;

/// Inclusive scan (else exclusive).
pub const FLAG_INCLUSIVE: u32 = 1;
/// `init_bits` holds an initial value (else the identity).
pub const FLAG_HAS_INIT: u32 = 2;
/// Input tiles are 16-byte aligned (forward: the pointer; backward: its end).
pub const FLAG_VECTOR_IN: u32 = 4;
/// Output tiles likewise.
pub const FLAG_VECTOR_OUT: u32 = 8;
/// Single pass: the timing-independent look-back (anchor tiles).
pub const FLAG_DETERMINISTIC: u32 = 16;
/// Byte flags or keys aligned like the tiles, read as vectors.
pub const FLAG_VECTOR_HEADS: u32 = 32;
/// Selections: the count is written as 32 bits (else 64).
pub const SELECT_FLAG_COUNT_U32: u32 = 2;
/// The initial value is read from device memory at the address `init_bits` (an unsegmented
/// scan's carry in); implies `FLAG_HAS_INIT`.
pub const FLAG_INIT_IN_MEMORY: u32 = 512;
/// Strided scans: `init_bits` is the address of one initial value per sequence (implies
/// `FLAG_HAS_INIT`).
pub const FLAG_PER_SEQUENCE_CARRIES: u32 = 1024;
/// The initial value is the fold of `flags >> INIT_FOLD_COUNT_SHIFT` consecutive states at
/// `init_bits`, combined in the scan's traversal order (from the last state with
/// `FLAG_INIT_FOLD_DESCENDING`): a rank's carry from every earlier rank's total in a scan
/// across GPUs, without a scan of the totals. Implies `FLAG_INIT_IN_MEMORY`.
pub const FLAG_INIT_FOLD: u32 = 8192;
/// See `FLAG_INIT_FOLD`: the states are folded from the highest address down.
pub const FLAG_INIT_FOLD_DESCENDING: u32 = 16384;
/// Segments by offsets with carries per segment (`block/segment_carries.cuh`): with
/// `FLAG_INIT_IN_MEMORY`, `init_bits` is the address of one initial state per segment;
/// `carry_out`, when not 0, receives one total per segment. The offsets are described by
/// the `SegmentTable` after the bit flags at `heads` (`segment_table_offset`).
pub const FLAG_SEGMENT_CARRIES: u32 = 32768;
/// Bits 16-31 of the flags: the number of states `FLAG_INIT_FOLD` folds.
pub const INIT_FOLD_COUNT_SHIFT: u32 = 16;
/// The most states `FLAG_INIT_FOLD` can fold (the count's 16 bits).
pub const INIT_FOLD_MAX_STATES: u32 = 0xffff;
/// Strided scans: the input is read along its rows (tile rows adjacent in memory) rather
/// than along its columns, as when the rows' stride is the smaller.
pub const FLAG_STRIDED_IN_ROWS_FAST: u32 = 2048;
/// Strided scans: likewise for the output's writes.
pub const FLAG_STRIDED_OUT_ROWS_FAST: u32 = 4096;
/// Bits 6-8 of the flags: the `HEADS_*` kind of a segmented scan.
pub const HEADS_KIND_SHIFT: u32 = 6;
/// The `HEADS_*` kind's bits, after the shift.
pub const HEADS_KIND_MASK: u32 = 7;
/// One byte per element; nonzero starts a segment (also the kind of unsegmented scans).
pub const HEADS_BYTES: u32 = 0;
/// Start flags packed 32 to a 32-bit word.
pub const HEADS_BITS: u32 = 1;
/// 4-byte keys: a segment starts where the key changes.
pub const HEADS_KEYS4: u32 = 2;
/// 8-byte keys.
pub const HEADS_KEYS8: u32 = 3;
/// Rows of equal length (batched sequences): a segment starts every `heads` elements
/// (`ScanParams::heads` holds the row length, not an address).
pub const HEADS_ROWS: u32 = 4;

/// Where a scan with `FLAG_SEGMENT_CARRIES` finds its segments' offsets: written by the
/// offsets prepass after the bit flags it makes (`segment_table_offset` bytes from
/// `ScanParams::heads`), so that the scan kernels' parameters stay the same.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentTable {
    /// The offsets (`const void*`): segment s is `[offsets[s], offsets[s + 1])`.
    pub offsets: u64,
    /// Offsets in the table (one more than the segments).
    pub count: i64,
    /// How an offset is read: `OFFSETS_U32`, `OFFSETS_I32` or `OFFSETS_64`.
    pub kind: u32,
    /// Padding to 8 bytes.
    pub unused: u32,
}

/// Offsets of type u32.
pub const OFFSETS_U32: u32 = 0;
/// Offsets of type i32 (a negative one reads as past every element).
pub const OFFSETS_I32: u32 = 1;
/// Offsets of type u64 or i64 (a negative i64 reads as 2^63 or more, past every element).
pub const OFFSETS_64: u32 = 2;

/// Bytes from the bit flags of `n` elements to their `SegmentTable`: the flags' words,
/// rounded up to 16 bytes (the kernels' `segment_table_offset`).
pub const fn segment_table_offset(n: u64) -> u64 {
    (n.div_ceil(32) * 4).div_ceil(16) * 16
}

/// The look-back workspace header; the status slots follow it. Initialised by the host
/// (zero-filled, then `area_bytes` and `seal` written), then owned by the kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookbackHeader {
    /// `[generation:32 | next tile id:32]`.
    pub ticket: u64,
    /// Counted only in the launch before the generation tags repeat.
    pub finished_blocks: u32,
    /// Nonzero: a launch found the protocol broken (a `FAULT_*` code); the workspace is
    /// refused until initialised again.
    pub fault: u32,
    /// Bytes of status slots initialised after the header.
    pub area_bytes: u64,
    /// `seal(area_bytes)`: the header was written by scanrt (see `WORKSPACE_MAGIC`).
    pub seal: u64,
}

/// Generation tags of status slots run 1..=TAG_PERIOD (29 bits); the launch before they
/// repeat clears every slot.
pub const TAG_PERIOD: u32 = 0x1fff_ffff;
/// Names the header layout ("scanrt02"); a header is sealed with
/// `WORKSPACE_MAGIC ^ (area_bytes * WORKSPACE_SEAL_MULTIPLIER)`.
pub const WORKSPACE_MAGIC: u64 = 0x7363_616e_7274_3032;
/// See `WORKSPACE_MAGIC`.
pub const WORKSPACE_SEAL_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
/// A status slot for 4-byte carries: one 64-bit word.
pub const STATUS_SLOT_BYTES_4: u32 = 8;
/// A status slot for 8-byte carries: two 64-bit words.
pub const STATUS_SLOT_BYTES_8: u32 = 16;
/// A status slot for 16-byte carries: four 64-bit words.
pub const STATUS_SLOT_BYTES_16: u32 = 32;
/// Bytes of one status slot for carried values of `value_bytes` (`TileStatus::SLOT_BYTES`):
/// wider carries (user-defined states) take a 64-bit word per 32-bit word of the value,
/// padded to an even count.
pub const fn status_slot_bytes(value_bytes: usize) -> usize {
    match value_bytes {
        4 => STATUS_SLOT_BYTES_4 as usize,
        8 => STATUS_SLOT_BYTES_8 as usize,
        16 => STATUS_SLOT_BYTES_16 as usize,
        _ => 16 * value_bytes.div_ceil(8),
    }
}

/// What a kernel writes when it refuses a workspace or gives up a wait; mapped pinned
/// host memory the host reads at its next call. The report is one 64-bit word
/// (`fault_word`), written by one store and taken by the host with one swap, so the
/// reports of two kernels faulting at once never mix.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultReport {
    /// `fault_word(workspace, call, code)`; 0 = nothing to report.
    pub word: u64,
}

/// Bits of a fault word holding the `FAULT_*` code (its low bits).
pub const FAULT_CODE_BITS: u32 = 4;
/// Bits of a fault word holding the low bits of the reporting launch's
/// `ScanParams::call`, above the code (`runtime::calls` keeps far fewer recent calls).
pub const FAULT_CALL_BITS: u32 = 16;

/// The fault word of a report: the workspace's address over 16 (workspaces are 16-byte
/// aligned; addresses below 2^48, as every CUDA platform's), then the call's low
/// `FAULT_CALL_BITS` bits, then the code.
pub const fn fault_word(workspace: u64, call: u32, code: u32) -> u64 {
    (workspace >> 4) << (FAULT_CALL_BITS + FAULT_CODE_BITS)
        | ((call & ((1 << FAULT_CALL_BITS) - 1)) as u64) << FAULT_CODE_BITS
        | code as u64
}

/// No valid seal: never initialised, or overwritten.
pub const FAULT_UNINITIALISED: u32 = 1;
/// Initialised for fewer slots than the scan needs.
pub const FAULT_TOO_SMALL: u32 = 2;
/// A look-back waited past `WATCHDOG_NS`.
pub const FAULT_WATCHDOG: u32 = 3;
/// Initialised for more bytes than the call passed.
pub const FAULT_LARGER: u32 = 4;
/// Flag: refused for the earlier fault in the low bits.
pub const FAULT_POISONED: u32 = 8;
/// The longest a look-back waits for a predecessor, in nanoseconds. A healthy wait lasts
/// microseconds; only a broken protocol state waits longer.
pub const WATCHDOG_NS: u64 = 1_000_000_000;

/// The seal of a header whose slot area is `area_bytes` long.
pub const fn seal(area_bytes: u64) -> u64 {
    WORKSPACE_MAGIC ^ area_bytes.wrapping_mul(WORKSPACE_SEAL_MULTIPLIER)
}
