"""JAX inside jit, vmap and grad: scanrt's scans as XLA custom calls (scanrt/_jax.py,
src/xla_ffi), on JAX's default backend (the GPU on a GPU machine, else the CPU, where the
host backend scans), against NumPy's and JAX's own scans. Skipped without JAX."""

import numpy as np
import pytest

import scanrt
from sweeps import host_affine_operator

jax = pytest.importorskip("jax")


def test_jax_scans_inside_jit_vmap_and_grad():
    import jax.numpy as jnp

    seed = 0x3A7
    print("seed", seed)
    x = jax.random.normal(jax.random.PRNGKey(seed), (6, 3001), dtype=jnp.float32)
    eager = np.cumsum(np.asarray(x), axis=-1)
    f = jax.jit(lambda v: scanrt.cumsum(v))
    # A custom call in the compiled program: no callback, no host synchronisation.
    assert "scanrt_scan" in f.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), eager, rtol=1e-4, atol=1e-4)
    for axis in (0, 1, -2):
        got = jax.jit(lambda v: scanrt.cumsum(v, axis=axis, reverse=True, exclusive=True))(x)
        want = np.flip(np.cumsum(np.flip(np.asarray(x), axis), axis), axis) - np.asarray(x)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    # vmap: the batch axis is more rows.
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda r: scanrt.cumsum(r))(x)), eager, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(lambda r: scanrt.cumprod(r[:20])))(x)),
                               np.cumprod(np.asarray(x)[:, :20], axis=-1), rtol=1e-4)
    # Gradients against JAX's own scans.
    loss = lambda cum: lambda v: (cum(v) ** 2).sum()  # noqa: E731
    want = np.asarray(jax.grad(loss(lambda v: jnp.cumsum(v, axis=-1)))(x))
    # Sums of up to 3001 terms in float32, rounded in other orders: within 1e-5 of the largest.
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(loss(scanrt.cumsum)))(x)), want, rtol=1e-4,
                               atol=1e-5 * np.abs(want).max())
    values, indices = jax.jit(lambda v: tuple(scanrt.cummax(v)))(x)
    np.testing.assert_array_equal(np.asarray(values), np.maximum.accumulate(np.asarray(x), axis=-1))
    want_idx = np.asarray(jax.lax.cummax(jnp.broadcast_to(jnp.arange(x.shape[1]), x.shape) *
                                         (np.asarray(x) == np.maximum.accumulate(np.asarray(x), axis=-1)), axis=1))
    np.testing.assert_array_equal(np.asarray(indices), want_idx)
    g_max = jax.grad(lambda v: (scanrt.cummax(v).values * jnp.arange(x.shape[1])).sum())(x)
    g_ref = jax.grad(lambda v: (jax.lax.cummax(v, axis=1) * jnp.arange(x.shape[1])).sum())(x)
    np.testing.assert_allclose(np.asarray(g_max), np.asarray(g_ref), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda v: scanrt.logcumsumexp(v))(x)),
                               np.asarray(jax.lax.cumlogsumexp(x, axis=1)), rtol=1e-4, atol=1e-4)


def test_jax_linear_recurrence_under_jit_and_grad():
    import jax.numpy as jnp

    seed = 0x51E
    print("seed", seed)
    ka, kb = jax.random.split(jax.random.PRNGKey(seed))
    a = jax.random.uniform(ka, (4, 777), minval=0.5, maxval=1.0)
    b = jax.random.normal(kb, (4, 777))

    def reference(a, b, reverse=False, h0=0.0):
        def combine(l, r):
            return l[0] * r[0], r[0] * l[1] + r[1]
        b0 = b.at[:, -1 if reverse else 0].add(a[:, -1 if reverse else 0] * h0)
        return jax.lax.associative_scan(combine, (a, b0), axis=1, reverse=reverse)[1]

    for reverse in (False, True):
        for h0 in (0.0, 0.75):
            got = jax.jit(lambda a, b: scanrt.linear_recurrence(a, b, reverse=reverse, initial=h0))(a, b)
            np.testing.assert_allclose(np.asarray(got), np.asarray(reference(a, b, reverse, h0)), rtol=1e-4,
                                       atol=1e-5)
            weights = jnp.linspace(-1, 1, a.shape[1])
            mine = jax.jit(jax.grad(lambda a, b: (scanrt.linear_recurrence(a, b, reverse=reverse, initial=h0)
                                                  * weights).sum(), argnums=(0, 1)))(a, b)
            theirs = jax.grad(lambda a, b: (reference(a, b, reverse, h0) * weights).sum(), argnums=(0, 1))(a, b)
            for m, t in zip(mine, theirs):
                np.testing.assert_allclose(np.asarray(m), np.asarray(t), rtol=1e-3, atol=1e-4)
    batched = jax.vmap(lambda a, b: scanrt.linear_recurrence(a, b))(a, b)
    np.testing.assert_allclose(np.asarray(batched), np.asarray(reference(a, b)), rtol=1e-4, atol=1e-5)


def test_jax_sorts_under_jit_vmap_and_grad():
    import jax.numpy as jnp

    seed = 0x50F7
    print("seed", seed)
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    # Ties (the sort is stable), and no -0.0, which scanrt orders before +0.0 as NumPy does not.
    keys = jnp.round(jax.random.normal(k1, (5000,)) * 8) / 8 + 0.0
    values = jax.random.normal(k2, (5000,))
    for descending in (False, True):
        order = np.argsort(-np.asarray(keys) if descending else np.asarray(keys), kind="stable")
        got = jax.jit(lambda k: scanrt.sort(k, descending=descending, return_indices=True))(keys)
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(keys)[order])
        np.testing.assert_array_equal(np.asarray(got[1]), order)
        got_k, got_v = jax.jit(lambda k, v: scanrt.sort(k, values=v, descending=descending))(keys, values)
        np.testing.assert_array_equal(np.asarray(got_v), np.asarray(values)[order])
    ints = jax.random.randint(k1, (3, 777), -50, 50)
    np.testing.assert_array_equal(np.asarray(jax.vmap(lambda r: scanrt.argsort(r))(ints)),
                                  np.argsort(np.asarray(ints), axis=-1, kind="stable"))
    # Gradients through the permutation, as JAX's own sort gives them.
    w = jnp.linspace(-1, 1, keys.shape[0])
    mine = jax.grad(lambda k, v: (scanrt.sort(k, values=v)[1] * w).sum() + (scanrt.sort(k) * w).sum(),
                    argnums=(0, 1))(keys, values)
    theirs = jax.grad(lambda k, v: (v[jnp.argsort(k, stable=True)] * w).sum() + (jnp.sort(k) * w).sum(),
                      argnums=(0, 1))(keys, values)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(np.asarray(m), np.asarray(t), rtol=1e-6)


def test_jax_selections_and_partitions_under_jit():
    import jax.numpy as jnp

    seed = 0x5E1
    print("seed", seed)
    x = jax.random.normal(jax.random.PRNGKey(seed), (4099,))
    xs = np.asarray(x)
    mask = x > 0.3
    size = 3000
    for name, call, want in [
        ("mask", lambda v: scanrt.select(v, v > 0.3, size=size), xs[xs > 0.3]),
        ("where", lambda v: scanrt.select(v, where=("<", -0.5), size=size), xs[xs < -0.5]),
        ("indices", lambda v: scanrt.select(v, where=(">=", 1.0), indices=True, size=size), np.flatnonzero(xs >= 1.0)),
        ("nonzero", lambda v: scanrt.nonzero(jnp.round(v), size=size), np.flatnonzero(np.round(xs))),
    ]:
        out, count = jax.jit(call)(x)
        k = int(count[0])
        assert k == want.size, name
        np.testing.assert_array_equal(np.asarray(out)[:k], want, err_msg=name)
        assert not np.asarray(out)[k:].any(), name
    runs = jnp.round(x * 2) // 3
    rs = np.asarray(runs)
    heads = np.r_[True, rs[1:] != rs[:-1]]
    want_len = np.diff(np.r_[np.flatnonzero(heads), rs.size])
    for size in (10, rs.size):
        values, lengths, count = jax.jit(lambda v: scanrt.unique_consecutive(v, return_counts=True, size=size))(runs)
        assert int(count[0]) == heads.sum(), size
        k = min(size, int(heads.sum()))
        np.testing.assert_array_equal(np.asarray(values)[:k], rs[heads][:k])
        np.testing.assert_array_equal(np.asarray(lengths)[:k], want_len[:k])
        assert not np.asarray(lengths)[k:].any() and not np.asarray(values)[k:].any()
        only, count = jax.jit(lambda v: scanrt.unique_consecutive(v, size=size))(runs)
        assert int(count[0]) == heads.sum(), size
        np.testing.assert_array_equal(np.asarray(only)[:k], rs[heads][:k])
    out, count = jax.jit(lambda v, m: scanrt.partition(v, m))(x, mask)
    k = int(count[0])
    np.testing.assert_array_equal(np.asarray(out)[:k], xs[xs > 0.3])
    np.testing.assert_array_equal(np.asarray(out)[k:][::-1], xs[~(xs > 0.3)])
    sel, rej, count = jax.jit(lambda v: scanrt.partition(v, where=(">", 0.0), split=True))(x)
    k = int(count[0])
    np.testing.assert_array_equal(np.asarray(sel)[:k], xs[xs > 0])
    np.testing.assert_array_equal(np.asarray(rej)[:xs.size - k], xs[~(xs > 0)])
    # Kept values pass gradients back through their positions.
    g = jax.grad(lambda v: scanrt.select(v, where=(">", 0.0), size=size)[0].sum())(x)
    np.testing.assert_array_equal(np.asarray(g), (xs > 0).astype(np.float32))


def test_jax_segmented_scans_under_jit_and_grad():
    import jax.numpy as jnp

    seed = 0x5E6
    print("seed", seed)
    rng = np.random.default_rng(seed)
    n = 5000
    x = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)
    flags = rng.random(n) < 0.01
    flags[0] = True
    offsets = np.concatenate([[0], np.flatnonzero(flags[1:]) + 1, [n]]).astype(np.int32)
    keys = np.cumsum(flags).astype(np.int32)
    starts = np.flatnonzero(flags)
    xs = np.asarray(x, dtype=np.float64)
    want = np.concatenate([np.cumsum(xs[a:b]) for a, b in zip(starts, list(starts[1:]) + [n])])
    for name, call in [("flags", lambda v: scanrt.cumsum(v, segments=jnp.asarray(flags))),
                       ("offsets", lambda v: scanrt.cumsum(v, offsets=jnp.asarray(offsets))),
                       ("keys", lambda v: scanrt.cumsum(v, keys=jnp.asarray(keys)))]:
        np.testing.assert_allclose(np.asarray(jax.jit(call)(x)), want, rtol=1e-4, atol=1e-4, err_msg=name)
    # The gradient of a segmented sum is the reverse segmented sum of g.
    w = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)
    g = jax.jit(jax.grad(lambda v: (scanrt.cumsum(v, offsets=jnp.asarray(offsets)) * w).sum()))(x)
    ws = np.asarray(w, dtype=np.float64)
    want_g = np.concatenate([np.cumsum(ws[a:b][::-1])[::-1] for a, b in zip(starts, list(starts[1:]) + [n])])
    np.testing.assert_allclose(np.asarray(g), want_g, rtol=1e-4, atol=1e-4)
    values, indices = jax.jit(lambda v: tuple(scanrt.cummax(v, segments=jnp.asarray(flags))))(x)
    want_max = np.concatenate([np.maximum.accumulate(xs[a:b]) for a, b in zip(starts, list(starts[1:]) + [n])])
    np.testing.assert_array_equal(np.asarray(values), want_max.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(x)[np.asarray(indices)], np.asarray(values))


def test_jax_summed_area_tables_under_jit_vmap_and_grad():
    import jax.numpy as jnp

    x = jax.random.normal(jax.random.PRNGKey(0x5A7), (3, 40, 70))
    want = np.cumsum(np.cumsum(np.asarray(x, dtype=np.float64), -1), -2)
    np.testing.assert_allclose(np.asarray(jax.jit(scanrt.summed_area_table)(x)), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(jax.vmap(scanrt.summed_area_table)(x)), want, rtol=1e-4, atol=1e-4)
    w = jnp.arange(40 * 70, dtype=jnp.float32).reshape(40, 70) / 1000
    g = jax.grad(lambda v: (scanrt.summed_area_table(v) * w).sum())(x)
    want_g = np.flip(np.cumsum(np.cumsum(np.flip(np.asarray(w, dtype=np.float64)), -1), -2))
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(want_g, x.shape), rtol=1e-4, atol=1e-3)


def test_jax_linear_recurrence_by_segments_under_jit_and_grad():
    import jax.numpy as jnp

    seed = 0x5E9
    print("seed", seed)
    rng = np.random.default_rng(seed)
    n = 500  # about 15 segments: the reference runs one associative_scan each
    a = jnp.asarray(rng.uniform(0.5, 1.0, n), dtype=jnp.float32)
    b = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)
    flags = rng.random(n) < 0.03
    flags[0] = True
    keys = jnp.asarray(np.cumsum(flags), dtype=jnp.int32)
    starts = list(np.flatnonzero(flags)) + [n]
    w = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)

    def reference(a, b, reverse, h0):
        def one(a, b):
            def combine(l, r):
                return l[0] * r[0], r[0] * l[1] + r[1]
            b0 = b.at[-1 if reverse else 0].add(a[-1 if reverse else 0] * h0)
            return jax.lax.associative_scan(combine, (a, b0), reverse=reverse)[1]
        return jnp.concatenate([one(a[s:e], b[s:e]) for s, e in zip(starts[:-1], starts[1:])])

    for reverse in (False, True):
        for by in ("segments", "keys", "offsets"):
            seg = {"segments": {"segments": jnp.asarray(flags)}, "keys": {"keys": keys},
                   "offsets": {"offsets": jnp.asarray(np.array(starts, dtype=np.int32))}}[by]
            f = lambda a, b: scanrt.linear_recurrence(a, b, reverse=reverse, initial=0.5, **seg)  # noqa: E731
            np.testing.assert_allclose(np.asarray(jax.jit(f)(a, b)), np.asarray(reference(a, b, reverse, 0.5)),
                                       rtol=1e-4, atol=1e-5)
            mine = jax.grad(lambda a, b: (f(a, b) * w).sum(), argnums=(0, 1))(a, b)
            theirs = jax.grad(lambda a, b: (reference(a, b, reverse, 0.5) * w).sum(), argnums=(0, 1))(a, b)
            for m, t in zip(mine, theirs):
                np.testing.assert_allclose(np.asarray(m), np.asarray(t), rtol=1e-3, atol=1e-4)


def test_jax_empty_arrays():
    import jax.numpy as jnp

    e = jnp.zeros((0,), jnp.float32)
    assert jax.jit(scanrt.cumsum)(e).shape == (0,)
    assert jax.jit(lambda v: scanrt.cumsum(v, axis=0))(jnp.zeros((0, 3))).shape == (0, 3)
    assert scanrt.sort(e).shape == (0,) and scanrt.linear_recurrence(e, e).shape == (0,)
    out, count = scanrt.select(e, where=(">", 0), size=3)
    assert np.asarray(out).tolist() == [0, 0, 0] and int(count[0]) == 0
    kept, count = scanrt.partition(e, e > 0)
    assert kept.shape == (0,) and int(count[0]) == 0
    assert scanrt.cummax(jnp.zeros((2, 0))).values.shape == (2, 0)


def test_jax_on_gpu_runs_on_xlas_stream_without_host_synchronisation():
    """On a GPU: a jitted function whose scanrt calls wait on long device work returns to
    the caller while that work still runs (the handlers enqueue on XLA's stream; none
    waits for it or reads a result back), and its results match the eager calls."""
    import time

    import jax.numpy as jnp

    if jax.default_backend() != "gpu":
        pytest.skip("no JAX GPU backend")
    m = jax.random.normal(jax.random.PRNGKey(0x5F0), (4096, 4096)) / 64
    # Eighths: every partial sum is exact in float32, so the sums compare exactly.
    x = jnp.round(jax.random.normal(jax.random.PRNGKey(0x5F1), (3, 1 << 20)) * 8) / 8

    @jax.jit
    def f(m, x):
        m = jax.lax.fori_loop(0, 400, lambda _, m: jnp.tanh(m @ m), m)
        x = x + m[0, 0] * 0  # the scans depend on the slow work
        return (scanrt.cumsum(x), scanrt.sort(x[0]), scanrt.select(x[0], where=(">", 0.5), size=x.shape[1]),
                scanrt.linear_recurrence(jnp.full_like(x, 0.5), x), m)

    jax.block_until_ready(f(m, x))  # compiled and warm
    started = time.perf_counter()
    out = f(m, x)
    dispatched = time.perf_counter() - started
    jax.block_until_ready(out)
    total = time.perf_counter() - started
    print(f"dispatch {dispatched * 1e3:.2f} ms, result {total * 1e3:.2f} ms")
    assert total > 0.02, "the slow work was too fast to tell"
    assert dispatched < total / 4, f"the jitted call waited for the device: {dispatched:.4f} s of {total:.4f} s"
    sums, keys, (kept, count), rec, _ = out
    np.testing.assert_array_equal(np.asarray(sums), np.cumsum(np.asarray(x, dtype=np.float64), axis=-1))
    np.testing.assert_array_equal(np.asarray(keys), np.sort(np.asarray(x[0])))
    k = int(count[0])
    np.testing.assert_array_equal(np.asarray(kept)[:k], np.asarray(x[0])[np.asarray(x[0]) > 0.5])
    want = jax.lax.associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]), (jnp.full_like(x, 0.5), x),
                                    axis=1)[1]
    np.testing.assert_allclose(np.asarray(rec), np.asarray(want), rtol=1e-4, atol=1e-4)


def test_jax_cumprod_and_logcumsumexp_gradients():
    """The gradients of cumprod (zeros among the factors) and logcumsumexp (large values)
    in both directions, inclusive and exclusive, with an initial value and by segments (as
    flags, offsets and keys), under jit, against JAX's own scans differentiated."""
    import jax.numpy as jnp

    seed = 0x5EA
    print("seed", seed)
    rng = np.random.default_rng(seed)
    n = 300
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    x[rng.choice(n, 6, replace=False)] = 0.0
    big = (rng.standard_normal(n) * 30).astype(np.float32)
    w = jnp.asarray(rng.standard_normal(n), dtype=jnp.float32)
    flags = rng.random(n) < 0.05
    flags[0] = True
    starts = list(np.flatnonzero(flags)) + [n]
    offsets = jnp.asarray(np.array(starts, dtype=np.int32))
    keys = jnp.asarray(np.cumsum(flags), dtype=jnp.int32)

    def cumprod_ref(v, reverse, exclusive, c):
        v = v[::-1] if reverse else v
        y = c * jnp.cumprod(jnp.concatenate([jnp.ones(1, v.dtype), v[:-1]]) if exclusive else v)
        return y[::-1] if reverse else y

    def lse_ref(v, reverse, exclusive, c):
        v = v[::-1] if reverse else v
        head = jnp.full(1, -jnp.inf if c is None else c, v.dtype)
        y = jax.lax.cumlogsumexp(jnp.concatenate([head, v[:-1]]) if exclusive else v)
        if c is not None and not exclusive:
            y = jnp.logaddexp(y, c)
        return y[::-1] if reverse else y

    def by_segments(ref):
        return lambda v, *a: jnp.concatenate([ref(v[s:e], *a) for s, e in zip(starts[:-1], starts[1:])])

    for name, mine, ref, data in [("cumprod", scanrt.cumprod, cumprod_ref, x),
                                  ("logcumsumexp", scanrt.logcumsumexp, lse_ref, big)]:
        v = jnp.asarray(data)
        for reverse in (False, True):
            for exclusive in (False, True):
                for c in (None, 0.75):
                    for seg in (None, "segments", "offsets", "keys"):
                        kw = {} if seg is None else {seg: {"segments": jnp.asarray(flags), "offsets": offsets,
                                                           "keys": keys}[seg]}
                        f = jax.jit(lambda v: mine(v, reverse=reverse, exclusive=exclusive, initial=c, **kw))
                        r = by_segments(ref) if seg else ref
                        c_ref = 1.0 if (name == "cumprod" and c is None) else c
                        label = f"{name} reverse={reverse} exclusive={exclusive} initial={c} {seg}"
                        want = r(v, reverse, exclusive, c_ref)
                        got = f(v)
                        finite = np.isfinite(np.asarray(want))
                        np.testing.assert_allclose(np.asarray(got)[finite], np.asarray(want)[finite], rtol=2e-4,
                                                   atol=1e-4, err_msg=label)
                        g = jax.jit(jax.grad(lambda v: jnp.where(finite, f(v) * w, 0).sum()))(v)
                        g_ref = jax.grad(lambda v: jnp.where(finite, r(v, reverse, exclusive, c_ref) * w, 0).sum())(v)
                        np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=2e-3, atol=2e-4,
                                                   err_msg=label)


def test_jax_user_operators_under_jit_and_vmap():
    """A user-defined operator (the affine recurrence, with host functions for the CPU
    platform) on JAX arrays inside jit: 1-D, reversed, from an initial state, exclusive,
    by segments (flags, offsets, keys), along an axis and under vmap, against a loop; a
    host function's exception is the call's error."""
    import struct

    import jax.numpy as jnp

    seed = 0x5EB
    print("seed", seed)
    rng = np.random.default_rng(seed)
    op = host_affine_operator()
    n = 700
    a = rng.uniform(-1, 1, (3, n)).astype(np.float32)
    b = rng.standard_normal((3, n)).astype(np.float32)
    flags = rng.random(n) < 0.05
    flags[0] = True
    starts = list(np.flatnonzero(flags)) + [n]

    def loop(a, b, reverse=False, h0=0.0, exclusive=False, heads=(0,)):
        h, out = h0, np.zeros(a.shape[0])
        order = range(a.shape[0] - 1, -1, -1) if reverse else range(a.shape[0])
        for t in order:
            first = (t + 1 in heads or t == a.shape[0] - 1) if reverse else t in heads
            h = h0 if first else h
            if exclusive:
                out[t] = h
            h = float(a[t]) * h + float(b[t])
            if not exclusive:
                out[t] = h
        return out

    ja, jb = jnp.asarray(a), jnp.asarray(b)
    for reverse in (False, True):
        got = jax.jit(lambda x, y: op(x, y, reverse=reverse))(ja[0], jb[0])
        np.testing.assert_allclose(np.asarray(got), loop(a[0], b[0], reverse), rtol=1e-4, atol=1e-4)
        init = struct.pack("ff", 1.0, 0.5)
        got = jax.jit(lambda x, y: op(x, y, reverse=reverse, initial=init, exclusive=True))(ja[0], jb[0])
        np.testing.assert_allclose(np.asarray(got), loop(a[0], b[0], reverse, 0.5, True), rtol=1e-4, atol=1e-4)
        for by, data in (("segments", jnp.asarray(flags)), ("offsets", jnp.asarray(np.array(starts, np.int32))),
                         ("keys", jnp.asarray(np.cumsum(flags), jnp.int32))):
            got = jax.jit(lambda x, y, d: op(x, y, reverse=reverse, **{by: d}))(ja[0], jb[0], data)
            np.testing.assert_allclose(np.asarray(got), loop(a[0], b[0], reverse, heads=set(starts[:-1])),
                                       rtol=1e-4, atol=1e-4, err_msg=by)
        cols = jax.jit(lambda x, y: op(x, y, axis=0, reverse=reverse))(ja.T, jb.T)
        rows = jax.vmap(lambda x, y: op(x, y, reverse=reverse))(ja, jb)
        for r in range(3):
            want = loop(a[r], b[r], reverse)
            np.testing.assert_allclose(np.asarray(cols)[:, r], want, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(np.asarray(rows)[r], want, rtol=1e-4, atol=1e-4)
    if jax.default_backend() == "cpu":
        def broken(first, then):
            raise ZeroDivisionError("from host_combine")

        with pytest.raises(Exception, match="from host_combine"):
            jax.block_until_ready(jax.jit(host_affine_operator(host_combine=broken))(ja[0], jb[0]))
