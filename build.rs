//! Generates include/scanrt.h from src/ffi.rs with cbindgen. The header is committed;
//! CI rebuilds and fails when `git diff include/scanrt.h` is not empty.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=src/ffi.rs");
    println!("cargo:rerun-if-changed=src/error.rs");
    println!("cargo:rerun-if-changed=src/types.rs");
    println!("cargo:rerun-if-changed=src/context.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    for dir in [
        "kernels/util",
        "kernels/thread",
        "kernels/warp",
        "kernels/block",
        "kernels/device",
    ] {
        println!("cargo:rerun-if-changed={dir}");
    }
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let config = cbindgen::Config::from_file(Path::new(&crate_dir).join("cbindgen.toml")).expect("cbindgen.toml");
    let header = match cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
    {
        Ok(h) => h,
        Err(e) => {
            // A syntax error in the crate surfaces from rustc with a better message.
            println!("cargo:warning=cbindgen could not generate the header: {e}");
            return;
        }
    };
    let path = Path::new(&crate_dir).join("include/scanrt.h");
    let mut bytes = Vec::new();
    header.write(&mut bytes);
    if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
    }
}
