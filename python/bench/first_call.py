"""A user's first calls after installing the wheels, in this process (run it in a new one
each time, with an empty SCANRT_CACHE_DIR, to see what a fresh machine sees): the import,
the first cumsum of 2^20 float32 on one array library's GPU array, then the first sort
and selection (two more kernel families), and a warm cumsum; each result checked against
the library's own. With a kernel pack installed (scanrt-kernels-sm<N>) no kernel
compiles: the target for the first built-in scan is 5 ms (docs/PERFORMANCE.md).

    python3 python/bench/first_call.py torch|cupy|jax
"""

import sys
import time


def main(lib: str) -> None:
    started = time.perf_counter()
    import numpy as np

    import scanrt

    imported = time.perf_counter() - started
    if lib == "torch":
        import torch

        x = torch.arange(1 << 20, device="cuda", dtype=torch.float32) % 7
        sync, host, own = torch.cuda.synchronize, (lambda v: v.cpu().numpy()), (lambda v: torch.cumsum(v, 0))
    elif lib == "cupy":
        import cupy

        x = cupy.arange(1 << 20, dtype=cupy.float32) % 7
        sync, host, own = cupy.cuda.runtime.deviceSynchronize, cupy.asnumpy, cupy.cumsum
    elif lib == "jax":
        import jax
        import jax.numpy as jnp

        x = jnp.arange(1 << 20, dtype=jnp.float32) % 7
        sync, host, own = (lambda: None), np.asarray, jnp.cumsum
    else:
        raise SystemExit(__doc__)
    sync()

    def timed(call):
        t = time.perf_counter()
        result = call()
        if lib == "jax":
            import jax

            jax.block_until_ready(result)
        sync()
        return result, time.perf_counter() - t

    y, first = timed(lambda: scanrt.cumsum(x))
    (keys, (kept, count)), families = timed(lambda: (scanrt.sort(x), scanrt.select(x, where=(">", 3.0), size=1 << 20)))
    _, warm = timed(lambda: [scanrt.cumsum(x) for _ in range(10)][-1])
    xs = host(x)
    correct = (np.array_equal(host(y), host(own(x))) and np.array_equal(host(keys), np.sort(xs))
               and np.array_equal(host(kept)[:int(host(count)[0])], xs[xs > 3.0]))
    print(f"{lib}: import {imported * 1e3:.1f} ms, first cumsum {first * 1e3:.2f} ms, first sort + select "
          f"{families * 1e3:.2f} ms, warm cumsum {warm / 10 * 1e6:.1f} us, correct {correct}")
    if not correct:
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
