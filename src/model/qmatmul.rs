//! The integer numerics mode: GGUF weights stay in their block format and multiply activations
//! quantised to 8 bits per block of 32, as llama.cpp does (Q8_1 for Q4_1 weights, Q8_0 for Q5_0
//! and Q8_0 weights).
//!
//! Every product has one order of operations on every path. Within a block the 32 integer
//! products are summed in 8 groups of 4 (elements `4l..4l+4` form group `l`), exactly: AVX2's
//! `maddubs`+`madd` and VNNI's `dpbusd` both produce those 8 sums. Each group sum, an integer
//! below 2^16 and so exact in f32, is then accumulated over the blocks into float lane `l` with
//! `lane = fma(d_w * d_x, group, lane)`, block by block; the 8 lanes are added in a fixed tree,
//! then Q4_1's offset terms `m_w * s_x`, summed block by block. Threads split outputs, never sums.
//!
//! Weights of the other block types (the k-quants) stay in their blocks too and are multiplied
//! as f32, a tile of rows dequantised at a time (`kernels::matmul_t_rows`): the bits of the f32
//! product, without an f32 copy of the matrix.

use std::ops::Range;

use half::f16;
use rayon::prelude::*;

use super::gguf::BlockBytes;
use super::kernels::{isa, matmul_t_rows, par_tiles, tree_sum, Isa};
use super::quant::{dequantize, GgmlType};

const QK: usize = 32;
const GROUPS: usize = 8;
const TASK_ROWS: usize = 64;
const TASK_COLS: usize = 16;

/// The weight types that have integer kernels.
fn integer(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q8_0)
}

/// Whether a `[_, cols]` matrix of `ty` is kept in its blocks: the quantised types whose blocks
/// tile a row.
pub fn keeps(ty: GgmlType, cols: usize) -> bool {
    ty.block_len() > 1 && cols.is_multiple_of(ty.block_len())
}

/// A weight matrix `[rows, cols]` kept in its GGUF block format.
pub struct QMatrix {
    ty: GgmlType,
    cols: usize,
    bytes: BlockBytes,
}

impl QMatrix {
    /// `bytes` holds `rows` rows of `cols / block_len` blocks of `ty`, which `keeps`.
    pub fn new(ty: GgmlType, cols: usize, bytes: BlockBytes) -> QMatrix {
        assert!(keeps(ty, cols));
        assert!(bytes
            .len()
            .is_multiple_of(cols / ty.block_len() * ty.block_bytes()));
        QMatrix { ty, cols, bytes }
    }

    pub fn rows(&self) -> usize {
        self.bytes.len() / self.row_bytes()
    }

    /// Row `r` dequantised.
    pub fn row(&self, r: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.cols];
        dequantize(
            self.ty,
            &self.bytes[r * self.row_bytes()..][..self.row_bytes()],
            &mut out,
        );
        out
    }

    /// The first non-finite weight (its index, row-major, and value), found row by row.
    pub fn first_non_finite(&self) -> Option<(usize, f32)> {
        (0..self.rows()).into_par_iter().find_map_first(|r| {
            let row = self.row(r);
            let c = row.iter().position(|v| !v.is_finite())?;
            Some((r * self.cols + c, row[c]))
        })
    }

    fn row_bytes(&self) -> usize {
        self.cols / self.ty.block_len() * self.ty.block_bytes()
    }
}

/// One block of an activation row: the scale, llama.cpp's `d * Σq` (used by Q4_1), the values.
#[derive(Clone, Copy)]
struct ActBlock {
    d: f32,
    s: f32,
    q: [i8; QK],
}

/// llama.cpp's x86 `quantize_row_q8_0` / `quantize_row_q8_1` (the ones its CPU matmuls run):
/// scale `amax / 127` stored as f16, values `x * (127 / amax)` rounded half to even.
fn quantize(x: &[f32]) -> Vec<ActBlock> {
    x.chunks_exact(QK)
        .map(|b| {
            let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
            let mut q = [0i8; QK];
            let mut sum = 0i32;
            for (q, &v) in q.iter_mut().zip(b) {
                *q = (v * id).round_ties_even() as i8;
                sum += i32::from(*q);
            }
            ActBlock {
                d: f16::from_f32(d).to_f32(),
                s: f16::from_f32(sum as f32 * d).to_f32(),
                q,
            }
        })
        .collect()
}

/// A weight block unpacked: scale, offset (Q4_1's `m`, else 0) and the 32 integer values.
struct WBlock {
    d: f32,
    m: f32,
    q: [i8; QK],
}

fn half(b: &[u8]) -> f32 {
    f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// The integer values of one block, in the layouts of `quant` (low nibbles are values 0..16).
fn unpack(ty: GgmlType, b: &[u8]) -> WBlock {
    let mut q = [0i8; QK];
    match ty {
        GgmlType::Q8_0 => {
            for (q, &v) in q.iter_mut().zip(&b[2..34]) {
                *q = v as i8;
            }
            WBlock {
                d: half(b),
                m: 0.0,
                q,
            }
        }
        GgmlType::Q4_1 => {
            for (j, &v) in b[4..20].iter().enumerate() {
                q[j] = (v & 0xF) as i8;
                q[j + 16] = (v >> 4) as i8;
            }
            WBlock {
                d: half(b),
                m: half(&b[2..]),
                q,
            }
        }
        GgmlType::Q5_0 => {
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            for (j, &v) in b[6..22].iter().enumerate() {
                let hi0 = ((qh >> j) & 1) << 4;
                let hi1 = ((qh >> (j + 16)) & 1) << 4;
                q[j] = ((v & 0xF) as u32 | hi0) as i8 - 16;
                q[j + 16] = ((v >> 4) as u32 | hi1) as i8 - 16;
            }
            WBlock {
                d: half(b),
                m: 0.0,
                q,
            }
        }
        _ => unreachable!("QMatrix::new admits only supported types"),
    }
}

/// The 8 exact group sums of one block product (module docs).
fn groups(w: &[i8; QK], x: &[i8; QK]) -> [i32; GROUPS] {
    std::array::from_fn(|l| {
        (4 * l..4 * l + 4)
            .map(|j| i32::from(w[j]) * i32::from(x[j]))
            .sum()
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{ActBlock, QMatrix, GROUPS, QK};
    use crate::model::kernels::tree_sum;
    use crate::model::quant::GgmlType;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// A weight block's 32 values as signed bytes (`super::unpack`'s layout), with its scale
    /// and offset.
    #[inline(always)]
    unsafe fn weights(ty: GgmlType, b: &[u8]) -> (__m256i, f32, f32) {
        let nibbles = |qs: *const u8| {
            let qs = _mm_loadu_si128(qs as *const __m128i);
            let low = _mm_set1_epi8(0x0F);
            let lo = _mm_and_si128(qs, low);
            let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), low);
            _mm256_set_m128i(hi, lo)
        };
        match ty {
            GgmlType::Q8_0 => (
                _mm256_loadu_si256(b[2..34].as_ptr() as *const __m256i),
                super::half(b),
                0.0,
            ),
            GgmlType::Q4_1 => (
                nibbles(b[4..20].as_ptr()),
                super::half(b),
                super::half(&b[2..]),
            ),
            GgmlType::Q5_0 => {
                // Byte j takes bit j of `qh` as its fifth bit: spread each bit to its byte,
                // then values are `nibble | bit << 4` minus 16, which is `nibble | 0xF0` (as
                // i8) where the bit is clear and the nibble where it is set.
                let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                let spread = _mm256_shuffle_epi8(
                    _mm256_set1_epi32(qh as i32),
                    _mm256_set_epi64x(
                        0x0303_0303_0303_0303,
                        0x0202_0202_0202_0202,
                        0x0101_0101_0101_0101,
                        0,
                    ),
                );
                let bit = _mm256_set1_epi64x(0x7FBF_DFEF_F7FB_FDFEu64 as i64);
                let set = _mm256_cmpeq_epi8(_mm256_or_si256(spread, bit), _mm256_set1_epi8(-1));
                let q = _mm256_or_si256(
                    nibbles(b[6..22].as_ptr()),
                    _mm256_andnot_si256(set, _mm256_set1_epi8(0xF0u8 as i8)),
                );
                (q, super::half(b), 0.0)
            }
            _ => unreachable!("QMatrix::new admits only supported types"),
        }
    }

    /// The 8 exact group sums of a block product: `|w|` as unsigned bytes and `x` carrying
    /// `w`'s sign give unsigned-by-signed products equal to `w * x` (|w| ≤ 128, |x| ≤ 127, so
    /// no pair of products saturates 16 bits); VNNI's `dpbusd` and AVX2's `maddubs` + `madd`
    /// both sum elements `4l..4l+4` into lane `l`.
    #[inline(always)]
    unsafe fn groups<const VNNI: bool>(w: __m256i, x: &[i8; QK]) -> __m256i {
        let x = _mm256_loadu_si256(x.as_ptr() as *const __m256i);
        let (u, s) = (_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
        if VNNI {
            _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
        } else {
            _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
        }
    }

    /// `super::block`, vectorised: the same operations on the same values in the same order
    /// (lane `l` += `d_w * d_x * group_l` by one fused multiply-add), so the same bits.
    #[inline(always)]
    pub(super) unsafe fn block<const VNNI: bool>(
        w: &QMatrix,
        acts: &[ActBlock],
        out: *mut f32,
        n: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) {
        let nb = w.cols / QK;
        let bb = w.ty.block_bytes();
        let mut lanes = vec![_mm256_setzero_ps(); rows.len()];
        let mut offsets = vec![0f32; rows.len()];
        for c in cols {
            let row = &w.bytes[c * w.row_bytes()..][..w.row_bytes()];
            lanes.fill(_mm256_setzero_ps());
            offsets.fill(0.0);
            for (b, wb) in row.chunks_exact(bb).enumerate() {
                let (q, d, m) = weights(w.ty, wb);
                for (r, (lane, off)) in rows.clone().zip(lanes.iter_mut().zip(&mut offsets)) {
                    let a = acts.get_unchecked(r * nb + b);
                    let g = _mm256_cvtepi32_ps(groups::<VNNI>(q, &a.q));
                    *lane = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), g, *lane);
                    *off += m * a.s;
                }
            }
            for (r, (lane, off)) in rows.clone().zip(lanes.iter().zip(&offsets)) {
                let mut l = [0f32; GROUPS];
                _mm256_storeu_ps(l.as_mut_ptr(), *lane);
                *out.add(r * n + c) = tree_sum(l) + off;
            }
        }
    }
}

/// Outputs `rows x cols` of `x · wᵀ` into `out` (`n` columns).
///
/// # Safety
/// `rows x cols` lies inside `out`, which has `n` columns.
unsafe fn block(
    w: &QMatrix,
    acts: &[ActBlock],
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    let nb = w.cols / QK;
    let bb = w.ty.block_bytes();
    let mut lanes = vec![[0f32; GROUPS]; rows.len()];
    let mut offsets = vec![0f32; rows.len()];
    for c in cols {
        let row = &w.bytes[c * w.row_bytes()..][..w.row_bytes()];
        lanes.iter_mut().for_each(|l| *l = [0.0; GROUPS]);
        offsets.iter_mut().for_each(|o| *o = 0.0);
        for (b, wb) in row.chunks_exact(bb).enumerate() {
            let wb = unpack(w.ty, wb);
            for (r, (lane, off)) in rows.clone().zip(lanes.iter_mut().zip(&mut offsets)) {
                let a = &acts[r * nb + b];
                let g = groups(&wb.q, &a.q);
                let scale = wb.d * a.d;
                for (l, &g) in lane.iter_mut().zip(&g) {
                    *l = scale.mul_add(g as f32, *l);
                }
                *off += wb.m * a.s;
            }
        }
        for (r, (lane, off)) in rows.clone().zip(lanes.iter().zip(&offsets)) {
            *out.add(r * n + c) = tree_sum(*lane) + off;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(
    w: &QMatrix,
    acts: &[ActBlock],
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    x86::block::<false>(w, acts, out, n, rows, cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
unsafe fn block_vnni(
    w: &QMatrix,
    acts: &[ActBlock],
    out: *mut f32,
    n: usize,
    rows: Range<usize>,
    cols: Range<usize>,
) {
    x86::block::<true>(w, acts, out, n, rows, cols)
}

/// `x · wᵀ` with `x` quantised per block (module docs): `x` is `[t, cols]`, the result
/// `[t, rows]`.
pub fn qmatmul_t(x: &[f32], w: &QMatrix) -> Vec<f32> {
    assert!(x.len().is_multiple_of(w.cols));
    let (t, n) = (x.len() / w.cols, w.rows());
    if !integer(w.ty) {
        let rb = w.row_bytes();
        return matmul_t_rows(x, n, w.cols, |rows, buf| {
            dequantize(w.ty, &w.bytes[rows.start * rb..rows.end * rb], buf)
        });
    }
    let acts: Vec<ActBlock> = x.par_chunks(w.cols).flat_map_iter(quantize).collect();
    let mut out = vec![0f32; t * n];
    let path = isa();
    #[cfg(target_arch = "x86_64")]
    let vnni = path == Isa::Avx512 && std::arch::is_x86_feature_detected!("avx512vnni");
    par_tiles(&mut out, n, (TASK_ROWS, TASK_COLS), |out, rows, cols| {
        // SAFETY: tiles are disjoint and inside `out`; each path runs only where its
        // instructions were detected.
        unsafe {
            match path {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 if vnni => block_vnni(w, &acts, out, n, rows, cols),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 | Isa::Avx2 => block_avx2(w, &acts, out, n, rows, cols),
                _ => block(w, &acts, out, n, rows, cols),
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(ty: GgmlType, rows: usize, cols: usize) -> Vec<u8> {
        let mut s = 12345u32;
        let mut next = || {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (s >> 16) as u8
        };
        let nb = rows * cols / ty.block_len();
        let mut out = Vec::new();
        for _ in 0..nb {
            let mut b: Vec<u8> = (0..ty.block_bytes()).map(|_| next()).collect();
            // Small positive f16 scales (0x2000..0x27FF) and, for Q4_1 and the k-quants with
            // one, offsets; Q6_K keeps its scale last.
            match ty {
                GgmlType::Q6K => b[ty.block_bytes() - 1] = 0x20 | (b[ty.block_bytes() - 1] & 0x07),
                _ => b[1] = 0x20 | (b[1] & 0x07),
            }
            if matches!(ty, GgmlType::Q4_1 | GgmlType::Q4K | GgmlType::Q5K) {
                b[3] = 0xA0 | (b[3] & 0x07);
            }
            out.extend(b);
        }
        out
    }

    /// The integer product against the definition, written out with scalar operations, and
    /// against f32 arithmetic on the dequantised weights (close, not equal: 8-bit activations).
    #[test]
    fn integer_products_follow_the_definition() {
        for ty in [GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0] {
            let (rows, cols, t) = (37, 96, 5);
            let w = QMatrix::new(ty, cols, BlockBytes::Owned(blocks(ty, rows, cols)));
            let x: Vec<f32> = (0..t * cols)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 13.0)
                .collect();
            let got = qmatmul_t(&x, &w);
            let mut deq = vec![0f32; rows * cols];
            dequantize(ty, &w.bytes, &mut deq);
            for r in 0..t {
                let acts = quantize(&x[r * cols..][..cols]);
                for c in 0..rows {
                    let mut lanes = [0f32; GROUPS];
                    let mut off = 0f32;
                    for (b, a) in acts.iter().enumerate() {
                        let wb = unpack(ty, &w.bytes[(c * cols / QK + b) * ty.block_bytes()..]);
                        for (l, lane) in lanes.iter_mut().enumerate() {
                            let g: i32 = (4 * l..4 * l + 4)
                                .map(|j| i32::from(wb.q[j]) * i32::from(a.q[j]))
                                .sum();
                            *lane = (wb.d * a.d).mul_add(g as f32, *lane);
                        }
                        off += wb.m * a.s;
                    }
                    let want = tree_sum(lanes) + off;
                    assert_eq!(got[r * rows + c].to_bits(), want.to_bits(), "{ty:?}");
                    let (xr, wr) = (&x[r * cols..][..cols], &deq[c * cols..][..cols]);
                    let exact: f32 = xr.iter().zip(wr).map(|(a, b)| a * b).sum();
                    // Rounding moves each activation by at most half its block's step
                    // (amax / 254); twice that bound also covers the f16 scales.
                    let bound: f32 = (0..cols)
                        .map(|j| {
                            let block = &xr[j / QK * QK..][..QK];
                            let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
                            wr[j].abs() * amax / 127.0
                        })
                        .sum();
                    assert!(
                        (want - exact).abs() <= bound,
                        "{ty:?}: {want} vs {exact} (bound {bound})"
                    );
                }
            }
        }
    }

    /// K-quant weights kept in their blocks multiply as f32, a tile at a time: the same bits as
    /// the f32 product of the whole dequantised matrix (the route they took before), for a
    /// number of rows that leaves a partial tile.
    #[test]
    fn kept_k_quants_give_the_bits_of_the_f32_product() {
        for ty in [GgmlType::Q4K, GgmlType::Q5K, GgmlType::Q6K] {
            let (rows, cols, t) = (37, 512, 3);
            let w = QMatrix::new(ty, cols, BlockBytes::Owned(blocks(ty, rows, cols)));
            let x: Vec<f32> = (0..t * cols)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 13.0)
                .collect();
            let mut deq = vec![0f32; rows * cols];
            dequantize(ty, &w.bytes, &mut deq);
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            assert_eq!(
                bits(qmatmul_t(&x, &w)),
                bits(crate::model::kernels::matmul_t(&x, &deq, cols)),
                "{ty:?}"
            );
            assert_eq!(w.row(5), deq[5 * cols..6 * cols], "{ty:?}");
        }
    }
}
