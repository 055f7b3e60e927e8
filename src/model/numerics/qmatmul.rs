//! The integer numerics mode: GGUF weights stay quantised (repacked into panels of 16 rows,
//! `repack`) and multiply activations quantised to 8 bits as llama.cpp quantises them: per
//! block of 32 for the legacy types and MXFP4 (Q8_0, or Q8_1 for Q4_1/Q5_1), per 256 for the
//! k-quants (Q8_K).
//!
//! In the f32 mode the same matrices stay quantised too and multiply as f32, dequantised a tile
//! (or a chunk of rows) at a time: the bits of the f32 product, without an f32 copy.
//!
//! Every output has one order of operations on every path. For each weight block, in order:
//! - the integer sums are exact: per sub-block `Σ u·x − zero·Σx` (unsigned weight values `u`
//!   against signed activations; `dpbusd` on VNNI, `maddubs` + `madd` on AVX2, plain integers
//!   on the portable path, which all give the same integer), then for the k-quants
//!   `S = Σ_j sc_j · sum_j` and `M = Σ_j min_j · Σx_j`, still integers;
//! - the float work is fused multiply-adds into one accumulator per output:
//!   `acc = fma(d_w · d_x, S, acc)`, then Q4_1/Q5_1's `acc = fma(m_w, s_x, acc)` or a k-quant's
//!   `acc = fma(−(dmin_w · d_x), M, acc)`. MXFP4's `d_w` is its E8M0 byte as llama.cpp turns it
//!   into an f32 (`quant::e8m0_half`, a power of two) and `S = Σ (u − 12)·x` is its table values
//!   against the activations: llama.cpp's `ggml_vec_dot_mxfp4_q8_0` multiplies the same integer
//!   by the same `d_x · d_w`.
//!
//! Threads split outputs, never sums; a vector lane is one output (one weight row of a panel),
//! so the width of the vector unit changes how many outputs run at once, never an output's own
//! operations.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use half::f16;
use rayon::prelude::*;

use crate::model::format::gguf::BlockBytes;
use crate::model::format::quant::{dequantize, e8m0_half, GgmlType};
use crate::model::numerics::kernels::{
    each, isa, matmul_t, matmul_t_rows, on_lanes, par_tiles, portable_fma, put_columns, Isa, Lanes,
    LANES,
};
use crate::model::numerics::repack::{
    self, Layout, Offsets, Scale, Scales, Second, GROUP_BYTES, PANEL,
};

/// Activation rows handed to one task, and weight rows (a multiple of `PANEL`).
const TASK_ROWS: usize = 64;
const TASK_COLS: usize = 64;
/// Weight rows dequantised at a time by the f32 mode's longer products.
const F32_CHUNK: usize = 256;
/// Activation rows multiplied against one panel at a time (registers: accumulators and sums).
const ROWS: usize = 8;

/// Whether a `[_, cols]` matrix of `ty` is kept quantised: the types with integer kernels,
/// whose blocks tile a row.
pub fn keeps(ty: GgmlType, cols: usize) -> bool {
    Layout::of(ty).is_some_and(|l| cols.is_multiple_of(l.block))
}

/// A weight matrix `[rows, cols]` kept quantised: the file's blocks (for row lookups and the f32
/// mode) and, in the integer mode from the first product on, their repacked form.
pub struct QMatrix {
    layout: Layout,
    cols: usize,
    rows: usize,
    /// Multiply in integers (else as f32, a tile of rows dequantised at a time).
    integer: bool,
    bytes: BlockBytes,
    packed: repack::Packing,
}

impl QMatrix {
    /// `bytes` holds rows of `cols / block_len` blocks of `ty`, which `keeps`.
    pub fn new(ty: GgmlType, cols: usize, bytes: BlockBytes, integer: bool) -> QMatrix {
        assert!(keeps(ty, cols));
        let row_bytes = cols / ty.block_len() * ty.block_bytes();
        assert!(bytes.len().is_multiple_of(row_bytes));
        QMatrix {
            layout: Layout::of(ty).expect("checked by keeps"),
            cols,
            rows: bytes.len() / row_bytes,
            integer,
            bytes,
            packed: repack::Packing::kept(),
        }
    }

    /// Issue 45: its repacked form held in `cache`, within that cache's budget (a mixture's
    /// experts), instead of for the matrix's life.
    pub(crate) fn in_cache(mut self, cache: &Arc<repack::PackCache>) -> QMatrix {
        self.packed = repack::Packing::cached(cache);
        self
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes of the file's blocks.
    pub fn file_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Row `r` dequantised.
    pub fn row(&self, r: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.cols];
        let rb = self.row_bytes();
        dequantize(self.layout.ty, &self.bytes[r * rb..][..rb], &mut out);
        out
    }

    /// The first non-finite weight (its index, row-major, and value). Only a non-finite scale
    /// makes one, so only the scales are read, and the row of the first such block is
    /// dequantised. The file's pages are then handed back to the kernel: the repacked form
    /// replaces them.
    pub fn first_non_finite(&self) -> Option<(usize, f32)> {
        let ty = self.layout.ty;
        let bb = ty.block_bytes();
        // Row by row in chunks, each let go of once read: only a chunk of the file is resident
        // at a time.
        let rows_per_chunk = 1024;
        let rb = self.row_bytes();
        for first in (0..self.rows).step_by(rows_per_chunk) {
            let range = first * rb..(first + rows_per_chunk).min(self.rows) * rb;
            let bad = self.bytes[range.clone()]
                .par_chunks_exact(bb)
                .position_first(|b| !ty.finite_scales(b));
            self.bytes.release(range.clone());
            if let Some(block) = bad {
                let r = (range.start + block * bb) / rb;
                let row = self.row(r);
                let c = row.iter().position(|v| !v.is_finite())?;
                return Some((r * self.cols + c, row[c]));
            }
        }
        None
    }

    fn row_bytes(&self) -> usize {
        self.cols / self.layout.ty.block_len() * self.layout.ty.block_bytes()
    }

    fn packed(&self) -> repack::PackedRef<'_> {
        self.packed.get(|| {
            repack::pack(&self.layout, self.cols, self.rows, &self.bytes, |read| {
                self.bytes.release(read)
            })
        })
    }
}

/// Activation rows quantised for a layout (module docs), stored block by block: for block `b`,
/// every row's 8-bit values side by side (`q: [blocks, t, block]`), and likewise each block's
/// and sub-block's numbers (`d`, `s: [blocks, t]`; `corr: [blocks · subs, t]`). The rows a panel
/// multiplies at once are then one place a block apart at fixed offsets, where per-row vectors
/// had the kernel reload each row's pointers from the stack at every block (40% of its
/// samples on SmolLM2, `docs/models.md`), and a product allocates a few buffers, not a few per
/// row.
struct ActRows {
    /// Rows.
    t: usize,
    q: Vec<i8>,
    /// The scale `d`, and Q8_1's `s` (`d · Σx` rounded to f16).
    d: Vec<f32>,
    s: Vec<f32>,
    /// `zero · Σx` of each sub-block.
    corr: Vec<i32>,
    /// For layouts with mins, per block and group of 4 sub-blocks (`[blocks · subs / 4, t]`):
    /// the sub-block sums `Σx_j` as `64 · hi_j + lo_j`, with `hi_j` and `lo_j` (`0..64`) as 4
    /// signed bytes each, for a `dot4` against 4 mins (|Σx_j| ≤ 32 · 127 puts `hi_j` in
    /// `−64..64`).
    mins_hi: Vec<i32>,
    mins_lo: Vec<i32>,
}

/// Values a quantising task takes at least: a decode step's one row stays one task.
const QUANTIZE_VALUES: usize = 4096;

/// Quantises the rows of `x: [t, cols]` for `layout`, in tasks of whole blocks (every block is
/// quantised on its own, so the split changes no value).
fn quantize(x: &[f32], cols: usize, layout: &Layout) -> ActRows {
    let (t, blocks, subs) = (x.len() / cols, cols / layout.block, layout.subs());
    let mins = if layout.scales == Scales::WithMins {
        subs / 4
    } else {
        0
    };
    let mut a = ActRows {
        t,
        q: vec![0; x.len()],
        d: vec![0.0; blocks * t],
        s: vec![0.0; blocks * t],
        corr: vec![0; blocks * subs * t],
        mins_hi: vec![0; blocks * mins * t],
        mins_lo: vec![0; blocks * mins * t],
    };
    if t == 0 {
        return a;
    }
    let (mut hi, mut lo) = (
        a.mins_hi.chunks_mut((mins * t).max(1)),
        a.mins_lo.chunks_mut((mins * t).max(1)),
    );
    let parts: Vec<Block> =
        a.q.chunks_mut(t * layout.block)
            .zip(a.d.chunks_mut(t))
            .zip(a.s.chunks_mut(t))
            .zip(a.corr.chunks_mut(subs * t))
            .map(|(((q, d), s), corr)| Block {
                q,
                d,
                s,
                corr,
                mins: hi.next().zip(lo.next()),
            })
            .collect();
    parts
        .into_par_iter()
        .with_min_len(QUANTIZE_VALUES.div_ceil(t * layout.block))
        .enumerate()
        .for_each(|(b, at)| {
            on_lanes!(quantize_block(x: &[f32], cols: usize, layout: &Layout, b: usize, at: Block) -> ())
        });
    a
}

/// Where block `b` of every row goes (`ActRows`' layout, one block's slices).
struct Block<'a> {
    q: &'a mut [i8],
    d: &'a mut [f32],
    s: &'a mut [f32],
    corr: &'a mut [i32],
    mins: Option<(&'a mut [i32], &'a mut [i32])>,
}

/// Block `b` of each row of `x` quantised into `at` on a vector unit: the scale, the products
/// and the rounding are the same IEEE operations on every path (`Lanes`), the rest integers.
#[inline(always)]
unsafe fn quantize_block<L: Lanes>(x: &[f32], cols: usize, layout: &Layout, b: usize, at: Block) {
    let Block {
        q,
        d,
        s,
        corr,
        mut mins,
    } = at;
    let t = d.len();
    let subs = layout.subs();
    for (r, q) in q.chunks_exact_mut(layout.block).enumerate() {
        let x = &x[r * cols + b * layout.block..][..layout.block];
        let (scale, unrounded) = if layout.block == 256 {
            (quantize_q8_k::<L>(x, q), None)
        } else {
            let (d, unrounded) = quantize_q8_1::<L>(x, q);
            (d, Some(unrounded))
        };
        let mut total = 0;
        let mut sums = [0i32; 16];
        for (j, sub) in q.chunks_exact(layout.sub).enumerate() {
            let sum: i32 = sub.iter().map(|&v| i32::from(v)).sum();
            total += sum;
            sums[j] = sum;
            corr[j * t + r] = layout.zero * sum;
        }
        if let Some((hi, lo)) = &mut mins {
            for (k, four) in sums[..subs].chunks_exact(4).enumerate() {
                let bytes = |f: fn(i32) -> i32| {
                    i32::from_le_bytes(std::array::from_fn(|e| f(four[e]) as u8))
                };
                hi[k * t + r] = bytes(|s| s >> 6);
                lo[k * t + r] = bytes(|s| s & 63);
            }
        }
        d[r] = scale;
        // Q8_1's `s`: the unrounded scale times the block's sum, rounded to f16.
        s[r] = unrounded.map_or(0.0, |d| f16::from_f32(total as f32 * d).to_f32());
    }
}

/// llama.cpp's x86 `quantize_row_q8_0` / `quantize_row_q8_1`: scale `amax / 127` stored as f16,
/// values `x · (127 / amax)` rounded half to even; returns the scale as stored and unrounded.
#[inline(always)]
unsafe fn quantize_q8_1<L: Lanes>(x: &[f32], q: &mut [i8]) -> (f32, f32) {
    let amax = abs_max::<L>(x);
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    scaled_nearest::<L>(x, id, q);
    (f16::from_f32(d).to_f32(), d)
}

/// The largest `|v|` of `x` (a whole number of lanes), NaNs left out as `f32::max` leaves them.
#[inline(always)]
unsafe fn abs_max<L: Lanes>(x: &[f32]) -> f32 {
    let mut m = L::zero();
    for c in x.chunks_exact(LANES) {
        let v = L::load(c.as_ptr());
        // `max` gives its argument where either is NaN: a NaN `v` leaves `m` as it was.
        m = v.max(L::zero().sub(v)).max(m);
    }
    let mut lanes = [0f32; LANES];
    m.store(lanes.as_mut_ptr());
    lanes.iter().fold(0f32, |m, &v| m.max(v))
}

/// `q = nearest(x · s)`, clamped to 127 (reached only by Q8_K's rounding): the product and the
/// rounding addition in lanes, as `nearest` does them one by one.
#[inline(always)]
unsafe fn scaled_nearest<L: Lanes>(x: &[f32], s: f32, q: &mut [i8]) {
    let mut lanes = [0f32; LANES];
    for (c, q) in x.chunks_exact(LANES).zip(q.chunks_exact_mut(LANES)) {
        L::load(c.as_ptr())
            .mul(L::splat(s))
            .add(L::splat(ROUND))
            .store(lanes.as_mut_ptr());
        for (q, v) in q.iter_mut().zip(lanes) {
            *q = (v.to_bits() as i32 - ROUND_BITS).min(127) as i8;
        }
    }
}

/// 1.5 · 2^23 and its bits: adding it to an f32 below 2^22 leaves the integer, rounded half to
/// even, in the low mantissa bits (ggml's `nearest_int`).
const ROUND: f32 = 12_582_912.0;
const ROUND_BITS: i32 = 0x4B40_0000;

/// llama.cpp's `quantize_row_q8_K_ref`: the scale is `max / −127` for the value `max` of largest
/// magnitude (the first such), kept in f32; values `x · (−127 / max)` rounded half to even.
#[inline(always)]
unsafe fn quantize_q8_k<L: Lanes>(x: &[f32], q: &mut [i8]) -> f32 {
    let amax = abs_max::<L>(x);
    if amax == 0.0 {
        q.fill(0);
        return 0.0;
    }
    let max = *x
        .iter()
        .find(|v| v.abs() == amax)
        .expect("the largest magnitude is one of the values");
    let iscale = -127.0 / max;
    scaled_nearest::<L>(x, iscale, q);
    1.0 / iscale
}

/// The operations of the kernel on 16 outputs at once: one register each for AVX-512, two for
/// AVX2, arrays for the portable path. Every implementation performs the same roundings.
trait Simd {
    /// 64 bytes: one group of a panel.
    type W: Copy;
    /// 16 × i32.
    type I: Copy;
    /// 16 × f32.
    type F: Copy;
    /// Whether 8-bit values are multiplied as stored (offset binary), to be corrected by
    /// `zero · Σx` (else as signed bytes, which needs no correction).
    const OFFSET_BYTES: bool;

    unsafe fn load(p: *const u8) -> Self::W;
    /// `(w >> shift) & mask` in every byte (`shift` < 8).
    unsafe fn bits(w: Self::W, shift: u32, mask: u8) -> Self::W;
    /// `low | high << 4` in every byte (`high` < 16).
    unsafe fn join(low: Self::W, high: Self::W) -> Self::W;
    /// `acc + Σ_{e<4} w[4l+e] · x[e]` in lane `l` (exact), `x` 4 signed bytes; with `bytes`, `w`
    /// is offset binary 8-bit values.
    unsafe fn dot4(acc: Self::I, w: Self::W, x: i32, bytes: bool) -> Self::I;
    unsafe fn izero() -> Self::I;
    unsafe fn sub(a: Self::I, s: i32) -> Self::I;
    /// `acc + scales · v`, `scales` 16 bytes (signed or not).
    unsafe fn scaled(acc: Self::I, scales: *const u8, signed: bool, v: Self::I) -> Self::I;
    /// `hi · 2^shift + lo`.
    unsafe fn shl_add(hi: Self::I, shift: u32, lo: Self::I) -> Self::I;
    unsafe fn fzero() -> Self::F;
    /// 16 f16 as f32.
    unsafe fn halves(p: *const u8) -> Self::F;
    /// 16 E8M0 bytes, each followed by a 0 (`Scale::E8m0`), as f32: `quant::e8m0_half`'s bit
    /// arithmetic.
    unsafe fn e8m0_halves(p: *const u8) -> Self::F;
    /// `a · s`.
    unsafe fn mul(a: Self::F, s: f32) -> Self::F;
    /// `fma(a, i as f32, acc)`.
    unsafe fn fma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F;
    /// `fma(−a, i as f32, acc)`.
    unsafe fn fnma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F;
    /// `fma(a, s, acc)`.
    unsafe fn fma_by(a: Self::F, s: f32, acc: Self::F) -> Self::F;
    unsafe fn store(a: Self::F) -> [f32; PANEL];
    /// The 16 lanes into `p..p + 16`.
    unsafe fn store_at(a: Self::F, p: *mut f32);
}

struct Portable;

impl Simd for Portable {
    type W = [u8; GROUP_BYTES];
    type I = [i32; PANEL];
    type F = [f32; PANEL];
    const OFFSET_BYTES: bool = true;

    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self::W {
        std::ptr::read_unaligned(p as *const Self::W)
    }
    #[inline(always)]
    unsafe fn bits(w: Self::W, shift: u32, mask: u8) -> Self::W {
        each(|i| (w[i] >> shift) & mask)
    }
    #[inline(always)]
    unsafe fn join(low: Self::W, high: Self::W) -> Self::W {
        let mut out = low;
        for (o, h) in out.iter_mut().zip(high) {
            *o |= h << 4;
        }
        out
    }
    #[inline(always)]
    unsafe fn dot4(acc: Self::I, w: Self::W, x: i32, _bytes: bool) -> Self::I {
        let x = x.to_le_bytes().map(|b| i32::from(b as i8));
        let mut out = acc;
        for (o, w) in out.iter_mut().zip(w.chunks_exact(4)) {
            *o += (0..4).fold(0, |s, e| s + i32::from(w[e]) * x[e]);
        }
        out
    }
    #[inline(always)]
    unsafe fn izero() -> Self::I {
        [0; PANEL]
    }
    #[inline(always)]
    unsafe fn sub(a: Self::I, s: i32) -> Self::I {
        each(|l| a[l] - s)
    }
    #[inline(always)]
    unsafe fn scaled(acc: Self::I, scales: *const u8, signed: bool, v: Self::I) -> Self::I {
        each(|l| {
            let b = *scales.add(l);
            let sc = if signed {
                i32::from(b as i8)
            } else {
                i32::from(b)
            };
            acc[l] + sc * v[l]
        })
    }
    #[inline(always)]
    unsafe fn shl_add(hi: Self::I, shift: u32, lo: Self::I) -> Self::I {
        each(|l| (hi[l] << shift) + lo[l])
    }
    #[inline(always)]
    unsafe fn fzero() -> Self::F {
        [0.0; PANEL]
    }
    #[inline(always)]
    unsafe fn halves(p: *const u8) -> Self::F {
        each(|l| f16::from_le_bytes([*p.add(2 * l), *p.add(2 * l + 1)]).to_f32())
    }
    #[inline(always)]
    unsafe fn e8m0_halves(p: *const u8) -> Self::F {
        each(|l| e8m0_half(*p.add(2 * l)))
    }
    #[inline(always)]
    unsafe fn mul(a: Self::F, s: f32) -> Self::F {
        each(|l| a[l] * s)
    }
    #[inline(always)]
    unsafe fn fma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F {
        each(|l| a[l].mul_add(i[l] as f32, acc[l]))
    }
    #[inline(always)]
    unsafe fn fnma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F {
        each(|l| (-a[l]).mul_add(i[l] as f32, acc[l]))
    }
    #[inline(always)]
    unsafe fn fma_by(a: Self::F, s: f32, acc: Self::F) -> Self::F {
        each(|l| a[l].mul_add(s, acc[l]))
    }
    #[inline(always)]
    unsafe fn store(a: Self::F) -> [f32; PANEL] {
        a
    }
    #[inline(always)]
    unsafe fn store_at(a: Self::F, p: *mut f32) {
        p.cast::<[f32; PANEL]>().write_unaligned(a)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Simd, PANEL};
    use std::arch::x86_64::*;

    /// AVX-512 with VNNI: a panel in one register.
    pub struct Vnni;

    impl Simd for Vnni {
        type W = __m512i;
        type I = __m512i;
        type F = __m512;
        const OFFSET_BYTES: bool = true;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> __m512i {
            _mm512_loadu_si512(p as *const __m512i)
        }
        #[inline(always)]
        unsafe fn bits(w: __m512i, shift: u32, mask: u8) -> __m512i {
            // 16-bit shifts move bits across bytes only into the positions the mask clears.
            let shifted = _mm512_srl_epi16(w, _mm_cvtsi32_si128(shift as i32));
            _mm512_and_si512(shifted, _mm512_set1_epi8(mask as i8))
        }
        #[inline(always)]
        unsafe fn join(low: __m512i, high: __m512i) -> __m512i {
            _mm512_or_si512(low, _mm512_slli_epi16(high, 4))
        }
        #[inline(always)]
        unsafe fn dot4(acc: __m512i, w: __m512i, x: i32, _bytes: bool) -> __m512i {
            _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(x))
        }
        #[inline(always)]
        unsafe fn izero() -> __m512i {
            _mm512_setzero_si512()
        }
        #[inline(always)]
        unsafe fn sub(a: __m512i, s: i32) -> __m512i {
            _mm512_sub_epi32(a, _mm512_set1_epi32(s))
        }
        #[inline(always)]
        unsafe fn scaled(acc: __m512i, scales: *const u8, signed: bool, v: __m512i) -> __m512i {
            let s = _mm_loadu_si128(scales as *const __m128i);
            let s = if signed {
                _mm512_cvtepi8_epi32(s)
            } else {
                _mm512_cvtepu8_epi32(s)
            };
            _mm512_add_epi32(acc, _mm512_mullo_epi32(s, v))
        }
        #[inline(always)]
        unsafe fn shl_add(hi: __m512i, shift: u32, lo: __m512i) -> __m512i {
            let count = _mm_cvtsi32_si128(shift as i32);
            _mm512_add_epi32(_mm512_sll_epi32(hi, count), lo)
        }
        #[inline(always)]
        unsafe fn fzero() -> __m512 {
            _mm512_setzero_ps()
        }
        #[inline(always)]
        unsafe fn halves(p: *const u8) -> __m512 {
            _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
        }
        #[inline(always)]
        unsafe fn e8m0_halves(p: *const u8) -> __m512 {
            let e = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p as *const __m256i));
            let normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
            let subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x0020_0000), e);
            let small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
            _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal))
        }
        #[inline(always)]
        unsafe fn mul(a: __m512, s: f32) -> __m512 {
            _mm512_mul_ps(a, _mm512_set1_ps(s))
        }
        #[inline(always)]
        unsafe fn fma(a: __m512, i: __m512i, acc: __m512) -> __m512 {
            _mm512_fmadd_ps(a, _mm512_cvtepi32_ps(i), acc)
        }
        #[inline(always)]
        unsafe fn fnma(a: __m512, i: __m512i, acc: __m512) -> __m512 {
            _mm512_fnmadd_ps(a, _mm512_cvtepi32_ps(i), acc)
        }
        #[inline(always)]
        unsafe fn fma_by(a: __m512, s: f32, acc: __m512) -> __m512 {
            _mm512_fmadd_ps(a, _mm512_set1_ps(s), acc)
        }
        #[inline(always)]
        unsafe fn store(a: __m512) -> [f32; PANEL] {
            std::mem::transmute(a)
        }
        #[inline(always)]
        unsafe fn store_at(a: __m512, p: *mut f32) {
            _mm512_storeu_ps(p, a)
        }
    }

    /// AVX2: a panel in two registers (rows 0..8, 8..16).
    pub struct Avx2;

    #[derive(Clone, Copy)]
    pub struct Pair<T>(T, T);

    /// `acc + Σ_{e<4} w[4l+e] · x[e]` per 32-bit lane, by `maddubs` + `madd`: pairs of products
    /// stay below 2^15 (values below 64, or signed bytes for 8-bit values).
    #[inline(always)]
    unsafe fn dot4_half(acc: __m256i, w: __m256i, x: __m256i, bytes: bool) -> __m256i {
        let pairs = if bytes {
            let w = _mm256_xor_si256(w, _mm256_set1_epi8(-128));
            _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w))
        } else {
            _mm256_maddubs_epi16(w, x)
        };
        _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }

    /// `Simd::e8m0_halves` for 8 lanes.
    #[inline(always)]
    unsafe fn e8m0_half8(p: *const u8) -> __m256 {
        let e = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
        let normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        let subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x0020_0000), e);
        let small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small))
    }

    #[inline(always)]
    unsafe fn widen(p: *const u8, signed: bool) -> __m256i {
        let s = _mm_loadl_epi64(p as *const __m128i);
        if signed {
            _mm256_cvtepi8_epi32(s)
        } else {
            _mm256_cvtepu8_epi32(s)
        }
    }

    impl Simd for Avx2 {
        type W = Pair<__m256i>;
        type I = Pair<__m256i>;
        type F = Pair<__m256>;
        // `maddubs` would saturate offset-binary bytes: 8-bit values are multiplied as signed
        // bytes instead.
        const OFFSET_BYTES: bool = false;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> Self::W {
            Pair(
                _mm256_loadu_si256(p as *const __m256i),
                _mm256_loadu_si256(p.add(32) as *const __m256i),
            )
        }
        #[inline(always)]
        unsafe fn bits(w: Self::W, shift: u32, mask: u8) -> Self::W {
            let (count, mask) = (
                _mm_cvtsi32_si128(shift as i32),
                _mm256_set1_epi8(mask as i8),
            );
            Pair(
                _mm256_and_si256(_mm256_srl_epi16(w.0, count), mask),
                _mm256_and_si256(_mm256_srl_epi16(w.1, count), mask),
            )
        }
        #[inline(always)]
        unsafe fn join(low: Self::W, high: Self::W) -> Self::W {
            Pair(
                _mm256_or_si256(low.0, _mm256_slli_epi16(high.0, 4)),
                _mm256_or_si256(low.1, _mm256_slli_epi16(high.1, 4)),
            )
        }
        #[inline(always)]
        unsafe fn dot4(acc: Self::I, w: Self::W, x: i32, bytes: bool) -> Self::I {
            let x = _mm256_set1_epi32(x);
            Pair(
                dot4_half(acc.0, w.0, x, bytes),
                dot4_half(acc.1, w.1, x, bytes),
            )
        }
        #[inline(always)]
        unsafe fn izero() -> Self::I {
            Pair(_mm256_setzero_si256(), _mm256_setzero_si256())
        }
        #[inline(always)]
        unsafe fn sub(a: Self::I, s: i32) -> Self::I {
            let s = _mm256_set1_epi32(s);
            Pair(_mm256_sub_epi32(a.0, s), _mm256_sub_epi32(a.1, s))
        }
        #[inline(always)]
        unsafe fn scaled(acc: Self::I, scales: *const u8, signed: bool, v: Self::I) -> Self::I {
            Pair(
                _mm256_add_epi32(acc.0, _mm256_mullo_epi32(widen(scales, signed), v.0)),
                _mm256_add_epi32(acc.1, _mm256_mullo_epi32(widen(scales.add(8), signed), v.1)),
            )
        }
        #[inline(always)]
        unsafe fn shl_add(hi: Self::I, shift: u32, lo: Self::I) -> Self::I {
            let count = _mm_cvtsi32_si128(shift as i32);
            Pair(
                _mm256_add_epi32(_mm256_sll_epi32(hi.0, count), lo.0),
                _mm256_add_epi32(_mm256_sll_epi32(hi.1, count), lo.1),
            )
        }
        #[inline(always)]
        unsafe fn fzero() -> Self::F {
            Pair(_mm256_setzero_ps(), _mm256_setzero_ps())
        }
        #[inline(always)]
        unsafe fn halves(p: *const u8) -> Self::F {
            Pair(
                _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)),
                _mm256_cvtph_ps(_mm_loadu_si128(p.add(16) as *const __m128i)),
            )
        }
        #[inline(always)]
        unsafe fn e8m0_halves(p: *const u8) -> Self::F {
            Pair(e8m0_half8(p), e8m0_half8(p.add(16)))
        }
        #[inline(always)]
        unsafe fn mul(a: Self::F, s: f32) -> Self::F {
            let s = _mm256_set1_ps(s);
            Pair(_mm256_mul_ps(a.0, s), _mm256_mul_ps(a.1, s))
        }
        #[inline(always)]
        unsafe fn fma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F {
            Pair(
                _mm256_fmadd_ps(a.0, _mm256_cvtepi32_ps(i.0), acc.0),
                _mm256_fmadd_ps(a.1, _mm256_cvtepi32_ps(i.1), acc.1),
            )
        }
        #[inline(always)]
        unsafe fn fnma(a: Self::F, i: Self::I, acc: Self::F) -> Self::F {
            Pair(
                _mm256_fnmadd_ps(a.0, _mm256_cvtepi32_ps(i.0), acc.0),
                _mm256_fnmadd_ps(a.1, _mm256_cvtepi32_ps(i.1), acc.1),
            )
        }
        #[inline(always)]
        unsafe fn fma_by(a: Self::F, s: f32, acc: Self::F) -> Self::F {
            let s = _mm256_set1_ps(s);
            Pair(
                _mm256_fmadd_ps(a.0, s, acc.0),
                _mm256_fmadd_ps(a.1, s, acc.1),
            )
        }
        #[inline(always)]
        unsafe fn store(a: Self::F) -> [f32; PANEL] {
            std::mem::transmute((a.0, a.1))
        }
        #[inline(always)]
        unsafe fn store_at(a: Self::F, p: *mut f32) {
            _mm256_storeu_ps(p, a.0);
            _mm256_storeu_ps(p.add(8), a.1);
        }
    }
}

/// Products of one panel (`panel`: its `blocks` packed blocks) with `R` activation rows: 16
/// outputs each.
///
/// # Safety
/// The CPU must support `S`'s instructions; `panel` holds `blocks` packed blocks of `layout`,
/// `acts` has as many blocks and the rows `first..first + R`.
#[inline(always)]
unsafe fn panel<S: Simd, const R: usize>(
    layout: &Layout,
    off: &Offsets,
    panel: &[u8],
    blocks: usize,
    acts: &ActRows,
    first: usize,
) -> [S::F; R] {
    let (subs, groups_per_sub) = (layout.subs(), layout.sub / 4);
    let per_plane = layout.groups_per_plane();
    let width = layout.bits.saturating_sub(4);
    let bytes = layout.bits == 8;
    // Offset-binary bytes multiplied as signed need no correction.
    let correct = layout.zero != 0 && (S::OFFSET_BYTES || !bytes);
    let mut acc = [S::fzero(); R];
    debug_assert!(panel.len() >= off.panel(blocks));
    debug_assert!(first + R <= acts.t && acts.q.len() == acts.t * blocks * layout.block);
    // The rows' numbers of block `b` start at `b · t + first` (`ActRows`).
    let t = acts.t;
    for b in 0..blocks {
        let row0 = b * t + first;
        let q = acts.q.as_ptr().add(row0 * layout.block);
        let (h, v) = (
            panel.as_ptr().add(off.header(b)),
            panel.as_ptr().add(off.values(b)),
        );
        let mut total = [S::izero(); R];
        for j in 0..subs {
            // An empty asm statement is a boundary the compiler does not schedule across: each
            // sub-block of a k-quant block stays whole and in address order. Without it, LLVM
            // interleaved the unrolled sub-blocks out of order (seen in the disassembly: the
            // sub-blocks' lines read downwards, block after block), and decode, which reads every
            // weight once, ran slower: Qwen2.5-1.5B Q4_K_M 13.0–13.4 tok/s without, 16.5–18.0
            // with (2 threads, `bench --only int8`). The instruction changes no value. Only
            // k-quants get it: for the one-sub-block types (Q4_0 … Q8_0) it showed no gain
            // (SmolLM2 Q4_1 decode, if anything, slower).
            #[cfg(target_arch = "x86_64")]
            if subs > 1 {
                std::arch::asm!("", options(nomem, nostack, preserves_flags));
            }
            let mut sum = [S::izero(); R];
            for g in j * groups_per_sub..(j + 1) * groups_per_sub {
                // One row (decode) reads each weight line once, and too little work per line
                // keeps too few reads in flight: ask for the lines ahead.
                if R == 1 && (bytes || g % 2 == 0) {
                    prefetch(v.wrapping_add(layout.low_at(g) + PREFETCH));
                    if per_plane > 0 && g % per_plane == 0 {
                        prefetch(v.wrapping_add(layout.plane_at(g) + PREFETCH));
                    }
                }
                let low = S::load(v.add(layout.low_at(g)));
                let w = if bytes {
                    low
                } else {
                    let low = S::bits(low, 4 * (g % 2) as u32, 0xF);
                    match per_plane {
                        0 => low,
                        _ => {
                            let plane = S::load(v.add(layout.plane_at(g)));
                            let shift = width * (g % per_plane) as u32;
                            S::join(low, S::bits(plane, shift, (1 << width) - 1))
                        }
                    }
                };
                for (r, sum) in sum.iter_mut().enumerate() {
                    let x = q.add(r * layout.block + 4 * g) as *const i32;
                    *sum = S::dot4(*sum, w, x.read_unaligned(), bytes);
                }
            }
            let corr = acts.corr.as_ptr().add((b * subs + j) * t + first);
            for r in 0..R {
                if correct {
                    sum[r] = S::sub(sum[r], *corr.add(r));
                }
                match layout.scales {
                    Scales::None => total[r] = sum[r],
                    Scales::WithMins => {
                        total[r] = S::scaled(total[r], h.add(off.sc + j * PANEL), false, sum[r])
                    }
                    Scales::Signed => {
                        total[r] = S::scaled(total[r], h.add(off.sc + j * PANEL), true, sum[r])
                    }
                }
            }
        }
        let d = match layout.scale {
            Scale::Half => S::halves(h),
            Scale::E8m0 => S::e8m0_halves(h),
        };
        let (dx, sx) = (acts.d.as_ptr().add(row0), acts.s.as_ptr().add(row0));
        for r in 0..R {
            acc[r] = S::fma(S::mul(d, *dx.add(r)), total[r], acc[r]);
        }
        match layout.second {
            Second::None => {}
            Second::Offset => {
                let m = S::halves(h.add(off.second));
                for (r, acc) in acc.iter_mut().enumerate() {
                    *acc = S::fma_by(m, *sx.add(r), *acc);
                }
            }
            Second::Min => {
                // `M = Σ_j min_j · Σx_j`, as `64 · Σ_j min_j · hi_j + Σ_j min_j · lo_j` (`ActRows`).
                let (mut hi, mut lo) = ([S::izero(); R], [S::izero(); R]);
                for k in 0..subs / 4 {
                    let w = S::load(h.add(off.min + k * GROUP_BYTES));
                    let at = (b * subs / 4 + k) * t + first;
                    let (mh, ml) = (acts.mins_hi.as_ptr().add(at), acts.mins_lo.as_ptr().add(at));
                    for r in 0..R {
                        hi[r] = S::dot4(hi[r], w, *mh.add(r), false);
                        lo[r] = S::dot4(lo[r], w, *ml.add(r), false);
                    }
                }
                let dmin = S::halves(h.add(off.second));
                for r in 0..R {
                    let mins = S::shl_add(hi[r], 6, lo[r]);
                    acc[r] = S::fnma(S::mul(dmin, *dx.add(r)), mins, acc[r]);
                }
            }
        }
    }
    acc
}

/// How far ahead of its reads a one-row product asks for weight lines, in bytes. Measured in whole
/// decodes (`bench --only int8 --tokens 16
/// --decode 64 --reps 3`, 2 threads), the distance set at run time in a scratch build and the
/// settings interleaved round by round, tok/s averaged over the rounds (3–4), 384 → 4096:
/// Qwen2.5-Coder-1.5B Q4_K_M 34.5 → 41.8 and 37.5 → 42.9 (two sets of 4 rounds); the Qwen3-4B
/// shape 15.8 → 18.7; the Phi-4-mini shape 15.2 → 17.4; SmolLM2 Q4_1 298 → 363; Qwen2.5-0.5B
/// 99 → 105. Side by side, 6144 was not better overall (1.5B 38.7 against 39.4, 0.5B 92.2
/// against 95.1, SmolLM2 362 against 339), 8192 averaged below 4096 on the 4B shapes (16.3 and
/// 17.1 against 18.7 and 17.4), and 2048 fell between 384 and 4096. The 384 it
/// replaces had been chosen with `examples/kernel_bandwidth` on 4 KiB pages, before the packed
/// weights were given huge pages: there, 512 and 768 were slower than 384.
const PREFETCH: usize = 4096;

/// A hint to bring the line of `p` into the cache; no effect on any value, and no fault
/// whatever `p` is.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The outputs `rows × cols` of `x · wᵀ` into `out` (`n` columns), with the layout of `w`'s
/// type as compile-time constants (one copy of the kernel per type and path: shifts and loop
/// bounds become immediates).
///
/// # Safety
/// As `panel`; `rows × cols` lies inside `out`, `cols.start` is a multiple of `PANEL`.
#[inline(always)]
unsafe fn tile<S: Simd>(
    w: &QMatrix,
    acts: &ActRows,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    macro_rules! by_type {
        ($($ty:ident),*) => {
            match w.layout.ty {
                $(GgmlType::$ty => {
                    const LAYOUT: Layout = Layout::of(GgmlType::$ty).unwrap();
                    tile_of::<S>(&LAYOUT, w, acts, out, n, rows, cols)
                })*
                GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => {
                    unreachable!("QMatrix::new admits only types with integer kernels")
                }
            }
        };
    }
    by_type!(Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4K, Q5K, Q6K, Mxfp4)
}

/// `tile` for one layout: panel by panel, up to `ROWS` activation rows at a time.
///
/// # Safety
/// As `tile`.
#[inline(always)]
unsafe fn tile_of<S: Simd>(
    layout: &Layout,
    w: &QMatrix,
    acts: &ActRows,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    let off = layout.offsets();
    let blocks = w.cols / layout.block;
    let panel_bytes = off.panel(blocks);
    let packed = w.packed();
    for p in cols.start / PANEL..cols.end.div_ceil(PANEL) {
        let bytes = &packed[p * panel_bytes..][..panel_bytes];
        let lanes = (cols.end - p * PANEL).min(PANEL);
        let mut r = rows.start;
        while r < rows.end {
            let left = rows.end - r;
            let put = |i: usize, v: &S::F| {
                let to = out.add((r + i) * n + p * PANEL);
                // A whole panel as a vector store; a copy of a variable length, even where it is
                // 16, compiles to a call of `memcpy`.
                match lanes {
                    PANEL => S::store_at(*v, to),
                    _ => std::ptr::copy_nonoverlapping(S::store(*v).as_ptr(), to, lanes),
                }
            };
            // `panel` over the next `$n` rows, each output row put in place.
            macro_rules! rows {
                ($n:expr) => {{
                    let outs = panel::<S, { $n }>(layout, &off, bytes, blocks, acts, r);
                    outs.iter().enumerate().for_each(|(i, v)| put(i, v));
                    $n
                }};
            }
            let take = match left {
                ROWS.. => rows!(ROWS),
                4.. => rows!(4),
                2.. => rows!(2),
                _ => rows!(1),
            };
            r += take;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile_vnni(
    w: &QMatrix,
    acts: &ActRows,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    tile::<x86::Vnni>(w, acts, out, n, rows, cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile_avx2(
    w: &QMatrix,
    acts: &ActRows,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    tile::<x86::Avx2>(w, acts, out, n, rows, cols)
}

/// The portable path with the scalar FMA instruction (`kernels::portable_fma`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn tile_portable_fma(
    w: &QMatrix,
    acts: &ActRows,
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    tile::<Portable>(w, acts, out, n, rows, cols)
}

/// The integer kernels' multiply-add peak on this CPU, for `deltalogic bench`: the inner step
/// of `panel` (`Simd::dot4`: 4 values of 16 weight rows against 4 broadcast activation bytes) on
/// independent sums, as many as `panel`'s widest call holds, on each of `threads` threads at
/// once. Multiply-adds per second.
pub fn peak_macs(threads: usize) -> f64 {
    const STEPS: usize = 1 << 23;
    let path = paths()[0];
    let start = std::sync::Barrier::new(threads);
    let t = std::time::Instant::now();
    let sink: f32 = std::thread::scope(|s| {
        let runs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    // SAFETY: `paths` offers only paths whose instructions were detected.
                    unsafe {
                        match path {
                            #[cfg(target_arch = "x86_64")]
                            Path::Vnni => dots_vnni(STEPS),
                            #[cfg(target_arch = "x86_64")]
                            Path::Avx2 => dots_avx2(STEPS),
                            _ => dots::<Portable>(STEPS),
                        }
                    }
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).sum()
    });
    let seconds = t.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    (threads * STEPS * ROWS * 4 * PANEL) as f64 / seconds
}

/// `steps` rounds of `ROWS` independent `dot4`s, folded into one number so that none is left
/// out.
#[inline(always)]
unsafe fn dots<S: Simd>(steps: usize) -> f32 {
    let weights = [0x35u8; GROUP_BYTES];
    let w = S::load(weights.as_ptr());
    let x: [i32; ROWS] = std::array::from_fn(|i| std::hint::black_box(i as i32 * 0x0101_0101));
    let mut sums = [S::izero(); ROWS];
    for _ in 0..steps {
        for (s, &x) in sums.iter_mut().zip(&x) {
            *s = S::dot4(*s, w, x, false);
        }
    }
    // 16 halves of 1.0 (0x3C00, little-endian).
    let ones = [0x00u8, 0x3C].repeat(PANEL);
    let mut acc = S::fzero();
    for s in sums {
        acc = S::fma(S::halves(ones.as_ptr()), s, acc);
    }
    S::store(acc).iter().sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn dots_vnni(steps: usize) -> f32 {
    dots::<x86::Vnni>(steps)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dots_avx2(steps: usize) -> f32 {
    dots::<x86::Avx2>(steps)
}

/// The vector units the integer kernels have a path for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Vnni,
    Avx2,
    Portable,
}

/// The paths this CPU can run, fastest first (the environment switches of `kernels::isa`
/// apply).
fn paths() -> Vec<Path> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let isa = isa();
        if isa == Isa::Avx512 && has!("avx512vnni") && has!("avx512bw") && has!("f16c") {
            out.push(Path::Vnni);
        }
        if isa != Isa::Portable && has!("avx2") && has!("fma") && has!("f16c") {
            out.push(Path::Avx2);
        }
    }
    out.push(Path::Portable);
    out
}

/// The activation rows of a product, quantised on first use for each layout that multiplies
/// them: the parts of a stacked matrix (q, k and v; gate and up) usually share one.
pub struct Activations<'a> {
    x: &'a [f32],
    quantised: Vec<(Layout, ActRows)>,
}

impl<'a> Activations<'a> {
    pub fn new(x: &'a [f32]) -> Activations<'a> {
        Activations {
            x,
            quantised: Vec::new(),
        }
    }

    fn rows(&mut self, layout: &Layout, cols: usize) -> &ActRows {
        let at = match self.quantised.iter().position(|(l, _)| l == layout) {
            Some(at) => at,
            None => {
                self.quantised
                    .push((*layout, quantize(self.x, cols, layout)));
                self.quantised.len() - 1
            }
        };
        &self.quantised[at].1
    }
}

/// `x · wᵀ` with `x` quantised per block (module docs), `x: [t, cols]`, written into the columns
/// `first..first + w.rows()` of `out: [t, n]`.
pub fn qmatmul_t_into(
    acts: &mut Activations,
    w: &QMatrix,
    out: &mut [f32],
    n: usize,
    first: usize,
) {
    assert!(acts.x.len().is_multiple_of(w.cols) && out.len() == acts.x.len() / w.cols * n);
    if !w.integer {
        let part = f32_product(acts.x, w);
        put_columns(&part, w.rows, out, n, first);
        return;
    }
    static PATH: OnceLock<Path> = OnceLock::new();
    let path = *PATH.get_or_init(|| paths()[0]);
    product(acts.rows(&w.layout, w.cols), w, path, out, n, first);
}

/// `x · wᵀ` in the f32 mode: every output is `kernels::matmul_t`'s canonical dot product of
/// `x`'s row and `w`'s dequantised row, so the bits are those of the f32 product, without an f32
/// copy of the matrix. Short runs (decode) dequantise a tile per task; longer ones dequantise
/// `F32_CHUNK` rows at a time, once, and multiply every activation row against them.
fn f32_product(x: &[f32], w: &QMatrix) -> Vec<f32> {
    let (t, n, k) = (x.len() / w.cols, w.rows, w.cols);
    let rb = w.row_bytes();
    let rows_of = |rows: Range<usize>, buf: &mut [f32]| {
        dequantize(w.layout.ty, &w.bytes[rows.start * rb..rows.end * rb], buf)
    };
    if t <= TASK_ROWS {
        return matmul_t_rows(x, n, k, rows_of);
    }
    let mut out = vec![0f32; t * n];
    let mut buf = vec![0f32; F32_CHUNK * k];
    for first in (0..n).step_by(F32_CHUNK) {
        let m = F32_CHUNK.min(n - first);
        buf[..m * k]
            .par_chunks_mut(k)
            .enumerate()
            .for_each(|(i, row)| rows_of(first + i..first + i + 1, row));
        let part = matmul_t(x, &buf[..m * k], k);
        put_columns(&part, m, &mut out, n, first);
    }
    out
}

/// The integer product of `acts` (quantised for `w`'s layout) and `w` on `path`, into the
/// columns from `first` of `out: [t, n]`.
fn product(acts: &ActRows, w: &QMatrix, path: Path, out: &mut [f32], n: usize, first: usize) {
    w.packed();
    par_tiles(
        out,
        n,
        first..first + w.rows,
        (TASK_ROWS, TASK_COLS),
        |out, rows, cols| {
            // SAFETY: tiles are disjoint, inside `out` and start at multiples of `TASK_COLS` from
            // `out`; `paths` offers only paths whose instructions were detected.
            unsafe {
                match path {
                    #[cfg(target_arch = "x86_64")]
                    Path::Vnni => tile_vnni(w, acts, out, n, rows, cols),
                    #[cfg(target_arch = "x86_64")]
                    Path::Avx2 => tile_avx2(w, acts, out, n, rows, cols),
                    #[cfg(target_arch = "x86_64")]
                    _ if portable_fma() => tile_portable_fma(w, acts, out, n, rows, cols),
                    _ => tile::<Portable>(w, acts, out, n, rows, cols),
                }
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::format::quant::{integers, IntBlock};
    use crate::model::numerics::kernels;

    const TYPES: [GgmlType; 9] = GgmlType::QUANTISED;

    /// Random blocks with small positive f16 scales (and offsets or mins where the type has
    /// them; MXFP4 scales 2^−8 … 2^7), so that products stay finite.
    fn blocks(ty: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
        let mut s = 12345u32;
        let mut next = || {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (s >> 16) as u8
        };
        let mut out = Vec::new();
        for _ in 0..rows * cols / ty.block_len() {
            let mut b: Vec<u8> = (0..ty.block_bytes()).map(|_| next()).collect();
            // The high byte of each f16 scale: `d` small and positive, a second scale (`m`,
            // `dmin`) small and negative.
            for (&at, high) in ty.half_fields().iter().zip([0x20, 0xA0]) {
                b[at + 1] = high | (b[at + 1] & 0x07);
            }
            if ty == GgmlType::Mxfp4 {
                b[0] = 120 + b[0] % 16;
            }
            out.extend(b);
        }
        out
    }

    fn half(b: [u8; 2]) -> f32 {
        f16::from_le_bytes(b).to_f32()
    }

    /// A block's `d` as `layout` stores it.
    fn scale(layout: &Layout, d: [u8; 2]) -> f32 {
        match layout.scale {
            Scale::Half => half(d),
            Scale::E8m0 => e8m0_half(d[0]),
        }
    }

    /// The module docs' definition, written out from the file's blocks (not the packed form).
    fn definition(ty: GgmlType, bytes: &[u8], cols: usize, x: &[f32], c: usize) -> f32 {
        let layout = Layout::of(ty).unwrap();
        // One row: its blocks one after another, as a row alone is laid out.
        let a = quantize(x, cols, &layout);
        let sum_of = |b: usize, j: usize| -> i32 {
            let e0 = b * layout.block + j * layout.sub;
            a.q[e0..e0 + layout.sub].iter().map(|&v| i32::from(v)).sum()
        };
        let (nb, bb) = (cols / layout.block, ty.block_bytes());
        let mut int = IntBlock::default();
        let mut acc = 0f32;
        for b in 0..nb {
            integers(ty, &bytes[(c * nb + b) * bb..][..bb], &mut int);
            let (mut total, mut mins) = (0i32, 0i32);
            for j in 0..layout.subs() {
                let e0 = b * layout.block + j * layout.sub;
                let sum: i32 = (0..layout.sub)
                    .map(|e| i32::from(int.u[j * layout.sub + e]) * i32::from(a.q[e0 + e]))
                    .sum::<i32>()
                    - layout.zero * sum_of(b, j);
                match layout.scales {
                    Scales::None => total = sum,
                    Scales::WithMins => {
                        total += i32::from(int.sc[j]) * sum;
                        mins += i32::from(int.min[j]) * sum_of(b, j);
                    }
                    Scales::Signed => total += i32::from(int.sc[j] as i8) * sum,
                }
            }
            acc = (scale(&layout, int.d) * a.d[b]).mul_add(total as f32, acc);
            match layout.second {
                Second::None => {}
                Second::Offset => acc = half(int.second).mul_add(a.s[b], acc),
                Second::Min => acc = (-(half(int.second) * a.d[b])).mul_add(mins as f32, acc),
            }
        }
        acc
    }

    /// Every path against the definition, to the bit, for a row count that leaves a partial
    /// panel and activation row counts that take every kernel width; and the definition
    /// against f32 arithmetic on the dequantised weights (close, not equal: 8-bit activations).
    #[test]
    fn integer_products_follow_the_definition_on_every_path() {
        for ty in TYPES {
            let block = Layout::of(ty).unwrap().block;
            let (rows, cols, t) = (37, 2 * block, 7);
            let bytes = blocks(ty, rows, cols);
            let w = QMatrix::new(ty, cols, BlockBytes::Owned(bytes.clone()), true);
            let x: Vec<f32> = (0..t * cols)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 13.0)
                .collect();
            let mut deq = vec![0f32; rows * cols];
            dequantize(ty, &bytes, &mut deq);
            for path in paths() {
                let mut got = vec![0f32; t * rows];
                let acts = quantize(&x, cols, &w.layout);
                product(&acts, &w, path, &mut got, rows, 0);
                for r in 0..t {
                    let xr = &x[r * cols..][..cols];
                    for c in 0..rows {
                        let want = definition(ty, &bytes, cols, xr, c);
                        assert_eq!(
                            got[r * rows + c].to_bits(),
                            want.to_bits(),
                            "{ty:?} {path:?} row {r} col {c}: {} vs {want}",
                            got[r * rows + c]
                        );
                        let wr = &deq[c * cols..][..cols];
                        let exact: f32 = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
                        // Rounding moves each activation by at most half its block's step
                        // (amax / 254); twice that bound also covers the f16 scales.
                        let bound: f32 = (0..cols)
                            .map(|j| {
                                let xb = &xr[j / block * block..][..block];
                                let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
                                wr[j].abs() * amax / 127.0
                            })
                            .sum();
                        assert!(
                            (want - exact).abs() <= bound + 1e-3,
                            "{ty:?}: {want} vs {exact} (bound {bound})"
                        );
                    }
                }
            }
            assert_eq!(w.row(5), deq[5 * cols..6 * cols], "{ty:?}");
        }
    }

    /// Every MXFP4 scale byte, subnormal (0, 1) to the largest (255, refused when a file is
    /// loaded but turned into 2^127 by llama.cpp's arithmetic), on every path as the definition
    /// turns it (`quant::e8m0_half`): row `r` of the matrix has `e = r`. The activations are
    /// small so that most products stay finite; the largest scales overflow alike everywhere.
    #[test]
    fn every_mxfp4_scale_multiplies_alike_on_every_path() {
        let ty = GgmlType::Mxfp4;
        let (rows, cols, t) = (256, 32, 3);
        let mut bytes = blocks(ty, rows, cols);
        for (r, b) in bytes.chunks_exact_mut(ty.block_bytes()).enumerate() {
            b[0] = r as u8;
        }
        let w = QMatrix::new(ty, cols, BlockBytes::Owned(bytes.clone()), true);
        let x: Vec<f32> = (0..t * cols)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 3328.0)
            .collect();
        for path in paths() {
            let mut got = vec![0f32; t * rows];
            let acts = quantize(&x, cols, &w.layout);
            product(&acts, &w, path, &mut got, rows, 0);
            for r in 0..t {
                for c in 0..rows {
                    let want = definition(ty, &bytes, cols, &x[r * cols..][..cols], c);
                    assert_eq!(
                        got[r * rows + c].to_bits(),
                        want.to_bits(),
                        "{path:?} row {r}, e = {c}"
                    );
                }
            }
        }
    }

    /// In the f32 mode, both ways of multiplying (a tile per task for short runs, a chunk of
    /// rows once for long ones) give the bits of the f32 product of the dequantised matrix.
    #[test]
    fn f32_products_give_the_bits_of_the_dequantised_product() {
        for ty in TYPES {
            let block = Layout::of(ty).unwrap().block;
            let (rows, cols) = (F32_CHUNK + 37, block);
            let bytes = blocks(ty, rows, cols);
            let w = QMatrix::new(ty, cols, BlockBytes::Owned(bytes.clone()), false);
            let mut deq = vec![0f32; rows * cols];
            dequantize(ty, &bytes, &mut deq);
            for t in [1, TASK_ROWS + 3] {
                let x: Vec<f32> = (0..t * cols)
                    .map(|i| ((i * 31 % 97) as f32 - 48.0) / 13.0)
                    .collect();
                let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
                let mut got = vec![0f32; t * rows];
                qmatmul_t_into(&mut Activations::new(&x), &w, &mut got, rows, 0);
                assert_eq!(
                    bits(got),
                    bits(matmul_t(&x, &deq, cols)),
                    "{ty:?}, {t} rows"
                );
            }
        }
    }

    /// A non-finite scale is found where the dequantised weights first turn non-finite.
    #[test]
    fn a_non_finite_scale_is_found_at_its_first_weight() {
        for ty in TYPES {
            let block = Layout::of(ty).unwrap().block;
            let (rows, cols) = (5, 2 * block);
            let mut bytes = blocks(ty, rows, cols);
            let at = 3 * ty.block_bytes() + if ty == GgmlType::Q6K { 208 } else { 0 };
            if ty == GgmlType::Mxfp4 {
                // E8M0's NaN.
                bytes[at] = 255;
            } else {
                bytes[at..at + 2].copy_from_slice(&f16::INFINITY.to_le_bytes());
            }
            let w = QMatrix::new(ty, cols, BlockBytes::Owned(bytes.clone()), true);
            let mut deq = vec![0f32; rows * cols];
            dequantize(ty, &bytes, &mut deq);
            let first = deq.iter().position(|v| !v.is_finite()).unwrap();
            let found = w.first_non_finite().unwrap();
            assert_eq!(found.0, first, "{ty:?}");
            assert_eq!(found.1.to_bits(), deq[first].to_bits(), "{ty:?}");
            let clean = QMatrix::new(ty, cols, BlockBytes::Owned(blocks(ty, rows, cols)), true);
            assert_eq!(clean.first_non_finite(), None, "{ty:?}");
        }
    }

    /// The rounding trick is round-half-to-even over the 8-bit range, halves included, on
    /// every vector unit.
    #[test]
    fn nearest_rounds_half_to_even() {
        let x: Vec<f32> = (-16_256..16_256).map(|i| i as f32 / 128.0).collect();
        let want: Vec<i8> = x.iter().map(|v| v.round_ties_even() as i8).collect();
        let mut q = vec![0i8; x.len()];
        unsafe { scaled_nearest::<kernels::Portable>(&x, 1.0, &mut q) };
        assert_eq!(q, want);
        let (x, s, q) = (&x, 1.0, &mut q);
        q.fill(0);
        on_lanes!(scaled_nearest(x: &[f32], s: f32, q: &mut [i8]) -> ());
        assert_eq!(*q, want);
    }

    /// llama.cpp's Q8_K on a block with a negative extreme: scale `max / −127`, values in
    /// −127..=127, the extreme itself at −127.
    #[test]
    fn q8_k_follows_llama_cpp() {
        let x: Vec<f32> = (0..256).map(|i| (i as f32 - 200.0) / 7.0).collect();
        let mut q = [0i8; 256];
        let d = unsafe { quantize_q8_k::<kernels::Portable>(&x, &mut q) };
        assert_eq!(d, 1.0 / (-127.0 / x[0]));
        assert_eq!(q[0], -127);
        assert!(q.iter().all(|&v| v >= -127));
        for (&q, &v) in q.iter().zip(&x) {
            assert_eq!(q, ((-127.0 / x[0]) * v).round_ties_even() as i8);
        }
    }
}
