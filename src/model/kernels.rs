//! The scorer's arithmetic, with one fixed order of operations per output value.
//!
//! A score must have the same bits whatever else is in the batch, wherever a prefix tree
//! branches, however many threads run, and whichever vector unit the CPU has. So every value is
//! computed by the same sequence of IEEE operations on every path:
//!
//! * A dot product of length `k` keeps 16 running sums ("lanes"): lane `l` accumulates elements
//!   `l, l + 16, l + 32, …` with fused multiply-adds, in order; a last partial block of 16 is
//!   padded with zeros. The lanes are then added as a fixed tree (`l + 8`, then `l + 4`, `l + 2`,
//!   `l + 1`). AVX-512 holds the 16 lanes in one register, AVX2 in two, the portable path in an
//!   array; all three perform the same roundings, so they agree to the bit.
//! * Matrix products split the *outputs* among threads, never a sum, and tile them without
//!   changing any output's own order.
//! * Attention visits keys in position order; softmax sums in f64 in position order.
//! * Transcendentals (`exp`, `ln`) run in f64 and round once to f32, so the platform's libm
//!   variant (FMA or not) would have to differ by a full f64 ulp at an f32 rounding boundary to
//!   show.
//!
//! `DELTALOGIC_NO_AVX512=1` selects the AVX2 path and `DELTALOGIC_PORTABLE=1` the portable one,
//! for tests and for checking that a machine without them gives the same bits.

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

/// Lanes of the canonical dot product.
const LANES: usize = 16;
/// Output rows (activations) and columns (weight rows) handed to one task.
const TASK_ROWS: usize = 64;
const TASK_COLS: usize = 32;

/// The vector unit the kernels run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Portable,
}

/// The path chosen for this process (from the CPU and the environment switches).
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(detect)
}

fn detect() -> Isa {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
    if set("DELTALOGIC_PORTABLE") {
        return Isa::Portable;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if !set("DELTALOGIC_NO_AVX512") && std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::Avx2;
        }
    }
    Isa::Portable
}

/// 16 f32 lanes and the few operations the canonical dot product needs.
trait Lanes: Copy {
    /// # Safety
    /// The CPU must support the implementation's instructions.
    unsafe fn zero() -> Self;
    /// # Safety
    /// `p` must point to 16 readable f32s; CPU support as for `zero`.
    unsafe fn load(p: *const f32) -> Self;
    /// `self + a * b`, rounded once. # Safety: CPU support as for `zero`.
    unsafe fn fma(self, a: Self, b: Self) -> Self;
    /// The fixed tree sum of the lanes. # Safety: CPU support as for `zero`.
    unsafe fn sum(self) -> f32;
}

#[derive(Clone, Copy)]
struct Portable([f32; LANES]);

impl Lanes for Portable {
    #[inline(always)]
    unsafe fn zero() -> Self {
        Portable([0.0; LANES])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        Portable(std::ptr::read_unaligned(p as *const [f32; LANES]))
    }
    #[inline(always)]
    unsafe fn fma(self, a: Self, b: Self) -> Self {
        Portable(std::array::from_fn(|l| a.0[l].mul_add(b.0[l], self.0[l])))
    }
    #[inline(always)]
    unsafe fn sum(self) -> f32 {
        tree_sum(self.0)
    }
}

/// `l + N/2`, …, `l + 2`, `l + 1` (for 16 lanes: `l + 8`, `l + 4`, `l + 2`, `l + 1`): the
/// order the vector paths reproduce with half-width adds.
pub(crate) fn tree_sum<const N: usize>(mut a: [f32; N]) -> f32 {
    let mut width = N / 2;
    while width > 0 {
        for l in 0..width {
            a[l] += a[l + width];
        }
        width /= 2;
    }
    a[0]
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Lanes;
    use std::arch::x86_64::*;

    /// Sums the 8 lanes of `s` as the tree does (`l + 4`, `l + 2`, `l + 1`).
    #[inline(always)]
    unsafe fn sum8(s: __m256) -> f32 {
        let s4 = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
        let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        let s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
        _mm_cvtss_f32(s1)
    }

    #[derive(Clone, Copy)]
    pub struct Avx512(__m512);

    impl Lanes for Avx512 {
        #[inline(always)]
        unsafe fn zero() -> Self {
            Avx512(_mm512_setzero_ps())
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx512(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn fma(self, a: Self, b: Self) -> Self {
            Avx512(_mm512_fmadd_ps(a.0, b.0, self.0))
        }
        #[inline(always)]
        unsafe fn sum(self) -> f32 {
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(self.0), 1));
            sum8(_mm256_add_ps(_mm512_castps512_ps256(self.0), hi))
        }
    }

    /// Lanes 0..8 and 8..16.
    #[derive(Clone, Copy)]
    pub struct Avx2(__m256, __m256);

    impl Lanes for Avx2 {
        #[inline(always)]
        unsafe fn zero() -> Self {
            Avx2(_mm256_setzero_ps(), _mm256_setzero_ps())
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)))
        }
        #[inline(always)]
        unsafe fn fma(self, a: Self, b: Self) -> Self {
            Avx2(
                _mm256_fmadd_ps(a.0, b.0, self.0),
                _mm256_fmadd_ps(a.1, b.1, self.1),
            )
        }
        #[inline(always)]
        unsafe fn sum(self) -> f32 {
            sum8(_mm256_add_ps(self.0, self.1))
        }
    }
}

/// `out[r * ldo + c] = dot(x row r, w row c)` for an `R x C` tile; rows of `x` and `w` are `k`
/// long and `k`-strided.
#[inline(always)]
unsafe fn tile<L: Lanes, const R: usize, const C: usize>(
    x: *const f32,
    w: *const f32,
    k: usize,
    out: *mut f32,
    ldo: usize,
) {
    let mut acc = [[L::zero(); C]; R];
    let full = k / LANES * LANES;
    let mut off = 0;
    while off < full {
        let mut wv = [L::zero(); C];
        for (c, v) in wv.iter_mut().enumerate() {
            *v = L::load(w.add(c * k + off));
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let xv = L::load(x.add(r * k + off));
            for (a, &wc) in row.iter_mut().zip(&wv) {
                *a = a.fma(xv, wc);
            }
        }
        off += LANES;
    }
    if full < k {
        // The partial last block, zero-padded: the same fma on every lane as a full block.
        let padded = |p: *const f32| {
            let mut buf = [0f32; LANES];
            std::ptr::copy_nonoverlapping(p.add(full), buf.as_mut_ptr(), k - full);
            buf
        };
        for (r, row) in acc.iter_mut().enumerate() {
            let xv = padded(x.add(r * k));
            for (c, a) in row.iter_mut().enumerate() {
                let wv = padded(w.add(c * k));
                *a = a.fma(L::load(xv.as_ptr()), L::load(wv.as_ptr()));
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (c, a) in row.iter().enumerate() {
            *out.add(r * ldo + c) = a.sum();
        }
    }
}

/// The products of rows `rows` of `x` with rows `cols` of `w` into `out` (`n` columns).
#[inline(always)]
unsafe fn block<L: Lanes>(
    x: &[f32],
    w: &[f32],
    k: usize,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    let (x, w) = (x.as_ptr(), w.as_ptr());
    let mut r = rows.start;
    while r < rows.end {
        let four_rows = r + 4 <= rows.end;
        let mut c = cols.start;
        while c < cols.end {
            let (xp, wp, op) = (x.add(r * k), w.add(c * k), out.add(r * n + c));
            match (four_rows, c + 4 <= cols.end) {
                (true, true) => tile::<L, 4, 4>(xp, wp, k, op, n),
                (true, false) => tile::<L, 4, 1>(xp, wp, k, op, n),
                (false, true) => tile::<L, 1, 4>(xp, wp, k, op, n),
                (false, false) => tile::<L, 1, 1>(xp, wp, k, op, n),
            }
            c += if c + 4 <= cols.end { 4 } else { 1 };
        }
        r += if four_rows { 4 } else { 1 };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn block_avx512(
    x: &[f32],
    w: &[f32],
    k: usize,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    block::<x86::Avx512>(x, w, k, out, n, rows, cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(
    x: &[f32],
    w: &[f32],
    k: usize,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    block::<x86::Avx2>(x, w, k, out, n, rows, cols)
}

/// A raw output pointer that tasks share; each writes only its own tile.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: tasks write disjoint elements (see `par_tiles`).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// Splits a `[t, n]` output into tiles of up to `rows x cols` and calls `tile(out, rows, cols)`
/// for each in parallel: threads divide outputs, never a sum. `tile` must write only
/// `out[r * n + c]` for `r` in its rows and `c` in its columns.
pub(crate) fn par_tiles(
    out: &mut [f32],
    n: usize,
    (rows, cols): (usize, usize),
    tile: impl Fn(*mut f32, Range<usize>, Range<usize>) + Sync,
) {
    let t = out.len() / n.max(1);
    let ptr = Out(out.as_mut_ptr());
    let (row_tasks, col_tasks) = (t.div_ceil(rows), n.div_ceil(cols));
    (0..row_tasks * col_tasks).into_par_iter().for_each(|task| {
        let (rt, ct) = (task / col_tasks, task % col_tasks);
        let out = ptr;
        tile(
            out.0,
            rt * rows..((rt + 1) * rows).min(t),
            ct * cols..((ct + 1) * cols).min(n),
        );
    });
}

/// `x · wᵀ`: `x` is `[t, k]`, `w` is `[n, k]`, the result `[t, n]`. Each output is the canonical
/// dot product of its two rows (module docs), whatever `t`, the threads or the vector unit.
pub fn matmul_t(x: &[f32], w: &[f32], k: usize) -> Vec<f32> {
    assert!(k > 0 && x.len().is_multiple_of(k) && w.len().is_multiple_of(k));
    let (t, n) = (x.len() / k, w.len() / k);
    let mut out = vec![0f32; t * n];
    let isa = isa();
    par_tiles(&mut out, n, (TASK_ROWS, TASK_COLS), |out, rows, cols| {
        // SAFETY: `rows`/`cols` lie inside `x`, `w` and `out` (shapes checked above), tiles
        // are disjoint.
        unsafe { block_on(isa, x, w, k, out, n, rows, cols) }
    });
    out
}

/// `x · wᵀ` for a weight `w: [n, k]` kept in another form (quantised blocks, say):
/// `rows_of(rows, buf)` writes rows `rows` of `w` as f32 into `buf`, one tile at a time. Each
/// output is the same canonical dot product as in `matmul_t` on the written-out `w`, so the bits
/// are equal; only a tile of `w` is ever held as f32.
pub fn matmul_t_rows(
    x: &[f32],
    n: usize,
    k: usize,
    rows_of: impl Fn(Range<usize>, &mut [f32]) + Sync,
) -> Vec<f32> {
    assert!(k > 0 && x.len().is_multiple_of(k));
    let t = x.len() / k;
    let mut out = vec![0f32; t * n];
    let isa = isa();
    par_tiles(&mut out, n, (TASK_ROWS, TASK_COLS), |out, rows, cols| {
        let mut w = vec![0f32; cols.len() * k];
        rows_of(cols.clone(), &mut w);
        // SAFETY: `w` holds this tile's `cols.len()` rows; `out` is shifted to the tile's
        // first column and written with stride `n` as in `matmul_t`.
        unsafe { block_on(isa, x, &w, k, out.add(cols.start), n, rows, 0..cols.len()) }
    });
    out
}

/// `block` on the path `isa`.
///
/// # Safety
/// As `block`; `isa` must be a path this CPU has (`isa()`).
#[allow(clippy::too_many_arguments)]
unsafe fn block_on(
    isa: Isa,
    x: &[f32],
    w: &[f32],
    k: usize,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => block_avx512(x, w, k, out, n, rows, cols),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => block_avx2(x, w, k, out, n, rows, cols),
        _ => block::<Portable>(x, w, k, out, n, rows, cols),
    }
}

/// The canonical dot product of two equal-length vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let mut out = 0f32;
    let k = a.len();
    if k == 0 {
        return 0.0;
    }
    // SAFETY: one 1x1 tile over two `k`-long rows.
    unsafe { block_on(isa(), a, b, k, &mut out, 1, 0..1, 0..1) }
    out
}

/// RMSNorm of each `weight.len()`-long row of `x`: `x * (1 / sqrt(mean(x²) + eps)) * weight`.
pub fn rms_norm(x: &[f32], weight: &[f32], eps: f32) -> Vec<f32> {
    let d = weight.len();
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks_exact(d) {
        let mean = dot(row, row) / d as f32;
        let inv = 1.0 / (mean + eps).sqrt();
        out.extend(row.iter().zip(weight).map(|(&v, &g)| v * inv * g));
    }
    out
}

/// `silu(gate) * up`, with the sigmoid in f64.
pub fn silu_mul(gate: &[f32], up: &[f32]) -> Vec<f32> {
    gate.iter()
        .zip(up)
        .map(|(&g, &u)| {
            let g64 = f64::from(g);
            (g64 / (1.0 + (-g64).exp())) as f32 * u
        })
        .collect()
}

/// `exp(x)` rounded once from f64 (module docs).
pub fn exp(x: f32) -> f32 {
    f64::from(x).exp() as f32
}

/// Natural-log softmax of `logits` at `target`: `logits[target] - (max + ln Σ exp(l - max))`, the
/// sum in f64 in index order.
pub fn log_softmax_at(logits: &[f32], target: usize) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let max64 = f64::from(max);
    let sum: f64 = logits.iter().map(|&l| (f64::from(l) - max64).exp()).sum();
    f64::from(logits[target]) - (max64 + sum.ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs whose products and sums round at every step, so a different order shows.
    fn awkward(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    /// The canonical order written out with scalar operations only.
    fn reference_dot(a: &[f32], b: &[f32]) -> f32 {
        let mut lanes = [0f32; LANES];
        for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
            lanes[i % LANES] = x.mul_add(y, lanes[i % LANES]);
        }
        // The zero padding of the last block: fma(0, 0, lane) may turn -0 into +0.
        let padded = a.len().div_ceil(LANES) * LANES;
        for i in a.len()..padded {
            lanes[i % LANES] = 0f32.mul_add(0.0, lanes[i % LANES]);
        }
        tree_sum(lanes)
    }

    #[test]
    fn every_output_is_the_canonical_dot_product() {
        for k in [1, 15, 16, 17, 64, 100, 576] {
            for (t, n) in [(1, 1), (1, 7), (5, 9), (70, 40)] {
                let x = awkward(t * k, 1 + k as u32);
                let w = awkward(n * k, 99 + t as u32);
                let got = matmul_t(&x, &w, k);
                for i in 0..t {
                    for j in 0..n {
                        let want = reference_dot(&x[i * k..][..k], &w[j * k..][..k]);
                        assert_eq!(
                            got[i * n + j].to_bits(),
                            want.to_bits(),
                            "k {k}, [{t}, {n}] at ({i}, {j}) on {:?}",
                            isa()
                        );
                    }
                }
                // A row alone gives the bits it had among others.
                let alone = matmul_t(&x[(t - 1) * k..], &w, k);
                assert_eq!(alone, got[(t - 1) * n..]);
            }
        }
    }

    #[test]
    fn log_softmax_is_normalised() {
        let logits = awkward(1000, 7);
        let total: f64 = (0..logits.len())
            .map(|i| log_softmax_at(&logits, i).exp())
            .sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
    }
}
