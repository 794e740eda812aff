//! Uses cudarc (CUDA 12.8 bindings) and scanrt together.
fn main() {
    let ctx = scanrt::Context::new(scanrt::Backend::Auto, 0).expect("a host or GPU context");
    println!("scanrt beside cudarc: {}", ctx.describe());
    let _ = cudarc::driver::CudaContext::device_count();
}
