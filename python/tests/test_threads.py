"""Several Python threads scanning at once (the GIL is released around every scan): each
thread's results against NumPy, on the host backend, and on the GPU where present (each
thread on a stream of its own, and on the shared current stream)."""

import threading

import numpy as np
import pytest

import scanrt
from sweeps import SEED, cuda, torch


def run_threads(work, count=8):
    failures = []

    def guarded(seed):
        try:
            work(seed)
        except Exception as e:  # reported by the test, not lost in the thread
            failures.append((seed, repr(e)))

    threads = [threading.Thread(target=guarded, args=(SEED + s,)) for s in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_numpy_scans_from_several_threads():
    def work(seed):
        r = np.random.default_rng(seed)
        for _ in range(60):
            x = r.standard_normal(int(r.integers(1, 5000)))
            np.testing.assert_allclose(scanrt.cumsum(x), np.cumsum(x), rtol=1e-9, atol=1e-9)
            np.testing.assert_array_equal(scanrt.cummax(x)[0], np.maximum.accumulate(x))
            keys = np.sort(r.integers(0, 50, len(x)))
            np.testing.assert_array_equal(scanrt.sort(keys), keys)

    run_threads(work)


@cuda
@pytest.mark.parametrize("own_stream", [False, True])
def test_torch_scans_from_several_threads(own_stream):
    def work(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        stream = torch.cuda.Stream() if own_stream else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            for _ in range(40):
                x = torch.randn(int(torch.randint(1, 1 << 18, (1,), generator=g, device="cuda")), device="cuda",
                                dtype=torch.float64, generator=g)
                torch.testing.assert_close(scanrt.cumsum(x), torch.cumsum(x, 0))
                assert torch.equal(scanrt.cummax(x)[0], torch.cummax(x, 0).values)
        stream.synchronize()

    run_threads(work)
