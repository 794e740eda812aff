// The closed tables of scanrt, each written once. `c_enums!` (src/c_enum.rs) makes each a
// Rust enum with its names and decoding; build.rs includes this file with a macro of the
// same name that writes the C enums of include/scanrt.h. Values are the C ABI: stable,
// new rows only ever appended. Rows: `Variant = value, "C_SUFFIX", "short text";`.
// (Plain `//` comments here: this file is also included by build.rs.)

c_enums! {
    /// Status codes of the C ABI; `SCANRT_STATUS_OK` is 0 and every error has its own value.
    /// Values are stable across releases: new codes are only ever appended.
    pub enum ScanrtStatus("scanrt_status", "SCANRT_STATUS_") {
        /// Success.
        Ok = 0, "OK", "ok";
        /// A required pointer or handle argument was NULL.
        NullArgument = 1, "NULL_ARGUMENT", "null argument";
        /// An argument is out of range or malformed (unknown enum value, bad length, ...).
        InvalidArgument = 2, "INVALID_ARGUMENT", "invalid argument";
        /// The operator cannot be applied to the element type (for example xor on floats),
        /// or the input type cannot be accumulated in the output type.
        UnsupportedCombination = 3, "UNSUPPORTED_COMBINATION", "unsupported operator/type combination";
        /// The output (or a workspace) holds fewer elements or bytes than the call needs.
        BufferTooSmall = 4, "BUFFER_TOO_SMALL", "buffer too small";
        /// Input and output overlap without being exactly the same range.
        PartialOverlap = 5, "PARTIAL_OVERLAP", "input and output partially overlap";
        /// A pointer is not device memory of the context's device (for example a host pointer).
        NotDeviceMemory = 6, "NOT_DEVICE_MEMORY", "not device memory";
        /// A buffer or stream belongs to another context than the one given.
        ContextMismatch = 7, "CONTEXT_MISMATCH", "object of another context";
        /// No CUDA driver library could be loaded.
        NoDriver = 8, "NO_DRIVER", "no CUDA driver";
        /// The driver loaded but no usable CUDA device exists (or the ordinal is out of range).
        NoDevice = 9, "NO_DEVICE", "no CUDA device";
        /// NVRTC could not be loaded, or failed to compile a kernel; the message carries its log.
        CompileError = 10, "COMPILE_ERROR", "kernel compilation failed";
        /// A CUDA driver call failed; the message names the call and the CUDA error.
        CudaError = 11, "CUDA_ERROR", "CUDA error";
        /// The length (times the element size) overflows the address space or a kernel limit.
        LengthOverflow = 12, "LENGTH_OVERFLOW", "length overflow";
        /// The operation needs a GPU context but the context runs on the host backend (or vice versa).
        WrongBackend = 13, "WRONG_BACKEND", "wrong backend";
        /// An internal error (a panic inside scanrt) was caught at the C boundary: a bug in
        /// scanrt, please report it.
        Panic = 14, "PANIC", "internal panic";
        /// Memory for a buffer could not be allocated.
        OutOfMemory = 15, "OUT_OF_MEMORY", "out of memory";
        /// A kernel refused a look-back workspace (never initialised, initialised for a
        /// smaller scan, or poisoned by an earlier fault; it wrote no output), or a
        /// look-back gave up waiting after 1 s (a workspace used by two scans at once or
        /// corrupted; that scan's output is undefined). Returned by the context's next call;
        /// the message names the workspace.
        WorkspaceFault = 16, "WORKSPACE_FAULT", "workspace fault";
        /// A scan across GPUs needs NCCL, and no NCCL library could be loaded (scanrt
        /// looks for `libnccl.so` on the library path).
        NoNccl = 17, "NO_NCCL", "NCCL not available";
        /// An NCCL call failed; the message names the call and NCCL's error.
        NcclError = 18, "NCCL_ERROR", "NCCL error";
    }

    /// Element types. Their sizes and CUDA spellings: `DType::info` (src/types/table.rs).
    pub enum DType("scanrt_dtype", "SCANRT_DTYPE_") {
        /// 8-bit unsigned integer.
        U8 = 0, "U8", "u8";
        /// 32-bit signed integer.
        I32 = 1, "I32", "i32";
        /// 32-bit unsigned integer.
        U32 = 2, "U32", "u32";
        /// 64-bit signed integer.
        I64 = 3, "I64", "i64";
        /// 64-bit unsigned integer.
        U64 = 4, "U64", "u64";
        /// IEEE-754 binary32.
        F32 = 5, "F32", "f32";
        /// IEEE-754 binary64.
        F64 = 6, "F64", "f64";
        /// 8-bit signed integer.
        I8 = 7, "I8", "i8";
        /// 16-bit unsigned integer.
        U16 = 8, "U16", "u16";
        /// 16-bit signed integer.
        I16 = 9, "I16", "i16";
        /// IEEE-754 binary16, a storage type: scans accumulate it in f32.
        F16 = 10, "F16", "f16";
        /// bfloat16 (the high half of a binary32), a storage type: scans accumulate it in f32.
        BF16 = 11, "BF16", "bf16";
    }

    /// Scan operators. Their definitions, on the device and on the host: `Op::definition`
    /// (src/ops.rs).
    pub enum Op("scanrt_op", "SCANRT_OP_") {
        /// Addition (integers wrap).
        Sum = 0, "SUM", "sum";
        /// Multiplication (integers wrap).
        Product = 1, "PRODUCT", "product";
        /// Minimum (keeps the earlier operand on ties and NaN).
        Min = 2, "MIN", "min";
        /// Maximum (keeps the earlier operand on ties and NaN).
        Max = 3, "MAX", "max";
        /// Bitwise and (integers only).
        BitAnd = 4, "BIT_AND", "bitwise and";
        /// Bitwise or (integers only).
        BitOr = 5, "BIT_OR", "bitwise or";
        /// Bitwise xor (integers only).
        BitXor = 6, "BIT_XOR", "bitwise xor";
    }

    /// Which algorithm runs a scan.
    pub enum Algorithm("scanrt_algorithm", "SCANRT_ALGORITHM_") default Auto {
        /// scanrt picks; the scan reports what it picked and why (a choice reason).
        Auto = 0, "AUTO", "auto";
        /// Single-pass decoupled look-back (one launch, ~2n traffic).
        SinglePass = 1, "SINGLE_PASS", "single pass";
        /// Matrix reduce-then-scan (three launches, ~3n traffic, timing-independent order).
        Matrix = 2, "MATRIX", "matrix";
        /// The CPU backend (only reported, never requested on a GPU context).
        Host = 3, "HOST", "host";
        /// Single-pass look-back whose association order is fixed (anchor tiles): bitwise
        /// reproducible float results at near single-pass speed.
        DeterministicSinglePass = 4, "DETERMINISTIC_SINGLE_PASS", "deterministic single pass";
    }

    /// Where a context runs scans.
    pub enum Backend("scanrt_backend", "SCANRT_BACKEND_") default Auto {
        /// The GPU when a CUDA driver and device are usable, else the host.
        Auto = 0, "AUTO", "auto";
        /// A CUDA device (fails with `SCANRT_STATUS_NO_DRIVER` / `SCANRT_STATUS_NO_DEVICE`
        /// when there is none).
        Gpu = 1, "GPU", "GPU";
        /// The CPU.
        Host = 2, "HOST", "host";
    }

    /// The order in which elements are combined.
    pub enum Direction("scanrt_direction", "SCANRT_DIRECTION_") default Forward {
        /// From the first element to the last.
        Forward = 0, "FORWARD", "forward";
        /// From the last element to the first: `out[i]` folds `in[n-1] .. in[i]`, in that
        /// order (operands keep traversal order).
        Backward = 1, "BACKWARD", "backward";
    }

    /// Why a scan ran the algorithm it ran (reported beside the algorithm after every call).
    pub enum ChoiceReason("scanrt_choice_reason", "SCANRT_CHOICE_REASON_") {
        /// The descriptor named the algorithm.
        Requested = 0, "REQUESTED", "the descriptor named the algorithm";
        /// `SCANRT_ALGORITHM_AUTO`: the single-pass look-back is the fastest path at every size.
        Fastest = 1, "FASTEST", "auto: the single-pass look-back is the fastest path";
        /// `SCANRT_ALGORITHM_AUTO` with `deterministic`: the result does not depend on association order
        /// (integers, min, max, bitwise), so the regular single pass is already reproducible.
        OrderIndependent = 2, "ORDER_INDEPENDENT", "auto, deterministic: the operator does not depend on association order, so the single pass is reproducible as it is";
        /// `deterministic` on a float sum or product (with `SCANRT_ALGORITHM_AUTO`, or
        /// `SCANRT_ALGORITHM_SINGLE_PASS`, which cannot keep the promise): the fixed-order
        /// single pass, faster than the matrix scan.
        Deterministic = 3, "DETERMINISTIC", "deterministic float sum or product: the fixed-order single pass (anchor tiles), faster than the matrix scan";
        /// The context runs on the host backend.
        HostBackend = 4, "HOST_BACKEND", "the context runs on the host backend";
    }

    /// How a segmented scan finds its segments (`scanrt_scan_desc.segments`). The data at
    /// `segment_data` is in memory order, one entry per element; segments are the same for
    /// both directions (a backward scan treats a start flag as the end of its traversal).
    pub enum SegmentKind("scanrt_segments", "SCANRT_SEGMENTS_") default None {
        /// An unsegmented scan (`segment_data` must be NULL).
        None = 0, "NONE", "unsegmented";
        /// One byte per element; nonzero starts a segment.
        ByteFlags = 1, "BYTE_FLAGS", "byte flags";
        /// Flags packed 32 to a `uint32_t` word: bit i of word w is element 32*w + i.
        BitFlags = 2, "BIT_FLAGS", "bit flags";
        /// Scan by key: runs of equal consecutive keys of type `key_dtype` (u32, i32, u64, i64).
        Keys = 3, "KEYS", "keys";
        /// Rows of `row_length` elements each (a batch of equal-length sequences);
        /// `segment_data` must be NULL.
        Rows = 4, "ROWS", "rows";
        /// Offsets (a CSR array of `num_offsets` entries of type `key_dtype`: u32, i32,
        /// u64 or i64): segment i is `[offsets[i], offsets[i+1])`; each offset below n
        /// starts a segment, repeated ones (empty segments) too, larger and negative ones
        /// nothing.
        Offsets = 5, "OFFSETS", "offsets";
    }

    /// Which elements a selection keeps, or a partition puts first (`scanrt_select_desc.rule`).
    pub enum SelectRule("scanrt_select_rule", "SCANRT_SELECT_") default ByteFlags {
        /// One byte per element beside the input; nonzero keeps the element.
        ByteFlags = 0, "BYTE_FLAGS", "byte flags";
        /// Flags packed 32 to a `uint32_t` word: bit i of word w is element 32*w + i.
        BitFlags = 1, "BIT_FLAGS", "bit flags";
        /// `x == operand`.
        Equal = 2, "EQUAL", "equal to the operand";
        /// `x != operand`.
        NotEqual = 3, "NOT_EQUAL", "not equal to the operand";
        /// `x < operand`.
        Less = 4, "LESS", "less than the operand";
        /// `x <= operand`.
        LessEqual = 5, "LESS_EQUAL", "at most the operand";
        /// `x > operand`.
        Greater = 6, "GREATER", "greater than the operand";
        /// `x >= operand`.
        GreaterEqual = 7, "GREATER_EQUAL", "at least the operand";
        /// Elements that are not zero.
        NonZero = 8, "NONZERO", "nonzero";
        /// Elements that are not NaN.
        NotNan = 9, "NOT_NAN", "not NaN";
        /// The first of each run of equal elements (unique).
        RunHeads = 10, "RUN_HEADS", "first of each run";
        /// A user-defined predicate (`predicate_source`, `predicate_function`).
        Predicate = 11, "PREDICATE", "user-defined predicate";
    }

    /// What a selection writes (`scanrt_select_desc.output`).
    pub enum SelectOutput("scanrt_select_output", "SCANRT_SELECT_OUTPUT_") default Values {
        /// The selected elements, in order.
        Values = 0, "VALUES", "values";
        /// The indices of the selected elements (a U32 or U64 output), in order.
        Indices = 1, "INDICES", "indices";
        /// A partition into one array of n: the selected elements in order, then the
        /// rejected ones in reverse order from the end (as CUB's `DevicePartition`).
        PartitionReversed = 2, "PARTITION_REVERSED", "partition, rejected reversed at the end";
        /// A partition into two arrays, both in order.
        PartitionTwo = 3, "PARTITION_TWO", "partition into two arrays";
        /// A run-length encoding (with `SCANRT_SELECT_RUN_HEADS`): each run's value, in
        /// order, and its length in a second array (U32 or U64).
        RunLengths = 4, "RUN_LENGTHS", "run-length encoding";
    }

    /// The order of a sort (equal keys keep their input order in both).
    pub enum SortOrder("scanrt_sort_order", "SCANRT_SORT_") default Ascending {
        /// Smallest key first.
        Ascending = 0, "ASCENDING", "ascending";
        /// Largest key first: the exact reverse order of keys.
        Descending = 1, "DESCENDING", "descending";
    }

    /// What a plan computes (`scanrt_plan_desc.primitive`); each takes its arrays in the
    /// order its row says (`scanrt_args.arrays`; an optional one may have NULL data).
    pub enum Primitive("scanrt_primitive", "SCANRT_PRIMITIVE_") default Scan {
        /// A scan along `axis` (`scan`: `[input, output]`, then optionally `carry_in` and
        /// `carry_out`), as `scanrt_scan_array_carried`.
        Scan = 0, "SCAN", "scan";
        /// A selection or partition (`select`: `[input, flags, output, rejected, count]`;
        /// `flags` and `rejected` optional, `count` one U32, U64 or I64 element, in device
        /// memory or page-locked host memory), as `scanrt_select`.
        Select = 1, "SELECT", "select";
        /// A run-length encoding (`[input, values, lengths, count]`, the count as a
        /// selection's), as `scanrt_run_length_encode`.
        RunLengthEncode = 2, "RUN_LENGTH_ENCODE", "run-length encoding";
        /// A stable radix sort (`sort`: `[keys_in, keys_out, values_in, values_out]`, the
        /// values optional; temporary memory in `workspace`), as `scanrt_sort`.
        Sort = 3, "SORT", "sort";
        /// A summed-area table of the last two axes (`scan`: `[input, output]`), as
        /// `scanrt_summed_area_table`.
        SummedAreaTable = 4, "SUMMED_AREA_TABLE", "summed-area table";
    }

    /// How much scanrt tells a log callback (`scanrt_set_log_callback`); each level
    /// includes the ones above it.
    pub enum LogLevel("scanrt_log_level", "SCANRT_LOG_") default Off {
        /// Nothing.
        Off = 0, "OFF", "off";
        /// Failures scanrt returns as well, where the log adds context.
        Error = 1, "ERROR", "error";
        /// Fallbacks and refusals: the host backend taken for want of a GPU, a kernel cache
        /// directory refused, a workspace fault.
        Warn = 2, "WARN", "warn";
        /// Kernel compiles (with their time) and the backend each context runs on.
        Info = 3, "INFO", "info";
        /// Kernel cache hits and misses, kernel sets loaded, workspaces allocated.
        Debug = 4, "DEBUG", "debug";
        /// Everything, per call.
        Trace = 5, "TRACE", "trace";
    }
}
