//! Causal grouped-query attention over the KV cache, with one order of operations per output
//! whatever the chunking of the cache, the number of query rows, the threads or the vector unit.
//!
//! For query row `i` (position `p0 + i`) of head `h`, over the keys and values of positions
//! `0..=p0 + i` of its kv head:
//! - scores `s_j = dot(q, k_j) · scale` (then `cap · tanh(s_j / cap)` under a soft-cap), the
//!   dot product one chain of fused multiply-adds in dimension order (`0 + q_0 k_0`, then
//!   `+ q_1 k_1`, …). Keys are the vector lanes (each chunk of the cache is kept transposed,
//!   `Kv`), so a block of 16 keys costs `head_dim` vector multiply-adds per query row and no
//!   horizontal sums; which lane a key takes changes nothing, as lanes never mix;
//! - `w_j = exp32(s_j − max s)`;
//! - `total = Σ w_j` in 16 f32 lanes by position (`j mod 16`, in order), then the fixed tree;
//! - `p_j = w_j / total`;
//! - `out[d] = Σ_j p_j · v_j[d]`, fused multiply-adds in position order.
//!
//! Keys outside a sliding window (position `≤ p0 + i − window`) are masked like later ones.
//!
//! Every step depends only on the row's own keys and values by absolute position, so a prefix
//! computed alone, inside a longer run or across cache chunks gives the same bits.

use std::ops::Range;

use rayon::prelude::*;

use crate::model::numerics::kernels::{max_on, on_lanes, Lanes, LANES};

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

/// The keys and values of consecutive positions of one layer, kept the way `attention` reads
/// them, so that a cached prefix is laid out once, when it is computed, not at every later call.
pub struct Kv {
    len: usize,
    kv_heads: usize,
    hd: usize,
    rows: Rows,
}

enum Rows {
    /// Per kv head: keys transposed by blocks of 16 positions, `[len / 16, hd, 16]` (positions
    /// as lanes, zero-padded to whole lanes; a block is contiguous, so scoring it walks memory in
    /// order), then values `[len, hdp]`, padded to whole lanes: a padded column only ever adds
    /// `0 · v` to 0.
    Blocks { keys: Vec<f32>, values: Vec<f32> },
    /// Fewer than 16 positions (a generated token, a label's continuation), as computed:
    /// `[len, kv_heads, hd]` each. Blocks of their own would pad them to 16 positions, so at
    /// each call the runs of them are joined into blocks.
    Short { k: Vec<f32>, v: Vec<f32> },
}

impl Kv {
    /// Keys and values `[n, kv_heads, hd]` each.
    pub fn new(k: Vec<f32>, v: Vec<f32>, kv_heads: usize, hd: usize) -> Kv {
        let len = k.len() / (kv_heads * hd);
        assert_eq!(k.len(), v.len(), "as many keys as values");
        let rows = if len < LANES {
            Rows::Short { k, v }
        } else {
            Self::blocks(&k, &v, kv_heads, hd)
        };
        Kv {
            len,
            kv_heads,
            hd,
            rows,
        }
    }

    fn blocks(k: &[f32], v: &[f32], kv_heads: usize, hd: usize) -> Rows {
        let kv_row = kv_heads * hd;
        let len = k.len() / kv_row;
        let (key_size, value_size) = Self::sizes(len, hd);
        let hdp = hd.next_multiple_of(LANES);
        let mut keys = vec![0f32; kv_heads * key_size];
        let mut values = vec![0f32; kv_heads * value_size];
        for (g, (keys, values)) in keys
            .chunks_exact_mut(key_size)
            .zip(values.chunks_exact_mut(value_size))
            .enumerate()
        {
            for (j, (kr, vr)) in k
                .chunks_exact(kv_row)
                .zip(v.chunks_exact(kv_row))
                .enumerate()
            {
                let block = &mut keys[(j / LANES) * hd * LANES..][..hd * LANES];
                for (d, &x) in kr[g * hd..][..hd].iter().enumerate() {
                    block[d * LANES + j % LANES] = x;
                }
                values[j * hdp..][..hd].copy_from_slice(&vr[g * hd..][..hd]);
            }
        }
        Rows::Blocks { keys, values }
    }

    /// Positions held.
    pub fn positions(&self) -> usize {
        self.len
    }

    /// Fewer positions than make a block: kept as computed, joined at each call.
    pub fn is_short(&self) -> bool {
        matches!(self.rows, Rows::Short { .. })
    }

    /// The first `n` positions of a short span: a verified run of drafted tokens cut back to
    /// those accepted, so no rejected position's keys or values reach a later token. `None` for
    /// a span in the block layout (a run of a block's worth of positions or more).
    pub fn prefix(&self, n: usize) -> Option<Kv> {
        match &self.rows {
            Rows::Short { k, v } if n <= self.len => {
                let row = self.kv_heads * self.hd;
                Some(Kv {
                    len: n,
                    kv_heads: self.kv_heads,
                    hd: self.hd,
                    rows: Rows::Short {
                        k: k[..n * row].to_vec(),
                        v: v[..n * row].to_vec(),
                    },
                })
            }
            _ => None,
        }
    }

    /// Short spans joined into one in the block layout: what `attention` does with a run of them
    /// at each call, done once.
    pub fn join(spans: &[&Kv]) -> Kv {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for s in spans {
            if let Rows::Short { k: sk, v: sv } = &s.rows {
                k.extend_from_slice(sk);
                v.extend_from_slice(sv);
            }
        }
        let (kv_heads, hd) = (spans[0].kv_heads, spans[0].hd);
        Kv {
            len: k.len() / (kv_heads * hd),
            kv_heads,
            hd,
            rows: Self::blocks(&k, &v, kv_heads, hd),
        }
    }

    /// Floats of one kv head's keys and of its values in the block layout.
    fn sizes(len: usize, hd: usize) -> (usize, usize) {
        (
            len.next_multiple_of(LANES) * hd,
            len * hd.next_multiple_of(LANES),
        )
    }

    /// Kv head `g`'s keys and values, when laid out in blocks.
    fn head(&self, g: usize) -> Option<(&[f32], &[f32])> {
        match &self.rows {
            Rows::Blocks { keys, values } => {
                let (ks, vs) = Self::sizes(self.len, self.hd);
                Some((&keys[g * ks..][..ks], &values[g * vs..][..vs]))
            }
            Rows::Short { .. } => None,
        }
    }
}

/// A run of consecutive positions of one kv head in the block layout: the positions from
/// `start`, their keys and their values.
#[derive(Clone, Copy)]
struct Segment<'a> {
    start: usize,
    len: usize,
    keys: &'a [f32],
    values: &'a [f32],
}

/// Attention of `q: [t, heads, hd]` (positions `p0..p0 + t`) over `spans`, the keys and values of
/// positions `0..p0 + t` in order. Returns `[t, heads, hd]`.
pub fn attention(spans: &[&Kv], q: &[f32], shape: Heads, p0: usize) -> Vec<f32> {
    attention_with_sinks(spans, q, shape, p0, None)
}

/// [`attention`] with one sink logit per head (gpt-oss, issue 45): a score every query row
/// has beside its keys, with no value, so it only takes a share of the softmax — ggml's
/// `soft_max_ext` with sinks: the maximum taken over the sink too, and `exp(sink − max)` added
/// to the total after the keys' sum.
pub fn attention_with_sinks(
    spans: &[&Kv],
    q: &[f32],
    shape: Heads,
    p0: usize,
    sinks: Option<&[f32]>,
) -> Vec<f32> {
    let Heads {
        heads,
        kv_heads,
        head_dim: hd,
        scale,
        softcap,
        window,
    } = shape;
    let t = q.len() / (heads * hd);
    let positions: usize = spans.iter().map(|s| s.len).sum();
    assert_eq!(positions, p0 + t, "the cache holds every earlier position");
    assert!(
        spans.iter().all(|s| s.kv_heads == kv_heads && s.hd == hd),
        "every span has the attention's shape"
    );
    // Each run of short spans joined into blocks, for this call only.
    let runs: Vec<&[&Kv]> = spans
        .chunk_by(|a, b| a.is_short() == b.is_short())
        .collect();
    let joined: Vec<Option<Kv>> = runs
        .iter()
        .map(|run| run[0].is_short().then(|| Kv::join(run)))
        .collect();
    let mut laid: Vec<(usize, &Kv)> = Vec::new();
    let mut at = 0;
    for (run, joined) in runs.iter().zip(&joined) {
        let kvs = match joined {
            Some(kv) => vec![kv],
            None => run.to_vec(),
        };
        for kv in kvs {
            laid.push((at, kv));
            at += kv.len;
        }
    }
    let segments: Vec<Vec<Segment>> = (0..kv_heads)
        .map(|g| {
            laid.iter()
                .map(|&(start, kv)| {
                    let (keys, values) = kv.head(g).expect("joined into blocks");
                    Segment {
                        start,
                        len: kv.len,
                        keys,
                        values,
                    }
                })
                .collect()
        })
        .collect();
    let group = heads / kv_heads;
    let blocks = t.div_ceil(ROWS);
    let results: Vec<Vec<f32>> = (0..heads * blocks)
        .into_par_iter()
        .map(|task| {
            let (h, b) = (task / blocks, task % blocks);
            let rows = b * ROWS..((b + 1) * ROWS).min(t);
            let mut q_rows = Vec::with_capacity(rows.len() * hd);
            for r in rows.clone() {
                q_rows.extend_from_slice(&q[(r * heads + h) * hd..][..hd]);
            }
            let task = &Task {
                q: &q_rows,
                segments: &segments[h / group],
                hd,
                first: p0 + rows.start,
                scale,
                softcap,
                window,
                sink: sinks.map(|s| s[h]),
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
    /// The kv head's positions in order.
    segments: &'a [Segment<'a>],
    hd: usize,
    /// The position of the first query row.
    first: usize,
    scale: f32,
    softcap: Option<f32>,
    window: Option<usize>,
    /// The head's sink logit (`attention_with_sinks`).
    sink: Option<f32>,
}

/// The outputs `[rows, hd]` of a task (module docs).
#[inline(always)]
unsafe fn attend<L: Lanes>(task: &Task) -> Vec<f32> {
    let Task {
        q,
        segments,
        hd,
        first,
        scale,
        softcap,
        window,
        sink,
    } = *task;
    let rows = q.len() / hd;
    let hdp = hd.next_multiple_of(LANES);
    // Keys visible to the last row, and the scores' row length in whole lanes. A row is one
    // block longer: a segment's last block may end up to 15 positions past `visible`.
    let visible = first + rows;
    let ld = visible.next_multiple_of(LANES);
    let stride = ld + LANES;
    let mut scores = vec![f32::NEG_INFINITY; rows * stride];
    for seg in segments.iter().take_while(|s| s.start < visible) {
        let blocks = seg.len.min(visible - seg.start).div_ceil(LANES);
        let keys = seg.keys.as_ptr();
        let mut r = 0;
        while r < rows {
            let (q, out) = (
                q[r * hd..].as_ptr(),
                scores[r * stride + seg.start..].as_mut_ptr(),
            );
            if rows - r >= SCORE_ROWS {
                score_rows::<L, SCORE_ROWS>(q, hd, keys, blocks, out, stride);
                r += SCORE_ROWS;
            } else {
                score_rows::<L, 1>(q, hd, keys, blocks, out, stride);
                r += 1;
            }
        }
    }
    for (i, s) in scores
        .chunks_exact_mut(stride)
        .map(|row| &mut row[..ld])
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
        let keys_max = max_on::<L>(&s[low..seen]);
        let m = sink.map_or(keys_max, |k| if k > keys_max { k } else { keys_max });
        let max = L::splat(m);
        let mut total = L::zero();
        for c in s.chunks_exact_mut(LANES) {
            let w = L::load(c.as_ptr()).sub(max).exp();
            w.store(c.as_mut_ptr());
            total = total.add(w);
        }
        let total = match sink {
            None => L::splat(total.sum()),
            Some(k) => L::splat(total.sum() + crate::model::numerics::kernels::exp32(k - m)),
        };
        for c in s.chunks_exact_mut(LANES) {
            L::load(c.as_ptr()).div(total).store(c.as_mut_ptr());
        }
    }
    // The weighted values two rows at a time, which then share every value vector loaded. Row
    // `i` sees the keys `..first + i + 1`: the pair runs over the first row's keys, then the
    // second row alone over its last one, so each row's sums keep their own order.
    let mut out = vec![0f32; rows * hdp];
    let base = out.as_mut_ptr();
    let mut i = 0;
    while i < rows {
        let seen = first + i + 1;
        let p = |r: usize| scores[(i + r) * stride..].as_ptr();
        let o = |r: usize| base.add((i + r) * hdp);
        let mut col = 0;
        while col < hdp {
            let wide = hdp - col >= PV_VECTORS * LANES;
            match (rows - i >= 2, wide) {
                (true, true) => weigh_pair::<L, PV_VECTORS>(
                    [p(0), p(1)],
                    seen,
                    segments,
                    col,
                    hdp,
                    [o(0), o(1)],
                ),
                (true, false) => {
                    weigh_pair::<L, 1>([p(0), p(1)], seen, segments, col, hdp, [o(0), o(1)])
                }
                (false, true) => {
                    let mut acc = [[L::zero(); PV_VECTORS]];
                    weigh_values::<L, PV_VECTORS, 1>([p(0)], 0..seen, segments, col, hdp, &mut acc);
                    store(&acc[0], o(0).add(col));
                }
                (false, false) => {
                    let mut acc = [[L::zero(); 1]];
                    weigh_values::<L, 1, 1>([p(0)], 0..seen, segments, col, hdp, &mut acc);
                    store(&acc[0], o(0).add(col));
                }
            }
            col += if wide { PV_VECTORS * LANES } else { LANES };
        }
        i += 2;
    }
    if hdp == hd {
        return out;
    }
    out.chunks_exact(hdp)
        .flat_map(|r| &r[..hd])
        .copied()
        .collect()
}

/// Rows `p[0]` (seeing `seen` keys) and `p[1]` (one more) weighing the columns from `col`.
#[inline(always)]
unsafe fn weigh_pair<L: Lanes, const N: usize>(
    p: [*const f32; 2],
    seen: usize,
    segments: &[Segment],
    col: usize,
    hdp: usize,
    out: [*mut f32; 2],
) {
    let mut acc = [[L::zero(); N]; 2];
    weigh_values::<L, N, 2>(p, 0..seen, segments, col, hdp, &mut acc);
    let mut last = [acc[1]];
    weigh_values::<L, N, 1>([p[1]], seen..seen + 1, segments, col, hdp, &mut last);
    store(&acc[0], out[0].add(col));
    store(&last[0], out[1].add(col));
}

#[inline(always)]
unsafe fn store<L: Lanes, const N: usize>(acc: &[L; N], out: *mut f32) {
    for (c, a) in acc.iter().enumerate() {
        a.store(out.add(c * LANES));
    }
}

/// `acc[r][c] += Σ_j p_r[j] · v_j[c]` over the keys `keys` in position order, for the `N · 16`
/// columns from `col` of the segments' values (rows `hdp` apart) and `R` rows of weights: one
/// fused multiply-add per key, row and column, each value vector loaded once for the `R` rows.
#[inline(always)]
unsafe fn weigh_values<L: Lanes, const N: usize, const R: usize>(
    p: [*const f32; R],
    keys: Range<usize>,
    segments: &[Segment],
    col: usize,
    hdp: usize,
    acc: &mut [[L; N]; R],
) {
    for seg in segments.iter().take_while(|s| s.start < keys.end) {
        let (lo, hi) = (keys.start.max(seg.start), keys.end.min(seg.start + seg.len));
        let values = seg.values.as_ptr().add(col);
        for j in lo..hi {
            let v = values.add((j - seg.start) * hdp);
            let v: [L; N] = std::array::from_fn(|c| L::load(v.add(c * LANES)));
            for (acc, p) in acc.iter_mut().zip(p) {
                let w = L::splat(*p.add(j));
                for (a, v) in acc.iter_mut().zip(v) {
                    *a = a.fma(w, v);
                }
            }
        }
    }
}

/// `out[r * stride + j] = Σ_d q[r][d] · k_j[d]` for `R` query rows (`hd` apart from `q`) and
/// the keys of `blocks` blocks of 16 from the block-transposed `keys`: one fused multiply-add
/// chain per score, in dimension order, a block of 16 keys per vector.
#[inline(always)]
unsafe fn score_rows<L: Lanes, const R: usize>(
    q: *const f32,
    hd: usize,
    keys: *const f32,
    blocks: usize,
    out: *mut f32,
    stride: usize,
) {
    for b in 0..blocks {
        let mut acc = [L::zero(); R];
        let block = keys.add(b * LANES * hd);
        for d in 0..hd {
            let k = L::load(block.add(d * LANES));
            for (r, a) in acc.iter_mut().enumerate() {
                *a = a.fma(L::splat(*q.add(r * hd + d)), k);
            }
        }
        for (r, a) in acc.iter().enumerate() {
            a.store(out.add(r * stride + b * LANES));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        crate::model::numerics::kernels::awkward(n, seed)
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
        let kv = |from: usize, to: usize| {
            Kv::new(
                k[from * kv_row..to * kv_row].to_vec(),
                v[from * kv_row..to * kv_row].to_vec(),
                SHAPE.kv_heads,
                SHAPE.head_dim,
            )
        };
        let whole = attention(&[&kv(0, positions)], &q, SHAPE, 0);
        let want = reference(&k, &v, &q, 0);
        for (a, b) in whole.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for cuts in [vec![35], vec![1, 8, 21, 35], vec![17, 18, 40]] {
            let mut spans = Vec::new();
            let mut start = 0;
            for &c in &cuts {
                spans.push(kv(start, c));
                start = c;
            }
            spans.push(kv(start, positions));
            let p0 = start;
            let spans: Vec<&Kv> = spans.iter().collect();
            let tail = attention(&spans, &q[p0 * q_row..], SHAPE, p0);
            assert_eq!(bits(&tail), bits(&whole[p0 * q_row..]), "cuts {cuts:?}");
        }
    }
}
