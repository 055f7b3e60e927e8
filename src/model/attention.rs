//! Causal grouped-query attention over the KV cache, with one order of operations per output
//! whatever the chunking of the cache, the number of query rows, the threads or the vector unit.
//!
//! For query row `i` (position `p0 + i`) of head `h`, over the keys and values of positions
//! `0..=p0 + i` of its kv head:
//! - scores `s_j = dot(q, k_j) · scale` (then `cap · tanh(s_j / cap)` under a soft-cap), the dot product one chain of fused multiply-adds in
//!   dimension order (`0 + q_0 k_0`, then `+ q_1 k_1`, …). Keys are the vector lanes (the cache
//!   is transposed per call), so a block of 16 keys costs `head_dim` vector multiply-adds per
//!   query row and no horizontal sums;
//! - `w_j = exp32(s_j − max s)`;
//! - `total = Σ w_j` in 16 f32 lanes by position (`j mod 16`, in order), then the fixed tree;
//! - `p_j = w_j / total`;
//! - `out[d] = Σ_j p_j · v_j[d]`, fused multiply-adds in position order.
//!
//! Keys outside a sliding window (position `≤ p0 + i − window`) are masked like later ones.
//!
//! Every step depends only on the row's own keys and values by absolute position, so a prefix
//! computed alone, inside a longer run or across cache chunks gives the same bits.

use rayon::prelude::*;

use super::kernels::{max_on, on_lanes, Lanes, LANES};

/// Query rows handed to one task (per head).
const ROWS: usize = 16;
/// Query rows scored against a block of keys at once (one accumulator register each).
const SCORE_ROWS: usize = 8;
/// Vectors of value columns accumulated at once (registers; fma latency over throughput).
const PV_VECTORS: usize = 4;

/// The shape of the attention.
#[derive(Clone, Copy, Debug)]
pub struct Heads {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Multiplies q·k (usually 1/√head_dim).
    pub scale: f32,
    /// Scores become `cap · tanh(s / cap)`.
    pub softcap: Option<f32>,
    /// Each query sees only the last `window` positions, itself included.
    pub window: Option<usize>,
}

/// Attention of `q: [t, heads, hd]` (positions `p0..p0 + t`) over `spans`, the keys and values of
/// positions `0..p0 + t` in order, each span `([n, kv_heads, hd], [n, kv_heads, hd])`. Returns
/// `[t, heads, hd]`.
pub fn attention(spans: &[(&[f32], &[f32])], q: &[f32], shape: Heads, p0: usize) -> Vec<f32> {
    let Heads {
        heads,
        kv_heads,
        head_dim: hd,
        scale,
        softcap,
        window,
    } = shape;
    let t = q.len() / (heads * hd);
    let kv_row = kv_heads * hd;
    let positions: usize = spans.iter().map(|(k, _)| k.len() / kv_row).sum();
    assert_eq!(positions, p0 + t, "the cache holds every earlier position");
    // Keys transposed by blocks of 16 positions, `[ldk / 16, hd, 16]` (positions as lanes,
    // zero-padded to whole lanes; a block is contiguous, so scoring it walks memory in order),
    // and values `[positions, hdp]` padded to whole lanes: a padded column only ever adds 0 · v
    // to 0.
    let (ldk, hdp) = (
        positions.next_multiple_of(LANES),
        hd.next_multiple_of(LANES),
    );
    let cache_rows = |g: usize, values: bool| {
        spans.iter().flat_map(move |(k, v)| {
            let src = if values { v } else { k };
            src.chunks_exact(kv_row).map(move |r| &r[g * hd..][..hd])
        })
    };
    let (keys, values): (Vec<Vec<f32>>, Vec<Vec<f32>>) = (0..kv_heads)
        .into_par_iter()
        .map(|g| {
            let mut keys = vec![0f32; hd * ldk];
            for (j, row) in cache_rows(g, false).enumerate() {
                let block = &mut keys[(j / LANES) * hd * LANES..][..hd * LANES];
                for (d, &v) in row.iter().enumerate() {
                    block[d * LANES + j % LANES] = v;
                }
            }
            let mut values = vec![0f32; positions * hdp];
            for (dst, src) in values.chunks_exact_mut(hdp).zip(cache_rows(g, true)) {
                dst[..hd].copy_from_slice(src);
            }
            (keys, values)
        })
        .unzip();
    let group = heads / kv_heads;
    let blocks = t.div_ceil(ROWS);
    let results: Vec<Vec<f32>> = (0..heads * blocks)
        .into_par_iter()
        .map(|task| {
            let (h, b) = (task / blocks, task % blocks);
            let rows = b * ROWS..((b + 1) * ROWS).min(t);
            let q: Vec<f32> = rows
                .clone()
                .flat_map(|r| &q[(r * heads + h) * hd..][..hd])
                .copied()
                .collect();
            let task = &Task {
                q: &q,
                keys: &keys[h / group],
                values: &values[h / group],
                hd,
                hdp,
                first: p0 + rows.start,
                scale,
                softcap,
                window,
            };
            on_lanes!(attend(task: &Task) -> Vec<f32>)
        })
        .collect();
    let mut out = vec![0f32; q.len()];
    for (task, rows) in results.iter().enumerate() {
        let (h, b) = (task / blocks, task % blocks);
        for (i, o) in rows.chunks_exact(hd).enumerate() {
            let row = b * ROWS + i;
            out[(row * heads + h) * hd..][..hd].copy_from_slice(o);
        }
    }
    out
}

/// Query rows of one head against their kv head's keys and values.
struct Task<'a> {
    /// `[rows, hd]`.
    q: &'a [f32],
    /// `[ldk / 16, hd, 16]`: keys transposed by blocks of 16.
    keys: &'a [f32],
    /// `[positions, hdp]`.
    values: &'a [f32],
    hd: usize,
    hdp: usize,
    /// The position of the first query row.
    first: usize,
    scale: f32,
    softcap: Option<f32>,
    window: Option<usize>,
}

/// The outputs `[rows, hd]` of a task (module docs).
#[inline(always)]
unsafe fn attend<L: Lanes>(task: &Task) -> Vec<f32> {
    let Task {
        q,
        keys,
        values,
        hd,
        hdp,
        first,
        scale,
        softcap,
        window,
    } = *task;
    let rows = q.len() / hd;
    // Keys visible to the last row, and the scores' row length in whole lanes.
    let visible = first + rows;
    let ld = visible.next_multiple_of(LANES);
    let mut scores = vec![f32::NEG_INFINITY; rows * ld];
    let mut r = 0;
    while r < rows {
        let (q, out) = (q[r * hd..].as_ptr(), scores[r * ld..].as_mut_ptr());
        if rows - r >= SCORE_ROWS {
            score_rows::<L, SCORE_ROWS>(q, hd, keys.as_ptr(), out, ld);
            r += SCORE_ROWS;
        } else {
            score_rows::<L, 1>(q, hd, keys.as_ptr(), out, ld);
            r += 1;
        }
    }
    let mut out = vec![0f32; rows * hd];
    for (i, (s, o)) in scores
        .chunks_exact_mut(ld)
        .zip(out.chunks_exact_mut(hd))
        .enumerate()
    {
        let seen = first + i + 1;
        s[..seen].iter_mut().for_each(|v| *v *= scale);
        if let Some(cap) = softcap {
            s[..seen]
                .iter_mut()
                .for_each(|v| *v = cap * (*v / cap).tanh());
        }
        // Keys after this row's position, or before its window, are masked: −∞ weighs exactly 0.
        s[seen..].fill(f32::NEG_INFINITY);
        let low = window.map_or(0, |w| seen.saturating_sub(w));
        s[..low].fill(f32::NEG_INFINITY);
        let max = L::splat(max_on::<L>(&s[low..seen]));
        let mut total = L::zero();
        for c in s.chunks_exact_mut(LANES) {
            let w = L::load(c.as_ptr()).sub(max).exp();
            w.store(c.as_mut_ptr());
            total = total.add(w);
        }
        let total = L::splat(total.sum());
        for c in s.chunks_exact_mut(LANES) {
            L::load(c.as_ptr()).div(total).store(c.as_mut_ptr());
        }
        let mut row = vec![0f32; hdp];
        let mut col = 0;
        while col < hdp {
            let (p, v, r) = (
                s[..seen].as_ptr(),
                values.as_ptr().add(col),
                row.as_mut_ptr().add(col),
            );
            if hdp - col >= PV_VECTORS * LANES {
                weigh_values::<L, PV_VECTORS>(p, seen, v, hdp, r);
                col += PV_VECTORS * LANES;
            } else {
                weigh_values::<L, 1>(p, seen, v, hdp, r);
                col += LANES;
            }
        }
        o.copy_from_slice(&row[..hd]);
    }
    out
}

/// `out[c] = Σ_j p_j · v_j[c]` over the keys `0..n` in position order, for the `N · 16` columns
/// from `values` (rows `hdp` apart): one fused multiply-add per key and column, the accumulators
/// held in registers.
#[inline(always)]
unsafe fn weigh_values<L: Lanes, const N: usize>(
    p: *const f32,
    n: usize,
    values: *const f32,
    hdp: usize,
    out: *mut f32,
) {
    let mut acc = [L::zero(); N];
    for j in 0..n {
        let (p, v) = (L::splat(*p.add(j)), values.add(j * hdp));
        for (c, a) in acc.iter_mut().enumerate() {
            *a = a.fma(p, L::load(v.add(c * LANES)));
        }
    }
    for (c, a) in acc.iter().enumerate() {
        a.store(out.add(c * LANES));
    }
}

/// `out[r * ld + j] = Σ_d q[r][d] · k_j[d]` for `R` query rows (`hd` apart from `q`) and the keys
/// `0..ld` of the block-transposed `keys`: one fused multiply-add chain per score, in dimension
/// order, a block of 16 keys per vector.
#[inline(always)]
unsafe fn score_rows<L: Lanes, const R: usize>(
    q: *const f32,
    hd: usize,
    keys: *const f32,
    out: *mut f32,
    ld: usize,
) {
    for j in (0..ld).step_by(LANES) {
        let mut acc = [L::zero(); R];
        let block = keys.add(j * hd);
        for d in 0..hd {
            let k = L::load(block.add(d * LANES));
            for (r, a) in acc.iter_mut().enumerate() {
                *a = a.fma(L::splat(*q.add(r * hd + d)), k);
            }
        }
        for (r, a) in acc.iter().enumerate() {
            a.store(out.add(r * ld + j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        crate::model::kernels::awkward(n, seed)
            .iter()
            .map(|v| v * 2.0)
            .collect()
    }

    const SHAPE: Heads = Heads {
        heads: 4,
        kv_heads: 2,
        head_dim: 24,
        scale: 0.204_124_15, // 1/√24
        softcap: None,
        window: None,
    };

    /// The straightforward definition in f64.
    fn reference(k: &[f32], v: &[f32], q: &[f32], p0: usize) -> Vec<f32> {
        let Heads {
            heads,
            kv_heads,
            head_dim: hd,
            ..
        } = SHAPE;
        let t = q.len() / (heads * hd);
        let mut out = vec![0f32; q.len()];
        for i in 0..t {
            for h in 0..heads {
                let g = h / (heads / kv_heads);
                let qr = &q[(i * heads + h) * hd..][..hd];
                let at = |x: &[f32], j: usize| x[(j * kv_heads + g) * hd..][..hd].to_vec();
                let s: Vec<f64> = (0..=p0 + i)
                    .map(|j| {
                        let kr = at(k, j);
                        qr.iter()
                            .zip(&kr)
                            .map(|(a, b)| f64::from(a * b))
                            .sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let max = s.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                let w: Vec<f64> = s.iter().map(|v| (v - max).exp()).collect();
                let total: f64 = w.iter().sum();
                for (j, w) in w.iter().enumerate() {
                    for (d, vv) in at(v, j).iter().enumerate() {
                        out[(i * heads + h) * hd + d] += (w / total * f64::from(*vv)) as f32;
                    }
                }
            }
        }
        out
    }

    /// The last rows of a run give the same bits computed alone after a cache in one chunk, in
    /// several chunks, or within the whole run; and they match the f64 definition closely.
    #[test]
    fn rows_have_the_same_bits_however_the_cache_is_chunked() {
        let (positions, kv_row) = (41, SHAPE.kv_heads * SHAPE.head_dim);
        let q_row = SHAPE.heads * SHAPE.head_dim;
        let (k, v) = (values(positions * kv_row, 1), values(positions * kv_row, 2));
        let q = values(positions * q_row, 3);
        let whole = attention(&[(&k, &v)], &q, SHAPE, 0);
        let want = reference(&k, &v, &q, 0);
        for (a, b) in whole.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for cuts in [vec![35], vec![1, 8, 21, 35], vec![17, 18, 40]] {
            let mut spans = Vec::new();
            let mut start = 0;
            for &c in &cuts {
                spans.push((
                    &k[start * kv_row..c * kv_row],
                    &v[start * kv_row..c * kv_row],
                ));
                start = c;
            }
            spans.push((&k[start * kv_row..], &v[start * kv_row..]));
            let p0 = start;
            let tail = attention(&spans, &q[p0 * q_row..], SHAPE, p0);
            assert_eq!(bits(&tail), bits(&whole[p0 * q_row..]), "cuts {cuts:?}");
        }
    }
}
