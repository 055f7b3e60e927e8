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
//! * Attention (`attention`) visits keys in position order and sums its softmax in lanes by
//!   position, so the chunking of the cache changes nothing.
//! * `exp` is our own (`exp32`: additions, multiplications and fused multiply-adds), the same on
//!   every path and independent of the platform's libm. The one libm call left is the f64 `ln`
//!   of a softmax total, once per scored token.
//!
//! `DELTALOGIC_NO_AVX512=1` selects the AVX2 path and `DELTALOGIC_PORTABLE=1` the portable one,
//! for tests and for checking that a machine without them gives the same bits.

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

/// Lanes of the canonical dot product.
pub(crate) const LANES: usize = 16;
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

/// Whether the portable path runs compiled for the scalar fused multiply-add instruction. Its
/// `mul_add` rounds once either way; without the instruction it is a call to libm's `fmaf` per
/// element (on SmolLM2's integer bit test, the portable run took 55.5 s with the call and 45.7 s
/// with the instruction; inlining, below, did the rest). With it, the compiler may also put the
/// portable lanes' element-wise operations in vector registers: the same IEEE operations on each
/// element, so the same bits.
pub(crate) fn portable_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static FMA: OnceLock<bool> = OnceLock::new();
        *FMA.get_or_init(|| std::arch::is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
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

/// 16 f32 lanes and the operations the kernels need; every implementation rounds the same way.
pub(crate) trait Lanes: Copy {
    /// Whether the f32 product's tiles are 4 × 4 outputs, or 2 × 2: AVX2 holds 16 lanes in two
    /// of its 16 registers, and 4 × 4 accumulators would live on the stack.
    const WIDE_TILES: bool = true;
    /// # Safety
    /// The CPU must support the implementation's instructions (as for every method).
    unsafe fn zero() -> Self;
    unsafe fn splat(v: f32) -> Self;
    /// # Safety
    /// `p` must point to 16 readable f32s.
    unsafe fn load(p: *const f32) -> Self;
    /// The first `n < 16` lanes from `p`, the others 0 (a partial last block, zero-padded).
    /// # Safety
    /// `p` must point to `n` readable f32s; nothing after them is read.
    unsafe fn load_first(p: *const f32, n: usize) -> Self;
    /// # Safety
    /// `p` must point to 16 writable f32s.
    unsafe fn store(self, p: *mut f32);
    /// `self + a * b`, rounded once.
    unsafe fn fma(self, a: Self, b: Self) -> Self;
    unsafe fn add(self, a: Self) -> Self;
    unsafe fn sub(self, a: Self) -> Self;
    unsafe fn mul(self, a: Self) -> Self;
    unsafe fn div(self, a: Self) -> Self;
    /// Lane-wise maximum (`a` where either is NaN, as `maxps`).
    unsafe fn max(self, a: Self) -> Self;
    /// `exp32` in every lane.
    unsafe fn exp(self) -> Self;
    /// The fixed tree sum of the lanes.
    unsafe fn sum(self) -> f32;
}

/// `exp32`'s constants: inputs below `EXP_LO` give 0 and above `EXP_HI` infinity (so that
/// `2^n` stays a normal number); `ln 2` in two parts (Cody and Waite); the polynomial of Cephes'
/// `expf` for `e^r` on `|r| ≤ ln 2 / 2`.
const EXP_LO: f32 = -87.0;
const EXP_HI: f32 = 88.0;
const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    0.5,
];
/// 1.5 · 2^23: adding and subtracting it rounds an f32 below 2^22 to an integer, half to even.
const ROUND: f32 = 12_582_912.0;

/// `e^x` in f32 from additions, multiplications and fused multiply-adds only, so that every
/// vector unit (`Lanes::exp`) computes the same bits, whatever the machine's libm: `n = round(x
/// log2 e)`, `r = x − n ln 2`, `e^r` by polynomial, times `2^n`. Within 2 ulp of the exact value
/// on `[EXP_LO, EXP_HI]` (test `exp32_is_within_two_ulp`).
pub fn exp32(x: f32) -> f32 {
    if x < EXP_LO {
        return 0.0;
    }
    if x > EXP_HI {
        return f32::INFINITY;
    }
    // Not `clamp`: a NaN becomes `EXP_LO` here, as `maxps` makes it in the vector paths.
    #[allow(clippy::manual_clamp)]
    let x = x.max(EXP_LO).min(EXP_HI);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let p = EXP_POLY[1..]
        .iter()
        .fold(EXP_POLY[0], |p, &c| p.mul_add(r, c));
    let y = p.mul_add(r * r, r) + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[derive(Clone, Copy)]
pub(crate) struct Portable([f32; LANES]);

/// `[f(0), …, f(N − 1)]` by a plain loop: `std::array::from_fn` and `array::map` left their
/// closures out of line here, a call per lane, which made the portable path three times slower.
#[inline(always)]
pub(crate) fn each<T: Copy + Default, const N: usize>(f: impl Fn(usize) -> T) -> [T; N] {
    let mut out = [T::default(); N];
    for (l, o) in out.iter_mut().enumerate() {
        *o = f(l);
    }
    out
}

impl Portable {
    #[inline(always)]
    fn zip(self, a: Self, f: impl Fn(f32, f32) -> f32) -> Self {
        Portable(each(|l| f(self.0[l], a.0[l])))
    }
}

impl Lanes for Portable {
    #[inline(always)]
    unsafe fn zero() -> Self {
        Portable([0.0; LANES])
    }
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        Portable([v; LANES])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        Portable(std::ptr::read_unaligned(p as *const [f32; LANES]))
    }
    #[inline(always)]
    unsafe fn load_first(p: *const f32, n: usize) -> Self {
        Portable(each(|l| if l < n { *p.add(l) } else { 0.0 }))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        std::ptr::write_unaligned(p as *mut [f32; LANES], self.0)
    }
    #[inline(always)]
    unsafe fn fma(self, a: Self, b: Self) -> Self {
        Portable(each(|l| a.0[l].mul_add(b.0[l], self.0[l])))
    }
    #[inline(always)]
    unsafe fn add(self, a: Self) -> Self {
        self.zip(a, |x, y| x + y)
    }
    #[inline(always)]
    unsafe fn sub(self, a: Self) -> Self {
        self.zip(a, |x, y| x - y)
    }
    #[inline(always)]
    unsafe fn mul(self, a: Self) -> Self {
        self.zip(a, |x, y| x * y)
    }
    #[inline(always)]
    unsafe fn div(self, a: Self) -> Self {
        self.zip(a, |x, y| x / y)
    }
    #[inline(always)]
    unsafe fn max(self, a: Self) -> Self {
        self.zip(a, |x, y| if x > y { x } else { y })
    }
    #[inline(always)]
    unsafe fn exp(self) -> Self {
        Portable(each(|l| exp32(self.0[l])))
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
pub(crate) mod x86 {
    use super::{Lanes, EXP_HI, EXP_LO, EXP_POLY, LN2_HI, LN2_LO, LOG2E, ROUND};
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
        unsafe fn splat(v: f32) -> Self {
            Avx512(_mm512_set1_ps(v))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx512(_mm512_loadu_ps(p))
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            Avx512(_mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm512_storeu_ps(p, self.0)
        }
        #[inline(always)]
        unsafe fn fma(self, a: Self, b: Self) -> Self {
            Avx512(_mm512_fmadd_ps(a.0, b.0, self.0))
        }
        #[inline(always)]
        unsafe fn add(self, a: Self) -> Self {
            Avx512(_mm512_add_ps(self.0, a.0))
        }
        #[inline(always)]
        unsafe fn sub(self, a: Self) -> Self {
            Avx512(_mm512_sub_ps(self.0, a.0))
        }
        #[inline(always)]
        unsafe fn mul(self, a: Self) -> Self {
            Avx512(_mm512_mul_ps(self.0, a.0))
        }
        #[inline(always)]
        unsafe fn div(self, a: Self) -> Self {
            Avx512(_mm512_div_ps(self.0, a.0))
        }
        #[inline(always)]
        unsafe fn max(self, a: Self) -> Self {
            Avx512(_mm512_max_ps(self.0, a.0))
        }
        #[inline(always)]
        unsafe fn exp(self) -> Self {
            let x = self.0;
            let lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_LT_OQ);
            let hi = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_HI), _CMP_GT_OQ);
            let x = _mm512_min_ps(
                _mm512_max_ps(x, _mm512_set1_ps(EXP_LO)),
                _mm512_set1_ps(EXP_HI),
            );
            let round = _mm512_set1_ps(ROUND);
            let n = _mm512_sub_ps(
                _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)), round),
                round,
            );
            let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), x);
            let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
            let mut p = _mm512_set1_ps(EXP_POLY[0]);
            for &c in &EXP_POLY[1..] {
                p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
            }
            let y = _mm512_add_ps(
                _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r),
                _mm512_set1_ps(1.0),
            );
            let e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
            let y = _mm512_mul_ps(y, _mm512_castsi512_ps(_mm512_slli_epi32(e, 23)));
            let y = _mm512_mask_mov_ps(y, hi, _mm512_set1_ps(f32::INFINITY));
            Avx512(_mm512_maskz_mov_ps(!lo, y))
        }
        #[inline(always)]
        unsafe fn sum(self) -> f32 {
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(self.0), 1));
            sum8(_mm256_add_ps(_mm512_castps512_ps256(self.0), hi))
        }
    }

    /// `super::exp32` on 8 lanes.
    #[inline(always)]
    unsafe fn exp8(x: __m256) -> __m256 {
        let lo = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_LO), _CMP_LT_OQ);
        let hi = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_HI), _CMP_GT_OQ);
        let x = _mm256_min_ps(
            _mm256_max_ps(x, _mm256_set1_ps(EXP_LO)),
            _mm256_set1_ps(EXP_HI),
        );
        let round = _mm256_set1_ps(ROUND);
        let n = _mm256_sub_ps(
            _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), round),
            round,
        );
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
        let r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
        let mut p = _mm256_set1_ps(EXP_POLY[0]);
        for &c in &EXP_POLY[1..] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let y = _mm256_add_ps(
            _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r),
            _mm256_set1_ps(1.0),
        );
        let e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
        let y = _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
        let y = _mm256_blendv_ps(y, _mm256_set1_ps(f32::INFINITY), hi);
        _mm256_andnot_ps(lo, y)
    }

    /// Lanes 0..8 and 8..16.
    #[derive(Clone, Copy)]
    pub struct Avx2(__m256, __m256);

    impl Lanes for Avx2 {
        const WIDE_TILES: bool = false;

        #[inline(always)]
        unsafe fn zero() -> Self {
            Avx2(_mm256_setzero_ps(), _mm256_setzero_ps())
        }
        #[inline(always)]
        unsafe fn splat(v: f32) -> Self {
            Avx2(_mm256_set1_ps(v), _mm256_set1_ps(v))
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            Avx2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)))
        }
        #[inline(always)]
        unsafe fn load_first(p: *const f32, n: usize) -> Self {
            // Lane l is loaded where l < n; masked lanes read nothing and are 0.
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let below = |m: usize| _mm256_cmpgt_epi32(_mm256_set1_epi32(m as i32), lane);
            Avx2(
                _mm256_maskload_ps(p, below(n)),
                _mm256_maskload_ps(p.wrapping_add(8), below(n.saturating_sub(8))),
            )
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            _mm256_storeu_ps(p, self.0);
            _mm256_storeu_ps(p.add(8), self.1);
        }
        #[inline(always)]
        unsafe fn fma(self, a: Self, b: Self) -> Self {
            Avx2(
                _mm256_fmadd_ps(a.0, b.0, self.0),
                _mm256_fmadd_ps(a.1, b.1, self.1),
            )
        }
        #[inline(always)]
        unsafe fn add(self, a: Self) -> Self {
            Avx2(_mm256_add_ps(self.0, a.0), _mm256_add_ps(self.1, a.1))
        }
        #[inline(always)]
        unsafe fn sub(self, a: Self) -> Self {
            Avx2(_mm256_sub_ps(self.0, a.0), _mm256_sub_ps(self.1, a.1))
        }
        #[inline(always)]
        unsafe fn mul(self, a: Self) -> Self {
            Avx2(_mm256_mul_ps(self.0, a.0), _mm256_mul_ps(self.1, a.1))
        }
        #[inline(always)]
        unsafe fn div(self, a: Self) -> Self {
            Avx2(_mm256_div_ps(self.0, a.0), _mm256_div_ps(self.1, a.1))
        }
        #[inline(always)]
        unsafe fn max(self, a: Self) -> Self {
            Avx2(_mm256_max_ps(self.0, a.0), _mm256_max_ps(self.1, a.1))
        }
        #[inline(always)]
        unsafe fn exp(self) -> Self {
            Avx2(exp8(self.0), exp8(self.1))
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
    // One loop over every block, the partial last one zero-padded: the same fma on every lane
    // as a full block. (A separate step for that block after the loop made the compiler keep
    // an accumulator on the stack through the loop.)
    let mut off = 0;
    while off < k {
        let rest = k - off;
        let load = |p: *const f32| {
            if rest >= LANES {
                L::load(p)
            } else {
                L::load_first(p, rest)
            }
        };
        let mut wv = [L::zero(); C];
        for (c, v) in wv.iter_mut().enumerate() {
            *v = load(w.add(c * k + off));
        }
        for (r, row) in acc.iter_mut().enumerate() {
            let xv = load(x.add(r * k + off));
            for (a, &wc) in row.iter_mut().zip(&wv) {
                *a = a.fma(xv, wc);
            }
        }
        off += LANES;
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
    if L::WIDE_TILES {
        tiles::<L, 4>(x, w, k, out, n, rows, cols)
    } else {
        tiles::<L, 2>(x, w, k, out, n, rows, cols)
    }
}

/// `block` in tiles of `S` × `S` outputs, and of `S` × 1, 1 × `S` or 1 × 1 at the edges.
#[inline(always)]
unsafe fn tiles<L: Lanes, const S: usize>(
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
        let whole_rows = r + S <= rows.end;
        let mut c = cols.start;
        while c < cols.end {
            let (xp, wp, op) = (x.add(r * k), w.add(c * k), out.add(r * n + c));
            let whole_cols = c + S <= cols.end;
            match (whole_rows, whole_cols) {
                (true, true) => tile::<L, S, S>(xp, wp, k, op, n),
                (true, false) => tile::<L, S, 1>(xp, wp, k, op, n),
                (false, true) => tile::<L, 1, S>(xp, wp, k, op, n),
                (false, false) => tile::<L, 1, 1>(xp, wp, k, op, n),
            }
            c += if whole_cols { S } else { 1 };
        }
        r += if whole_rows { S } else { 1 };
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn block_portable_fma(
    x: &[f32],
    w: &[f32],
    k: usize,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    block::<Portable>(x, w, k, out, n, rows, cols)
}

/// A raw output pointer that tasks share; each writes only its own tile.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: tasks write disjoint elements (see `par_tiles`).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// Splits the columns `part` of a `[t, n]` output into tiles of up to `rows x cols` and calls
/// `tile(out, rows, cols)` for each in parallel: threads divide outputs, never a sum. `out` points
/// to column `part.start` and `cols` counts from there; `tile` must write only `out[r * n + c]`
/// for `r` in its rows and `c` in its columns.
pub(crate) fn par_tiles(
    out: &mut [f32],
    n: usize,
    part: Range<usize>,
    (rows, cols): (usize, usize),
    tile: impl Fn(*mut f32, Range<usize>, Range<usize>) + Sync,
) {
    assert!(part.end <= n);
    let (t, width) = (out.len() / n.max(1), part.len());
    // SAFETY: `part.start < n` or the part is empty (no task runs).
    let ptr = Out(unsafe { out.as_mut_ptr().add(part.start.min(out.len())) });
    let (row_tasks, col_tasks) = (t.div_ceil(rows), width.div_ceil(cols));
    (0..row_tasks * col_tasks).into_par_iter().for_each(|task| {
        let (rt, ct) = (task / col_tasks, task % col_tasks);
        let out = ptr;
        tile(
            out.0,
            rt * rows..((rt + 1) * rows).min(t),
            ct * cols..((ct + 1) * cols).min(width),
        );
    });
}

/// Writes `part: [t, m]` into the columns `first..first + m` of `out: [t, n]`.
pub(crate) fn put_columns(part: &[f32], m: usize, out: &mut [f32], n: usize, first: usize) {
    for (o, p) in out.chunks_exact_mut(n).zip(part.chunks_exact(m)) {
        o[first..first + m].copy_from_slice(p);
    }
}

/// `x · wᵀ`: `x` is `[t, k]`, `w` is `[n, k]`, the result `[t, n]`. Each output is the canonical
/// dot product of its two rows (module docs), whatever `t`, the threads or the vector unit.
pub fn matmul_t(x: &[f32], w: &[f32], k: usize) -> Vec<f32> {
    assert!(k > 0 && x.len().is_multiple_of(k) && w.len().is_multiple_of(k));
    let (t, n) = (x.len() / k, w.len() / k);
    let mut out = vec![0f32; t * n];
    let isa = isa();
    par_tiles(
        &mut out,
        n,
        0..n,
        (TASK_ROWS, TASK_COLS),
        |out, rows, cols| {
            // SAFETY: `rows`/`cols` lie inside `x`, `w` and `out` (shapes checked above), tiles
            // are disjoint.
            unsafe { block_on(isa, x, w, k, out, n, rows, cols) }
        },
    );
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
    par_tiles(
        &mut out,
        n,
        0..n,
        (TASK_ROWS, TASK_COLS),
        |out, rows, cols| {
            let mut w = vec![0f32; cols.len() * k];
            rows_of(cols.clone(), &mut w);
            // SAFETY: `w` holds this tile's `cols.len()` rows; `out` is shifted to the tile's
            // first column and written with stride `n` as in `matmul_t`.
            unsafe { block_on(isa, x, &w, k, out.add(cols.start), n, rows, 0..cols.len()) }
        },
    );
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
        #[cfg(target_arch = "x86_64")]
        _ if portable_fma() => block_portable_fma(x, w, k, out, n, rows, cols),
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

/// Calls `$f::<L>(args)` with the `Lanes` of the path `isa()` chose, compiled for its vector
/// unit; the arguments are variables in scope, listed with their types.
macro_rules! on_lanes {
    ($f:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512($($arg: $ty),*) -> $ret {
            $f::<$crate::model::numerics::kernels::x86::Avx512>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2($($arg: $ty),*) -> $ret {
            $f::<$crate::model::numerics::kernels::x86::Avx2>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "fma")]
        unsafe fn portable_fma($($arg: $ty),*) -> $ret {
            $f::<$crate::model::numerics::kernels::Portable>($($arg),*)
        }
        // SAFETY: each path runs only where `isa` detected its instructions.
        unsafe {
            match $crate::model::numerics::kernels::isa() {
                #[cfg(target_arch = "x86_64")]
                $crate::model::numerics::kernels::Isa::Avx512 => avx512($($arg),*),
                #[cfg(target_arch = "x86_64")]
                $crate::model::numerics::kernels::Isa::Avx2 => avx2($($arg),*),
                #[cfg(target_arch = "x86_64")]
                _ if $crate::model::numerics::kernels::portable_fma() => portable_fma($($arg),*),
                _ => $f::<$crate::model::numerics::kernels::Portable>($($arg),*),
            }
        }
    }};
}
pub(crate) use on_lanes;

/// `silu(gate) * up` in f32: `g / (1 + exp32(−g)) * u`, the same operations on every path.
pub fn silu_mul(gate: &[f32], up: &[f32], out: &mut [f32]) {
    on_lanes!(silu_mul_on(gate: &[f32], up: &[f32], out: &mut [f32]) -> ());
}

#[inline(always)]
unsafe fn silu_mul_on<L: Lanes>(gate: &[f32], up: &[f32], out: &mut [f32]) {
    // A function, not a closure: a closure may be compiled out of line, without the caller's
    // vector features.
    #[inline(always)]
    unsafe fn lanes<L: Lanes>(g: &[f32], u: &[f32], o: &mut [f32]) {
        let g = L::load(g.as_ptr());
        let s = g.div(L::splat(1.0).add(L::zero().sub(g).exp()));
        s.mul(L::load(u.as_ptr())).store(o.as_mut_ptr());
    }
    let full = gate.len() / LANES * LANES;
    for ((g, u), o) in gate[..full]
        .chunks_exact(LANES)
        .zip(up[..full].chunks_exact(LANES))
        .zip(out[..full].chunks_exact_mut(LANES))
    {
        lanes::<L>(g, u, o);
    }
    if full < gate.len() {
        // The tail, zero-padded: the same operations on each element as a full block.
        let pad = |x: &[f32]| {
            let mut b = [0f32; LANES];
            b[..x.len()].copy_from_slice(x);
            b
        };
        let mut o = [0f32; LANES];
        lanes::<L>(&pad(&gate[full..]), &pad(&up[full..]), &mut o);
        let n = gate.len() - full;
        out[full..].copy_from_slice(&o[..n]);
    }
}

/// The largest of `x` (the first operand where one is NaN, as the vector paths do).
#[inline(always)]
pub(crate) unsafe fn max_on<L: Lanes>(x: &[f32]) -> f32 {
    let mut m = L::splat(f32::NEG_INFINITY);
    let full = x.len() / LANES * LANES;
    for c in x[..full].chunks_exact(LANES) {
        m = m.max(L::load(c.as_ptr()));
    }
    let mut lanes = [0f32; LANES];
    m.store(lanes.as_mut_ptr());
    x[full..]
        .iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

/// Natural-log softmax of `logits` at `target`: `logits[target] − (max + ln Σ exp32(l − max))`;
/// the terms are summed in f32 lanes over blocks of 256 (16 to a lane), the blocks' sums in f64
/// in index order, so the sum keeps f64's accuracy where it matters.
pub fn log_softmax_at(logits: &[f32], target: usize) -> f64 {
    on_lanes!(log_softmax_on(logits: &[f32], target: usize) -> f64)
}

#[inline(always)]
unsafe fn log_softmax_on<L: Lanes>(logits: &[f32], target: usize) -> f64 {
    const BLOCK: usize = 16 * LANES;
    let max = max_on::<L>(logits);
    let m = L::splat(max);
    let mut total = 0f64;
    let mut buf = [f32::NEG_INFINITY; BLOCK];
    for block in logits.chunks(BLOCK) {
        let b: &[f32] = if block.len() == BLOCK {
            block
        } else {
            // The last block padded with −∞, whose terms are exactly 0.
            buf[..block.len()].copy_from_slice(block);
            &buf
        };
        let mut acc = L::zero();
        for c in b.chunks_exact(LANES) {
            acc = acc.add(L::load(c.as_ptr()).sub(m).exp());
        }
        total += f64::from(acc.sum());
    }
    f64::from(logits[target]) - (f64::from(max) + total.ln())
}

/// Test inputs in [−1, 1) whose products and sums round at every step, so a different order
/// shows.
#[cfg(test)]
pub(crate) fn awkward(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // The terms are `exp32`'s, each within 2 ulp (about 1e-7) of the exact value.
        assert!((total - 1.0).abs() < 1e-6, "{total}");
    }

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i32 - b.to_bits() as i32).unsigned_abs()
    }

    /// `exp32` against f64's `exp` rounded to f32, over its whole range: at most 2 ulp apart
    /// (the largest distance seen is printed), and the ends of the range as documented.
    #[test]
    fn exp32_is_within_two_ulp() {
        let mut worst = (0, 0f32);
        let mut x = EXP_LO;
        while x <= EXP_HI {
            let want = f64::from(x).exp() as f32;
            let d = ulps(exp32(x), want);
            if d > worst.0 {
                worst = (d, x);
            }
            x += 1.0 / 1024.0;
        }
        eprintln!("exp32: at most {} ulp (at {})", worst.0, worst.1);
        assert!(worst.0 <= 2, "{} ulp at {}", worst.0, worst.1);
        assert_eq!(exp32(0.0), 1.0);
        assert_eq!(exp32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp32(EXP_LO - 0.01), 0.0);
        assert_eq!(exp32(EXP_HI + 0.01), f32::INFINITY);
    }

    /// Every vector path computes `exp32`, `silu_mul`'s and the softmax's operations to the bit
    /// (the lanes are used directly, whatever path this process chose).
    #[test]
    fn every_path_computes_the_same_exp() {
        let mut x = awkward(4096, 5);
        x.iter_mut().for_each(|v| *v *= 100.0);
        x.extend([
            f32::NEG_INFINITY,
            EXP_LO,
            EXP_HI,
            -0.0,
            0.0,
            88.5,
            -87.5,
            1e-30,
        ]);
        x.resize(x.len().next_multiple_of(LANES), 0.5);
        let want: Vec<u32> = x.iter().map(|&v| exp32(v).to_bits()).collect();
        unsafe fn run<L: Lanes>(x: &[f32]) -> Vec<u32> {
            let mut out = vec![0f32; x.len()];
            for (i, o) in x.chunks_exact(LANES).zip(out.chunks_exact_mut(LANES)) {
                L::load(i.as_ptr()).exp().store(o.as_mut_ptr());
            }
            out.iter().map(|v| v.to_bits()).collect()
        }
        assert_eq!(unsafe { run::<Portable>(&x) }, want);
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f")]
            unsafe fn avx512(x: &[f32]) -> Vec<u32> {
                run::<x86::Avx512>(x)
            }
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(x: &[f32]) -> Vec<u32> {
                run::<x86::Avx2>(x)
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                assert_eq!(unsafe { avx512(&x) }, want, "AVX-512");
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                assert_eq!(unsafe { avx2(&x) }, want, "AVX2");
            }
        }
    }

    /// `silu_mul` against its definition in f64: within a few f32 ulp; its tail (a length that
    /// is not a multiple of 16) as a full block.
    #[test]
    fn silu_mul_follows_its_definition() {
        let g: Vec<f32> = awkward(1000, 3).iter().map(|v| v * 20.0).collect();
        let u = awkward(1000, 4);
        let silu = |g: &[f32], u: &[f32]| {
            let mut out = vec![0f32; g.len()];
            silu_mul(g, u, &mut out);
            out
        };
        let got = silu(&g, &u);
        for ((&g, &u), &o) in g.iter().zip(&u).zip(&got) {
            let want = f64::from(g) / (1.0 + (-f64::from(g)).exp()) * f64::from(u);
            assert!(
                (f64::from(o) - want).abs() <= 1e-6 * want.abs().max(1e-3),
                "{g} {u}"
            );
        }
        assert_eq!(silu(&g[..999], &u[..999]), got[..999]);
    }
}
