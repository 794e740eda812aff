"""scanrt from Python beside PyTorch, CuPy and JAX on the same GPU, in one process: the
issue's table (cumsum at 2^28 and 2^16, rows of [2^20, 32], cummax and logcumsumexp at
2^26, the linear recurrence at 2^26 and its forward plus backward) and memcpy of the same
bytes (f16 and bf16 cumsums at 2^28 too). Times are medians of CUDA-event pairs around
single calls, which include each library's host work before its first kernel; the large
cumsum and logcumsumexp are also timed back to back (calls queued while the device runs,
as a program that calls them in a loop sees them), and the 2^16 per-call time only so.
Prints one line per case: peer time, scanrt time, peer/scanrt, and scanrt's fraction of
memcpy where it applies.

    python3 python/bench/bench_peers.py [--shapes | --recurrence]
"""

import statistics

import sys

import torch

import scanrt


def timed(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def per_call(fn, calls=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(calls):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1000.0 / calls


def memcpy_us(nbytes):
    """A device copy moving `nbytes` (half read, half written)."""
    src = torch.empty(nbytes // 2 // 256 * 256, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return timed(lambda: dst.copy_(src))


def line(case, peer_name, peer_us, ours_us, moved=None):
    extra = f"  of memcpy {memcpy_us(moved) / ours_us:.3f}" if moved else ""
    print(f"{case:42} {peer_name:28} {peer_us:10.1f} us  scanrt {ours_us:10.1f} us  {peer_us / ours_us:7.2f}x{extra}",
          flush=True)


def shapes():
    """Columns (dim 0) and summed-area tables: torch's cumsum along dim 0 against scanrt's
    strided scan, each beside memcpy of the bytes a scan moves."""
    for rows, cols in ((1 << 20, 2), (1 << 16, 64), (8192, 8192)):
        c = torch.randn(rows, cols, device="cuda")
        line(f"cumsum dim 0 of [{rows}, {cols}] f32", "torch.cumsum", timed(lambda: torch.cumsum(c, 0), reps=5),
             timed(lambda: scanrt.cumsum(c, axis=0)), 8 * c.numel())
    line("summed-area table 8192^2 f32", "cumsum(-1).cumsum(-2)", timed(lambda: c.cumsum(-1).cumsum(-2), reps=5),
         timed(lambda: scanrt.summed_area_table(c)), 8 * c.numel())
    del c


def recurrence():
    """The linear recurrence at 2^26 beside JAX, and its forward plus backward."""
    a = torch.rand(1 << 26, device="cuda") * 0.9
    b = torch.randn(1 << 26, device="cuda")
    ours = timed(lambda: scanrt.linear_recurrence(a, b))
    try:
        import jax
        import jax.numpy as jnp

        ja, jb = jnp.asarray(a.cpu().numpy()), jnp.asarray(b.cpu().numpy())

        def combine(l, r):
            return (l[0] * r[0], r[0] * l[1] + r[1])

        f = jax.jit(lambda a, b: jax.lax.associative_scan(combine, (a, b))[1])
        f(ja, jb).block_until_ready()
        import time

        t = []
        for _ in range(10):
            t0 = time.perf_counter()
            f(ja, jb).block_until_ready()
            t.append((time.perf_counter() - t0) * 1e6)
        line("linear recurrence f32 2^26", "jax associative_scan (wall)", statistics.median(t), ours, 12 * a.numel())
    except ImportError:
        pass
    a.requires_grad_()
    b.requires_grad_()
    g = torch.randn_like(b)

    def forward_backward():
        # The gradients themselves, as for activations (no accumulation into .grad).
        h = scanrt.linear_recurrence(a, b)
        torch.autograd.grad(h, (a, b), g)

    # Forward: a, b read, h written; backward: the adjoint (g, a read, lambda written: the
    # gradient of b), then the gradient of a (lambda and h read, lambda * h_prev written).
    moved = 4 * a.numel() * (3 + 3 + 3)
    copy = memcpy_us(moved)
    # One call between events (the host's dispatch before the first kernel included), and
    # back to back as a training loop runs it (the host's work overlaps the device's).
    for how, fb in (("one call", timed(forward_backward, reps=10)), ("back to back", per_call(forward_backward, 20))):
        print(f"{'linear recurrence f32 2^26, forward+backward':42} {how:28} {'':10}     scanrt {fb:10.1f} us  "
              f"of memcpy {copy / fb:.3f}", flush=True)



def main():
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "scanrt", scanrt.__version__)
    if "--shapes" in sys.argv:
        return shapes()
    if "--recurrence" in sys.argv:
        return recurrence()
    shapes()
    n = 1 << 28
    x = torch.randn(n, device="cuda")
    line("cumsum f32 2^28", "torch.cumsum", timed(lambda: torch.cumsum(x, 0)), timed(lambda: scanrt.cumsum(x)), 8 * n)
    line("cumsum f32 2^28, back to back", "torch.cumsum", per_call(lambda: torch.cumsum(x, 0), 20),
         per_call(lambda: scanrt.cumsum(x), 20), 8 * n)
    try:
        import cupy

        cx = cupy.asarray(x)
        line("cumsum f32 2^28", "cupy.cumsum", timed(lambda: cupy.cumsum(cx)), timed(lambda: scanrt.cumsum(cx)), 8 * n)
        del cx
    except ImportError:
        pass
    del x
    for dtype in (torch.float16, torch.bfloat16):
        h = torch.randn(n, device="cuda").to(dtype)
        name = str(dtype).replace("torch.", "")
        line(f"cumsum {name} 2^28", "torch.cumsum", timed(lambda: torch.cumsum(h, 0)),
             timed(lambda: scanrt.cumsum(h)), 4 * n)
        del h
    s = torch.randn(1 << 16, device="cuda")
    line("cumsum f32 2^16, back to back, per call", "torch.cumsum", per_call(lambda: torch.cumsum(s, 0)),
         per_call(lambda: scanrt.cumsum(s)))
    r = torch.randn(1 << 20, 32, device="cuda")
    line("cumsum dim 1 of [2^20, 32] f32", "torch.cumsum", timed(lambda: torch.cumsum(r, 1)),
         timed(lambda: scanrt.cumsum(r, axis=1)), 8 * r.numel())
    del r
    m = torch.randn(1 << 26, device="cuda")
    line("cummax f32 2^26 (values, indices)", "torch.cummax", timed(lambda: torch.cummax(m, 0), reps=3, warm=1),
         timed(lambda: scanrt.cummax(m)))
    line("logcumsumexp f32 2^26", "torch.logcumsumexp", timed(lambda: torch.logcumsumexp(m, 0)),
         timed(lambda: scanrt.logcumsumexp(m)), 8 * m.numel())
    line("logcumsumexp f32 2^26, back to back", "torch.logcumsumexp", per_call(lambda: torch.logcumsumexp(m, 0), 20),
         per_call(lambda: scanrt.logcumsumexp(m), 20), 8 * m.numel())
    recurrence()


if __name__ == "__main__":
    main()
