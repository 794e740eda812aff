//! The C ABI's soundness rules, called the way C calls them: handles are NULL after a
//! failure, a successful scan allocates nothing, uploads may overlap the buffer, and a
//! call from a thread's TLS destructor neither aborts nor crashes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::ptr;

use scanrt::ffi::*;
use scanrt::{DType, ScanrtStatus};

/// Counts this thread's allocations.
struct Counting;
thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout)
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.realloc(p, layout, size)
    }
}
#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

fn host_context() -> *mut scanrt_context {
    let mut ctx = ptr::null_mut();
    assert_eq!(unsafe { scanrt_context_create(2, 0, &mut ctx) }, ScanrtStatus::Ok);
    ctx
}

fn message() -> String {
    unsafe { CStr::from_ptr(scanrt_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn handles_are_null_after_a_failure() {
    let garbage = 0x1234 as *mut scanrt_context;
    let mut ctx = garbage;
    assert_eq!(
        unsafe { scanrt_context_create(77, 0, &mut ctx) },
        ScanrtStatus::InvalidArgument
    );
    assert!(ctx.is_null());
    assert!(message().contains("backend"), "{}", message());
    let ctx = host_context();
    let mut buffer = 0x1234 as *mut scanrt_buffer;
    assert_eq!(
        unsafe { scanrt_buffer_create(ctx, 99, 4, &mut buffer) },
        ScanrtStatus::InvalidArgument
    );
    assert!(buffer.is_null());
    let mut buffer = 0x1234 as *mut scanrt_buffer;
    assert_eq!(
        unsafe { scanrt_buffer_create(ctx, DType::U32 as i32, u64::MAX, &mut buffer) },
        ScanrtStatus::LengthOverflow
    );
    assert!(buffer.is_null());
    let mut stream = 0x1234 as *mut scanrt_stream;
    assert_eq!(
        unsafe { scanrt_stream_create(ptr::null(), &mut stream) },
        ScanrtStatus::NullArgument
    );
    assert!(stream.is_null());
    let mut pointer = 0x1234 as *mut c_void;
    assert_eq!(
        unsafe { scanrt_buffer_pointer(ptr::null(), &mut pointer) },
        ScanrtStatus::NullArgument
    );
    assert!(pointer.is_null());
    let reason = unsafe { CStr::from_ptr(scanrt_context_backend_reason(ctx)) };
    assert!(reason.to_str().unwrap().contains("host"), "{reason:?}");
    unsafe { scanrt_context_destroy(ctx) };
}

/// On the host backend, and on the GPU where there is one: the scan call after a failed
/// one (whose message it clears) makes no heap allocation, through buffers and (GPU)
/// through raw device pointers.
#[test]
fn a_successful_scan_allocates_nothing() {
    let mut contexts = vec![host_context()];
    let mut gpu = ptr::null_mut();
    if unsafe { scanrt_context_create(1, 0, &mut gpu) } == ScanrtStatus::Ok {
        contexts.push(gpu);
    } else {
        eprintln!("skipped on the GPU: no CUDA device");
    }
    for ctx in contexts {
        let n = 100_000u64;
        let input: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        let mut desc = std::mem::MaybeUninit::<scanrt_scan_desc>::uninit();
        unsafe { scanrt_scan_desc_init_sized(desc.as_mut_ptr(), std::mem::size_of::<scanrt_scan_desc>()) };
        let desc = unsafe { desc.assume_init() };
        let (mut stream, mut src, mut dst) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        unsafe {
            assert_eq!(scanrt_stream_create(ctx, &mut stream), ScanrtStatus::Ok);
            assert_eq!(
                scanrt_buffer_create(ctx, DType::U32 as i32, n, &mut src),
                ScanrtStatus::Ok
            );
            assert_eq!(
                scanrt_buffer_create(ctx, DType::U32 as i32, n, &mut dst),
                ScanrtStatus::Ok
            );
            assert_eq!(
                scanrt_buffer_upload(src, stream, input.as_ptr() as *const c_void, n),
                ScanrtStatus::Ok
            );
        }
        let mut backend = -1;
        unsafe { scanrt_context_backend(ctx, &mut backend) };
        let scan = || unsafe { scanrt_scan(ctx, stream, src, dst, &desc, ptr::null_mut()) };
        assert_eq!(scan(), ScanrtStatus::Ok); // compiles the kernels on a GPU
        let fail = || unsafe { scanrt_scan(ctx, stream, src, dst, ptr::null(), ptr::null_mut()) };
        assert_eq!(fail(), ScanrtStatus::NullArgument);
        assert!(!message().is_empty());
        let before = allocations();
        assert_eq!(scan(), ScanrtStatus::Ok);
        assert_eq!(
            allocations(),
            before,
            "backend {backend}: a successful scan call allocated"
        );
        assert_eq!(message(), "");
        if backend == 1 {
            let (mut pin, mut pout) = (ptr::null_mut(), ptr::null_mut());
            unsafe {
                scanrt_buffer_pointer(src, &mut pin);
                scanrt_buffer_pointer(dst, &mut pout);
            }
            let scan_device =
                || unsafe { scanrt_scan_device(ctx, ptr::null_mut(), pin, 2, pout, 2, n, &desc, ptr::null_mut()) };
            assert_eq!(scan_device(), ScanrtStatus::Ok, "{}", message()); // the legacy stream's first call: its workspace
            assert_eq!(fail(), ScanrtStatus::NullArgument);
            let before = allocations();
            assert_eq!(scan_device(), ScanrtStatus::Ok, "{}", message());
            assert_eq!(allocations(), before, "scanrt_scan_device allocated");
        }
        let mut got = vec![0u32; n as usize];
        unsafe {
            assert_eq!(
                scanrt_buffer_download(dst, stream, got.as_mut_ptr() as *mut c_void, n),
                ScanrtStatus::Ok
            );
        }
        let mut running = 0u32;
        for (i, &x) in input.iter().enumerate() {
            running += x;
            assert_eq!(got[i], running, "element {i}");
        }
        unsafe {
            scanrt_buffer_destroy(src);
            scanrt_buffer_destroy(dst);
            scanrt_stream_destroy(stream);
            scanrt_context_destroy(ctx);
        }
    }
}

#[test]
fn uploads_may_overlap_the_buffer() {
    let ctx = host_context();
    let mut stream = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    unsafe {
        assert_eq!(scanrt_stream_create(ctx, &mut stream), ScanrtStatus::Ok);
        assert_eq!(
            scanrt_buffer_create(ctx, DType::U32 as i32, 8, &mut buffer),
            ScanrtStatus::Ok
        );
        let data: Vec<u32> = (10..18).collect();
        assert_eq!(
            scanrt_buffer_upload(buffer, stream, data.as_ptr() as *const c_void, 8),
            ScanrtStatus::Ok
        );
        let mut p = ptr::null_mut();
        assert_eq!(scanrt_buffer_pointer(buffer, &mut p), ScanrtStatus::Ok);
        // The buffer's own elements 1.. copied onto its start: a memmove.
        assert_eq!(
            scanrt_buffer_upload(buffer, stream, (p as *const u32).add(1) as *const c_void, 7),
            ScanrtStatus::Ok
        );
        let mut got = vec![0u32; 8];
        assert_eq!(
            scanrt_buffer_download(buffer, stream, got.as_mut_ptr() as *mut c_void, 8),
            ScanrtStatus::Ok
        );
        assert_eq!(got, vec![11, 12, 13, 14, 15, 16, 17, 17]);
        scanrt_buffer_destroy(buffer);
        scanrt_stream_destroy(stream);
        scanrt_context_destroy(ctx);
    }
}

/// Calls scanrt from a thread-local's destructor, after the library's own thread-locals
/// may be gone: it must return a status, never abort.
#[test]
fn calls_from_a_tls_destructor_do_not_abort() {
    struct CallsOnExit;
    impl Drop for CallsOnExit {
        fn drop(&mut self) {
            let mut ctx = ptr::null_mut();
            let status = unsafe { scanrt_context_create(77, 0, &mut ctx) };
            assert_eq!(status, ScanrtStatus::InvalidArgument);
            let _ = unsafe { CStr::from_ptr(scanrt_last_error_message()) };
            let ctx = host_context();
            unsafe { scanrt_context_destroy(ctx) };
        }
    }
    thread_local! {
        static ON_EXIT: std::cell::RefCell<Option<CallsOnExit>> = const { std::cell::RefCell::new(None) };
    }
    std::thread::spawn(|| {
        // Touch scanrt first, so its thread-local exists and may be destroyed first.
        let _ = message();
        ON_EXIT.with(|o| *o.borrow_mut() = Some(CallsOnExit));
        let _ = unsafe { scanrt_context_create(77, 0, &mut ptr::null_mut()) };
    })
    .join()
    .unwrap();
}

/// The header's version macros, `scanrt_version` and the crate's version agree (the
/// SONAME and the CMake package are derived from the crate's).
#[test]
fn version_matches_the_crate() {
    let part = |s: &str| s.parse::<u32>().unwrap();
    let (major, minor, patch) = (
        part(env!("CARGO_PKG_VERSION_MAJOR")),
        part(env!("CARGO_PKG_VERSION_MINOR")),
        part(env!("CARGO_PKG_VERSION_PATCH")),
    );
    assert_eq!(
        (SCANRT_VERSION_MAJOR, SCANRT_VERSION_MINOR, SCANRT_VERSION_PATCH),
        (major, minor, patch)
    );
    assert_eq!(scanrt_version(), major * 10000 + minor * 100 + patch);
}
