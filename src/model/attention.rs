//! Causal grouped-query attention over the KV cache, with one order of operations per output
//! whatever the chunking of the cache, the number of query rows, the threads or the vector unit.
//!
//! For query row `i` (position `p0 + i`) of head `h`, over the keys and values of positions
//! `0..=p0 + i` of its kv head:
//! - scores `s_j = dot(q, k_j) · scale`, each the canonical dot product (`kernels`), computed for
//!   a block of query rows at a time as a small matrix product;
//! - `w_j = exp32(s_j − max s)`;
//! - `total = Σ w_j` in 16 f32 lanes by position (`j mod 16`, in order), then the fixed tree;
//! - `p_j = w_j / total`;
//! - `out[d] = Σ_j p_j · v_j[d]`, fused multiply-adds in position order.
//!
//! Every step depends only on the row's own keys and values by absolute position, so a prefix
//! computed alone, inside a longer run or across cache chunks gives the same bits.

use rayon::prelude::*;

use super::kernels::{block, max_on, on_lanes, Lanes, LANES};

/// Query rows handed to one task (per head).
const ROWS: usize = 16;

/// The shape of the attention.
#[derive(Clone, Copy, Debug)]
pub struct Heads {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

/// Attention of `q: [t, heads, hd]` (positions `p0..p0 + t`) over `spans`, the keys and values of
/// positions `0..p0 + t` in order, each span `([n, kv_heads, hd], [n, kv_heads, hd])`. Returns
/// `[t, heads, hd]`.
pub fn attention(spans: &[(&[f32], &[f32])], q: &[f32], shape: Heads, p0: usize) -> Vec<f32> {
    let Heads {
        heads,
        kv_heads,
        head_dim: hd,
    } = shape;
    let t = q.len() / (heads * hd);
    let kv_row = kv_heads * hd;
    let positions: usize = spans.iter().map(|(k, _)| k.len() / kv_row).sum();
    assert_eq!(positions, p0 + t, "the cache holds every earlier position");
    // Values padded to whole lanes: a padded column only ever adds 0 · v to 0.
    let hdp = hd.next_multiple_of(LANES);
    let gather = |g: usize, values: bool, width: usize| -> Vec<f32> {
        let mut out = vec![0f32; positions * width];
        let rows = spans.iter().flat_map(|(k, v)| {
            let src = if values { v } else { k };
            src.chunks_exact(kv_row).map(move |r| &r[g * hd..][..hd])
        });
        for (dst, src) in out.chunks_exact_mut(width).zip(rows) {
            dst[..hd].copy_from_slice(src);
        }
        out
    };
    let (keys, values): (Vec<Vec<f32>>, Vec<Vec<f32>>) = (0..kv_heads)
        .into_par_iter()
        .map(|g| (gather(g, false, hd), gather(g, true, hdp)))
        .unzip();
    let queries: Vec<Vec<f32>> = (0..heads)
        .map(|h| {
            q.chunks_exact(heads * hd)
                .flat_map(|row| &row[h * hd..][..hd])
                .copied()
                .collect()
        })
        .collect();
    let scale = 1.0 / (hd as f32).sqrt();
    let group = heads / kv_heads;
    let blocks = t.div_ceil(ROWS);
    let results: Vec<Vec<f32>> = (0..heads * blocks)
        .into_par_iter()
        .map(|task| {
            let (h, b) = (task / blocks, task % blocks);
            let rows = b * ROWS..((b + 1) * ROWS).min(t);
            let task = &Task {
                q: &queries[h][rows.start * hd..rows.end * hd],
                keys: &keys[h / group],
                values: &values[h / group],
                hd,
                hdp,
                first: p0 + rows.start,
                scale,
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
    /// `[positions, hd]`.
    keys: &'a [f32],
    /// `[positions, hdp]`.
    values: &'a [f32],
    hd: usize,
    hdp: usize,
    /// The position of the first query row.
    first: usize,
    scale: f32,
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
    } = *task;
    let rows = q.len() / hd;
    // Keys visible to the last row, and the scores' row length in whole lanes.
    let visible = first + rows;
    let ld = visible.next_multiple_of(LANES);
    let mut scores = vec![f32::NEG_INFINITY; rows * ld];
    block::<L>(q, keys, hd, scores.as_mut_ptr(), ld, 0..rows, 0..visible);
    let mut out = vec![0f32; rows * hd];
    let mut acc = vec![L::zero(); hdp / LANES];
    for (i, (s, o)) in scores
        .chunks_exact_mut(ld)
        .zip(out.chunks_exact_mut(hd))
        .enumerate()
    {
        let seen = first + i + 1;
        s[..seen].iter_mut().for_each(|v| *v *= scale);
        // Keys after this row's position are masked: −∞ weighs exactly 0.
        s[seen..].fill(f32::NEG_INFINITY);
        let max = L::splat(max_on::<L>(&s[..seen]));
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
        acc.fill(L::zero());
        for (&p, v) in s[..seen].iter().zip(values.chunks_exact(hdp)) {
            let p = L::splat(p);
            for (a, v) in acc.iter_mut().zip(v.chunks_exact(LANES)) {
                *a = a.fma(p, L::load(v.as_ptr()));
            }
        }
        let mut row = vec![0f32; hdp];
        for (a, r) in acc.iter().zip(row.chunks_exact_mut(LANES)) {
            a.store(r.as_mut_ptr());
        }
        o.copy_from_slice(&row[..hd]);
    }
    out
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
    };

    /// The straightforward definition in f64.
    fn reference(k: &[f32], v: &[f32], q: &[f32], p0: usize) -> Vec<f32> {
        let Heads {
            heads,
            kv_heads,
            head_dim: hd,
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
