//! Kernel packs and the kernel cache, ahead of the first call.
//!
//! ```text
//! scanrt-pack build [--arch 80 --arch 90 ...] [--out DIR]
//!     builds scanrt-kernels-sm_<arch>.pack for each architecture (default: 80, 90, 100)
//!     into DIR (default: share/scanrt/kernels), with NVRTC on every core; install the
//!     packs under PREFIX/share/scanrt/kernels
//! scanrt-pack fill-cache [--device N]
//!     compiles every kernel set for the local GPU into the kernel cache, on every core
//! scanrt-pack check FILE...
//!     checks packs: their index and every image's checksum
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn usage() -> ExitCode {
    eprintln!("usage: scanrt-pack build [--arch A]... [--out DIR] | fill-cache [--device N] | check FILE...");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        return usage();
    };
    let option = |name: &str| -> Vec<&String> { rest.windows(2).filter(|w| w[0] == name).map(|w| &w[1]).collect() };
    let started = Instant::now();
    let result = match command.as_str() {
        "build" => {
            let archs: Vec<i32> = match option("--arch").iter().map(|a| a.parse()).collect() {
                Ok(a) if !option("--arch").is_empty() => a,
                Ok(_) => vec![80, 90, 100],
                Err(_) => return usage(),
            };
            let out = option("--out")
                .first()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("share/scanrt/kernels"));
            archs.into_iter().try_for_each(|arch| {
                let t = Instant::now();
                let (path, sets) = scanrt::build_kernel_pack(arch, &out)?;
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                println!(
                    "{}: {sets} kernel sets, {:.1} MB, built in {:.1} s",
                    path.display(),
                    bytes as f64 / 1e6,
                    t.elapsed().as_secs_f64()
                );
                Ok(())
            })
        }
        "fill-cache" => {
            let device = match option("--device").first().map(|d| d.parse()) {
                None => 0,
                Some(Ok(d)) => d,
                Some(Err(_)) => return usage(),
            };
            scanrt::fill_kernel_cache(device).map(|sets| {
                let dir = scanrt::kernel_cache_status().map_or_else(|e| e, |d| d.display().to_string());
                println!(
                    "{sets} kernel sets in the kernel cache ({dir}) in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            })
        }
        "check" if !rest.is_empty() => rest.iter().try_for_each(|file| {
            scanrt::check_kernel_pack(file.as_ref()).map(|sets| println!("{file}: {sets} kernel sets, intact"))
        }),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scanrt-pack: {e}");
            ExitCode::FAILURE
        }
    }
}
