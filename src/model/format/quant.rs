//! ggml tensor types and their dequantisation to f32.
//!
//! Block layouts follow ggml-common.h exactly; every multi-byte field is little-endian, as GGUF
//! files are. Quantised weights are expanded to f32 once, at load.

use half::{bf16, f16};

/// Values per block of the legacy quantisations (Q4_0 … Q8_0).
const QK: usize = 32;
/// Values per super-block of the k-quants.
const QK_K: usize = 256;

/// The ggml tensor types this crate can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgmlType {
    F32,
    F16,
    Bf16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
    /// Issue 45: gpt-oss's expert weights.
    Mxfp4,
}

impl GgmlType {
    /// The quantised types, in ggml's order.
    pub const QUANTISED: [GgmlType; 9] = [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q4K,
        GgmlType::Q5K,
        GgmlType::Q6K,
        GgmlType::Mxfp4,
    ];

    /// The type for a ggml type id (`enum ggml_type`), if supported.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            30 => GgmlType::Bf16,
            39 => GgmlType::Mxfp4,
            _ => return None,
        })
    }

    /// Values per block.
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => 1,
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q8_0 => {
                QK
            }
            GgmlType::Q4K | GgmlType::Q5K | GgmlType::Q6K => QK_K,
            GgmlType::Mxfp4 => QK,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::Bf16 => 2,
            GgmlType::Q4_0 => 2 + QK / 2,
            GgmlType::Q4_1 => 4 + QK / 2,
            GgmlType::Q5_0 => 2 + 4 + QK / 2,
            GgmlType::Q5_1 => 4 + 4 + QK / 2,
            GgmlType::Q8_0 => 2 + QK,
            GgmlType::Q4K => 4 + 12 + QK_K / 2,
            GgmlType::Q5K => 4 + 12 + QK_K / 8 + QK_K / 2,
            GgmlType::Q6K => QK_K / 2 + QK_K / 4 + QK_K / 16 + 2,
            GgmlType::Mxfp4 => 1 + QK / 2,
        }
    }

    /// Where a block keeps its f16 scales: `d`, and Q4_1/Q5_1's `m` or a k-quant's `dmin`.
    pub fn half_fields(self) -> &'static [usize] {
        match self {
            // MXFP4's scale is a power of two in a byte (e8m0, `finite_scales`).
            GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 | GgmlType::Mxfp4 => &[],
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => &[0],
            GgmlType::Q6K => &[208],
            GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4K | GgmlType::Q5K => &[0, 2],
        }
    }

    /// Whether a block's scales are finite: its f16 fields, or MXFP4's E8M0 byte (255 is NaN).
    /// A block whose scales are finite has only finite values.
    pub fn finite_scales(self, block: &[u8]) -> bool {
        match self {
            GgmlType::Mxfp4 => block[0] != 255,
            _ => self
                .half_fields()
                .iter()
                .all(|&f| f16::from_le_bytes([block[f], block[f + 1]]).is_finite()),
        }
    }

    /// Bytes taken by `n` values, or `None` when `n` is not a whole number of blocks.
    pub fn bytes_for(self, n: usize) -> Option<usize> {
        n.is_multiple_of(self.block_len())
            .then(|| n / self.block_len() * self.block_bytes())
    }
}

/// The name ggml gives a type id, for error messages.
pub fn type_name(id: u32) -> String {
    const NAMES: [&str; 31] = [
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K",
        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
    ];
    match NAMES.get(id as usize) {
        Some(name) => format!("{name} (type {id})"),
        None => format!("type {id}"),
    }
}

/// Expands `data`, which must hold exactly `ty.bytes_for(out.len())` bytes, into `out`.
///
/// The f32 mode multiplies quantised weights a dequantised tile at a time, so this runs once per
/// weight and token: it is compiled a second time for AVX-512 (or AVX2) to let the compiler use
/// wide vectors. Rust never fuses a multiply and an add, so every path computes the same
/// roundings and the values are the same bits.
pub fn dequantize(ty: GgmlType, data: &[u8], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match crate::model::numerics::kernels::isa() {
        // SAFETY: `isa` chose the path from the features this CPU has.
        crate::model::numerics::kernels::Isa::Avx512 => {
            return unsafe { dequantize_avx512(ty, data, out) }
        }
        crate::model::numerics::kernels::Isa::Avx2 => {
            return unsafe { dequantize_avx2(ty, data, out) }
        }
        crate::model::numerics::kernels::Isa::Portable => {}
    }
    dequantize_portable(ty, data, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
unsafe fn dequantize_avx512(ty: GgmlType, data: &[u8], out: &mut [f32]) {
    dequantize_portable(ty, data, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn dequantize_avx2(ty: GgmlType, data: &[u8], out: &mut [f32]) {
    dequantize_portable(ty, data, out)
}

#[inline(always)]
fn dequantize_portable(ty: GgmlType, data: &[u8], out: &mut [f32]) {
    assert_eq!(Some(data.len()), ty.bytes_for(out.len()));
    // Plain `for` loops: an iterator's `for_each` may be compiled out of line, without the
    // caller's vector features.
    macro_rules! each {
        ($block:expr) => {
            for (b, y) in data
                .chunks_exact(ty.block_bytes())
                .zip(out.chunks_exact_mut(ty.block_len()))
            {
                #[allow(clippy::redundant_closure_call)]
                $block(b, y)
            }
        };
    }
    match ty {
        GgmlType::F32 => {
            each!(|b: &[u8], y: &mut [f32]| y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        GgmlType::F16 => each!(|b: &[u8], y: &mut [f32]| y[0] = half16(b)),
        GgmlType::Bf16 => {
            each!(|b: &[u8], y: &mut [f32]| y[0] = bf16::from_le_bytes([b[0], b[1]]).to_f32())
        }
        GgmlType::Q4_0 => each!(q4_0),
        GgmlType::Q4_1 => each!(q4_1),
        GgmlType::Q5_0 => each!(q5_0),
        GgmlType::Q5_1 => each!(q5_1),
        GgmlType::Q8_0 => each!(q8_0),
        GgmlType::Q4K => each!(q4_k),
        GgmlType::Q5K => each!(q5_k),
        GgmlType::Q6K => each!(q6_k),
        GgmlType::Mxfp4 => each!(mxfp4),
    }
}

#[inline(always)]
fn half16(b: &[u8]) -> f32 {
    f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// A quantised block as integers, the form the integer kernels multiply (`qmatmul`): value `e`
/// is `d * sc[e / sub] * (u[e] - zero) - second * min[e / sub]` for the k-quants and
/// `d * (u[e] - zero) + second` for the legacy types, where `sub`, `zero` and the meaning of
/// `sc` (signed for Q6_K) come from the type. `d` and `second` are the block's f16 fields as
/// stored (`second` is Q4_1/Q5_1's `m` or a k-quant's `dmin`, else 0). MXFP4's `d` is its
/// E8M0 byte and a 0 (the scale `e8m0_half(d[0])`, not an f16), and `u` its table values
/// (`MXFP4_VALUES`) plus 12.
pub struct IntBlock {
    pub u: [u8; QK_K],
    pub sc: [u8; 16],
    pub min: [u8; 16],
    pub d: [u8; 2],
    pub second: [u8; 2],
}

impl Default for IntBlock {
    fn default() -> IntBlock {
        IntBlock {
            u: [0; QK_K],
            sc: [0; 16],
            min: [0; 16],
            d: [0; 2],
            second: [0; 2],
        }
    }
}

/// Writes block `b` of a quantised type `ty` as integers into `out` (the first
/// `ty.block_len()` values of `out.u`); the layouts are those of the f32 functions below.
pub fn integers(ty: GgmlType, b: &[u8], out: &mut IntBlock) {
    let (d, second) = match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => ([b[0], b[1]], [0, 0]),
        GgmlType::Q6K => ([b[208], b[209]], [0, 0]),
        GgmlType::Mxfp4 => ([b[0], 0], [0, 0]),
        _ => ([b[0], b[1]], [b[2], b[3]]),
    };
    (out.d, out.second) = (d, second);
    let u = &mut out.u;
    match ty {
        GgmlType::Q4_0 | GgmlType::Q4_1 => {
            let qs = if ty == GgmlType::Q4_0 {
                &b[2..18]
            } else {
                &b[4..20]
            };
            for (j, &q) in qs.iter().enumerate() {
                (u[j], u[j + 16]) = (q & 0xF, q >> 4);
            }
        }
        GgmlType::Q5_0 => q5_values(&b[2..6], &b[6..22]).for_each(|(j, lo, hi)| {
            (u[j], u[j + 16]) = (lo, hi);
        }),
        GgmlType::Q5_1 => q5_values(&b[4..8], &b[8..24]).for_each(|(j, lo, hi)| {
            (u[j], u[j + 16]) = (lo, hi);
        }),
        // Offset binary, so that every type's values are unsigned: `u - 128` is the weight.
        GgmlType::Q8_0 => u[..QK]
            .iter_mut()
            .zip(&b[2..34])
            .for_each(|(u, &q)| *u = q ^ 0x80),
        GgmlType::Q4K | GgmlType::Q5K => {
            let (qh, qs) = if ty == GgmlType::Q4K {
                (None, &b[16..144])
            } else {
                (Some(&b[16..48]), &b[48..176])
            };
            for j in 0..8 {
                (out.sc[j], out.min[j]) = scale_min_k4(j, &b[4..16]);
            }
            for (chunk, qs) in qs.chunks_exact(32).enumerate() {
                for (l, &q) in qs.iter().enumerate() {
                    let bit = |s: usize| qh.map_or(0, |qh| ((qh[l] >> s) & 1) << 4);
                    u[64 * chunk + l] = (q & 0xF) | bit(2 * chunk);
                    u[64 * chunk + l + 32] = (q >> 4) | bit(2 * chunk + 1);
                }
            }
        }
        GgmlType::Q6K => {
            out.sc.copy_from_slice(&b[192..208]);
            for half in 0..2 {
                let ql = &b[64 * half..64 * half + 64];
                let qh = &b[128 + 32 * half..128 + 32 * half + 32];
                let u = &mut u[128 * half..128 * half + 128];
                for l in 0..32 {
                    u[l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
                    u[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
                    u[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                    u[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                }
            }
        }
        // Unsigned, as every type's values: `u - 12` is the table value.
        GgmlType::Mxfp4 => {
            for (j, &q) in b[1..17].iter().enumerate() {
                let value = |nibble: u8| (MXFP4_VALUES[usize::from(nibble)] + 12) as u8;
                (u[j], u[j + 16]) = (value(q & 0xF), value(q >> 4));
            }
        }
        GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => {
            unreachable!("float types have no integer form")
        }
    }
}

/// MXFP4's values (`kvalues_mxfp4`): E2M1's, doubled so that they are integers.
pub const MXFP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// An E8M0 scale halved, `2^(e − 128)`, for the doubled values: llama.cpp's
/// `GGML_E8M0_TO_FP32_HALF`, whose bit arithmetic gives e = 0 and 1 the subnormals 2^−128 and
/// 2^−127. For e = 255 (NaN in the OCP format) it gives 2^127; `mxfp4` below makes that NaN, so
/// that a file holding one is refused when loaded, before any product uses it.
pub const fn e8m0_half(e: u8) -> f32 {
    match e {
        0..=1 => f32::from_bits(0x0020_0000 << e),
        e => f32::from_bits(((e - 1) as u32) << 23),
    }
}

/// block_mxfp4 { u8 e; u8 qs[16] } (ggml-common.h): x = kvalues_mxfp4[nibble] * 2^(e − 128),
/// low nibbles the first 16 values (`e8m0_half`; e = 255 NaN).
#[inline(always)]
fn mxfp4(b: &[u8], y: &mut [f32]) {
    let d = match b[0] {
        255 => f32::NAN,
        e => e8m0_half(e),
    };
    for (j, &q) in b[1..17].iter().enumerate() {
        y[j] = f32::from(MXFP4_VALUES[(q & 0xF) as usize]) * d;
        y[j + 16] = f32::from(MXFP4_VALUES[(q >> 4) as usize]) * d;
    }
}

/// block_q4_0 { half d; u8 qs[16] }: x = (nibble - 8) * d; low nibbles are the first 16 values.
#[inline(always)]
fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = half16(b);
    for (j, &q) in b[2..18].iter().enumerate() {
        y[j] = ((q & 0xF) as i32 - 8) as f32 * d;
        y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

/// block_q4_1 { half d; half m; u8 qs[16] }: x = nibble * d + m.
#[inline(always)]
fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half16(b), half16(&b[2..]));
    for (j, &q) in b[4..20].iter().enumerate() {
        y[j] = (q & 0xF) as f32 * d + m;
        y[j + 16] = (q >> 4) as f32 * d + m;
    }
}

/// The 5-bit values of a Q5 block: low nibbles from `qs`, fifth bits from the 32-bit `qh`
/// (bit j for value j).
#[inline(always)]
fn q5_values<'a>(qh: &[u8], qs: &'a [u8]) -> impl Iterator<Item = (usize, u8, u8)> + 'a {
    let qh = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
    qs.iter().enumerate().map(move |(j, &q)| {
        let hi0 = (((qh >> j) & 1) << 4) as u8;
        let hi1 = (((qh >> (j + 16)) & 1) << 4) as u8;
        (j, (q & 0xF) | hi0, (q >> 4) | hi1)
    })
}

/// block_q5_0 { half d; u8 qh[4]; u8 qs[16] }: x = (q5 - 16) * d.
#[inline(always)]
fn q5_0(b: &[u8], y: &mut [f32]) {
    let d = half16(b);
    for (j, lo, hi) in q5_values(&b[2..6], &b[6..22]) {
        y[j] = (lo as i32 - 16) as f32 * d;
        y[j + 16] = (hi as i32 - 16) as f32 * d;
    }
}

/// block_q5_1 { half d; half m; u8 qh[4]; u8 qs[16] }: x = q5 * d + m.
#[inline(always)]
fn q5_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half16(b), half16(&b[2..]));
    for (j, lo, hi) in q5_values(&b[4..8], &b[8..24]) {
        y[j] = lo as f32 * d + m;
        y[j + 16] = hi as f32 * d + m;
    }
}

/// block_q8_0 { half d; i8 qs[32] }: x = q * d.
#[inline(always)]
fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = half16(b);
    for (y, &q) in y.iter_mut().zip(&b[2..34]) {
        *y = q as i8 as f32 * d;
    }
}

/// The 6-bit scale and min of sub-block `j` (0..8) packed in the 12 `scales` bytes of Q4_K/Q5_K
/// (ggml's `get_scale_min_k4`).
#[inline(always)]
fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// `scale_min_k4` as f32.
#[inline(always)]
fn scale_min_k4_f32(j: usize, s: &[u8]) -> (f32, f32) {
    let (sc, m) = scale_min_k4(j, s);
    (sc as f32, m as f32)
}

/// block_q4_K { half d; half dmin; u8 scales[12]; u8 qs[128] }: eight sub-blocks of 32;
/// each 32 bytes of `qs` give two sub-blocks (low nibbles, then high nibbles);
/// x = d * scale * q - dmin * min.
#[inline(always)]
fn q4_k(b: &[u8], y: &mut [f32]) {
    let (d, dmin) = (half16(b), half16(&b[2..]));
    let scales = &b[4..16];
    for (chunk, (qs, y)) in b[16..144]
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(64))
        .enumerate()
    {
        let (sc1, m1) = scale_min_k4_f32(2 * chunk, scales);
        let (sc2, m2) = scale_min_k4_f32(2 * chunk + 1, scales);
        for (l, &q) in qs.iter().enumerate() {
            y[l] = d * sc1 * (q & 0xF) as f32 - dmin * m1;
            y[l + 32] = d * sc2 * (q >> 4) as f32 - dmin * m2;
        }
    }
}

/// block_q5_K { half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }: as Q4_K, with the fifth
/// bit of value l of sub-block s at bit s of qh[l].
#[inline(always)]
fn q5_k(b: &[u8], y: &mut [f32]) {
    let (d, dmin) = (half16(b), half16(&b[2..]));
    let scales = &b[4..16];
    let qh = &b[16..48];
    for (chunk, (qs, y)) in b[48..176]
        .chunks_exact(32)
        .zip(y.chunks_exact_mut(64))
        .enumerate()
    {
        let (sc1, m1) = scale_min_k4_f32(2 * chunk, scales);
        let (sc2, m2) = scale_min_k4_f32(2 * chunk + 1, scales);
        let (bit1, bit2) = (1u8 << (2 * chunk), 1u8 << (2 * chunk + 1));
        for (l, &q) in qs.iter().enumerate() {
            let hi1 = if qh[l] & bit1 != 0 { 16 } else { 0 };
            let hi2 = if qh[l] & bit2 != 0 { 16 } else { 0 };
            y[l] = d * sc1 * ((q & 0xF) + hi1) as f32 - dmin * m1;
            y[l + 32] = d * sc2 * ((q >> 4) + hi2) as f32 - dmin * m2;
        }
    }
}

/// block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; half d }: two halves of 128 values, each
/// from 64 bytes of `ql`, 32 of `qh` and 8 scales (one per 16 values); x = d * scale * (q6 - 32).
#[inline(always)]
fn q6_k(b: &[u8], y: &mut [f32]) {
    let d = half16(&b[208..]);
    for half in 0..2 {
        let ql = &b[64 * half..64 * half + 64];
        let qh = &b[128 + 32 * half..128 + 32 * half + 32];
        let sc = &b[192 + 8 * half..192 + 8 * half + 8];
        let y = &mut y[128 * half..128 * half + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i32 - 32;
            let q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
            y[l] = d * (sc[is] as i8) as f32 * q1 as f32;
            y[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
            y[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
            y[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each block is packed the way ggml's reference quantisers (`quantize_row_*_ref`) write it,
    //! from chosen small integers and power-of-two scales, so every expected value is exact.

    use super::*;

    /// MXFP4 against gguf-py's own dequantiser (llama-cpp-python 0.3.36's vendored `gguf`,
    /// `gguf.quants.dequantize(.., MXFP4)`): five blocks of random nibbles with scales e = 0, 1
    /// (subnormal), 120, 127, 130; its values divided by 2^(e − 128) are the integers below.
    #[test]
    fn mxfp4_matches_gguf_py() {
        let bytes: [u8; 85] = [
            0, 28, 35, 174, 236, 211, 176, 184, 146, 241, 195, 74, 187, 24, 50, 75, 135, 1, 84, 4,
            38, 136, 5, 149, 126, 195, 153, 16, 189, 180, 224, 24, 203, 207, 120, 167, 101, 8, 144,
            182, 91, 158, 130, 67, 128, 129, 108, 5, 206, 130, 199, 127, 114, 120, 254, 144, 222,
            20, 206, 203, 41, 216, 191, 198, 44, 221, 65, 152, 130, 253, 33, 25, 72, 37, 146, 152,
            104, 88, 130, 115, 137, 211, 197, 216, 171,
        ];
        let ints: [i32; 160] = [
            -4, 3, -8, -4, 3, 0, 0, 2, 1, 3, -2, -3, 0, 2, -3, 12, 1, 2, -2, -8, -6, -3, -3, -1,
            -12, -4, 4, -3, 1, 3, 4, 0, 4, 4, 8, 0, 6, 6, -8, 3, -1, 0, -6, 4, 0, 0, -3, -12, 6, 0,
            2, 0, 0, -1, 12, -4, -1, 1, -3, -3, -8, 1, -4, -4, 12, 6, 0, 0, 8, -3, -8, 2, 3, 0, 1,
            -4, 6, -8, 2, 12, -2, 8, 0, -1, -3, 6, -1, 0, 4, 0, 0, 8, 0, -4, 0, -4, 2, 0, -8, 0,
            -8, 4, -8, -3, -1, 0, -12, 8, -4, -6, 1, 0, 12, 12, -12, -1, -6, 1, -4, -4, 2, -6, -3,
            -4, 2, -6, 4, -1, -6, 1, -1, 0, 6, 2, 0, 0, 0, 2, 3, -1, 3, 6, 0, -3, -12, 2, 1, 4, 2,
            -1, -1, 8, 6, 0, 12, 0, -6, -4, -6, -2,
        ];
        let mut out = [0f32; 160];
        dequantize(GgmlType::Mxfp4, &bytes, &mut out);
        for (i, (&x, &k)) in out.iter().zip(&ints).enumerate() {
            let e = [0, 1, 120, 127, 130][i / 32];
            let want = f64::from(k) * 2f64.powi(e - 128);
            assert_eq!(f64::from(x), want, "value {i}");
        }
        let mut nan = [0f32; 32];
        dequantize(
            GgmlType::Mxfp4,
            &[[255u8].as_slice(), &[0x11; 16]].concat(),
            &mut nan,
        );
        assert!(nan.iter().all(|x| x.is_nan()));
    }

    const ONE: [u8; 2] = [0x00, 0x3C]; // f16 1.0
    const HALF: [u8; 2] = [0x00, 0x38]; // f16 0.5
    const TWO: [u8; 2] = [0x00, 0x40]; // f16 2.0
    const MINUS_THREE: [u8; 2] = [0x00, 0xC2]; // f16 -3.0
    const QUARTER: [u8; 2] = [0x00, 0x34]; // f16 0.25

    fn run(ty: GgmlType, block: &[u8]) -> Vec<f32> {
        assert_eq!(block.len(), ty.block_bytes());
        let mut out = vec![f32::NAN; ty.block_len()];
        dequantize(ty, block, &mut out);
        out
    }

    #[test]
    fn floats() {
        let mut f32s = 1.5f32.to_le_bytes().to_vec();
        f32s.extend((-2.25f32).to_le_bytes());
        let mut out = [0.0; 2];
        dequantize(GgmlType::F32, &f32s, &mut out);
        assert_eq!(out, [1.5, -2.25]);
        dequantize(GgmlType::F16, &[0x00, 0x3C, 0x00, 0xC0], &mut out);
        assert_eq!(out, [1.0, -2.0]);
        // bf16 is the top half of an f32: 0x3F80 = 1.0, 0xC040 = -3.0.
        dequantize(GgmlType::Bf16, &[0x80, 0x3F, 0x40, 0xC0], &mut out);
        assert_eq!(out, [1.0, -3.0]);
    }

    /// Packs 32 4-bit values as ggml does: byte j holds value j (low) and j + 16 (high).
    fn pack_nibbles(q: &[u8]) -> Vec<u8> {
        (0..16).map(|j| q[j] | (q[j + 16] << 4)).collect()
    }

    #[test]
    fn q4_0_and_q4_1() {
        let q: Vec<u8> = (0..32).map(|i| ((i * 7 + 3) % 16) as u8).collect();
        let block = [&HALF[..], &pack_nibbles(&q)].concat();
        let want: Vec<f32> = q.iter().map(|&v| (v as f32 - 8.0) * 0.5).collect();
        assert_eq!(run(GgmlType::Q4_0, &block), want);

        let block = [&TWO[..], &MINUS_THREE, &pack_nibbles(&q)].concat();
        let want: Vec<f32> = q.iter().map(|&v| v as f32 * 2.0 - 3.0).collect();
        assert_eq!(run(GgmlType::Q4_1, &block), want);
    }

    /// Packs 32 5-bit values: low nibbles as Q4, fifth bit of value i at bit i of `qh`.
    fn pack_q5(q: &[u8]) -> Vec<u8> {
        let qh = q
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &v)| acc | (((v >> 4) as u32 & 1) << i));
        let low: Vec<u8> = q.iter().map(|v| v & 0xF).collect();
        [&qh.to_le_bytes()[..], &pack_nibbles(&low)].concat()
    }

    #[test]
    fn q5_0_and_q5_1() {
        let q: Vec<u8> = (0..32).map(|i| ((i * 11 + 5) % 32) as u8).collect();
        let block = [&QUARTER[..], &pack_q5(&q)].concat();
        let want: Vec<f32> = q.iter().map(|&v| (v as f32 - 16.0) * 0.25).collect();
        assert_eq!(run(GgmlType::Q5_0, &block), want);

        let block = [&HALF[..], &ONE, &pack_q5(&q)].concat();
        let want: Vec<f32> = q.iter().map(|&v| v as f32 * 0.5 + 1.0).collect();
        assert_eq!(run(GgmlType::Q5_1, &block), want);
    }

    #[test]
    fn q8_0() {
        let q: Vec<i8> = (0..32).map(|i| (i * 9 - 128) as i8).collect();
        let block = [&TWO[..], &q.iter().map(|&v| v as u8).collect::<Vec<_>>()].concat();
        let want: Vec<f32> = q.iter().map(|&v| v as f32 * 2.0).collect();
        assert_eq!(run(GgmlType::Q8_0, &block), want);
    }

    /// The 12 scale bytes of Q4_K/Q5_K for eight 6-bit scales and mins (`quantize_row_q4_K_ref`).
    fn pack_scales(sc: &[u8; 8], m: &[u8; 8]) -> [u8; 12] {
        let mut s = [0u8; 12];
        for j in 0..8 {
            if j < 4 {
                s[j] = sc[j];
                s[j + 4] = m[j];
            } else {
                s[j + 4] = (sc[j] & 0xF) | ((m[j] & 0xF) << 4);
                s[j - 4] |= (sc[j] >> 4) << 6;
                s[j] |= (m[j] >> 4) << 6;
            }
        }
        s
    }

    const SC: [u8; 8] = [1, 63, 17, 32, 5, 48, 33, 60];
    const MN: [u8; 8] = [0, 2, 63, 31, 16, 47, 8, 61];

    fn k_expected(q: &[u8], d: f32, dmin: f32) -> Vec<f32> {
        q.iter()
            .enumerate()
            .map(|(e, &v)| d * SC[e / 32] as f32 * v as f32 - dmin * MN[e / 32] as f32)
            .collect()
    }

    #[test]
    fn q4_k() {
        let q: Vec<u8> = (0..256).map(|e| ((e * 5 + 1) % 16) as u8).collect();
        // Each 64 values: byte l of their 32 holds value l (low) and l + 32 (high).
        let qs: Vec<u8> = (0..4)
            .flat_map(|c| (0..32).map(move |l| (c, l)))
            .map(|(c, l)| q[64 * c + l] | (q[64 * c + l + 32] << 4))
            .collect();
        let block = [&HALF[..], &QUARTER, &pack_scales(&SC, &MN), &qs].concat();
        assert_eq!(run(GgmlType::Q4K, &block), k_expected(&q, 0.5, 0.25));
    }

    #[test]
    fn q5_k() {
        let q: Vec<u8> = (0..256).map(|e| ((e * 13 + 7) % 32) as u8).collect();
        let mut qh = [0u8; 32];
        let mut qs = Vec::new();
        for (c, n) in (0..256).step_by(64).enumerate() {
            for j in 0..32 {
                let (l1, l2) = (q[n + j], q[n + j + 32]);
                qh[j] |= ((l1 >> 4) << (2 * c)) | ((l2 >> 4) << (2 * c + 1));
                qs.push((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        }
        let block = [&TWO[..], &ONE, &pack_scales(&SC, &MN), &qh, &qs].concat();
        assert_eq!(run(GgmlType::Q5K, &block), k_expected(&q, 2.0, 1.0));
    }

    #[test]
    fn q6_k() {
        let q: Vec<u8> = (0..256).map(|e| ((e * 29 + 11) % 64) as u8).collect();
        let scales: Vec<i8> = (0..16).map(|i| (i * 17 - 128) as i8).collect();
        let (mut ql, mut qh) = (vec![0u8; 128], vec![0u8; 64]);
        for j in (0..256).step_by(128) {
            let (ql, qh) = (&mut ql[j / 2..j / 2 + 64], &mut qh[j / 4..j / 4 + 32]);
            for l in 0..32 {
                let v = [q[j + l], q[j + l + 32], q[j + l + 64], q[j + l + 96]];
                ql[l] = (v[0] & 0xF) | ((v[2] & 0xF) << 4);
                ql[l + 32] = (v[1] & 0xF) | ((v[3] & 0xF) << 4);
                qh[l] = (v[0] >> 4) | ((v[1] >> 4) << 2) | ((v[2] >> 4) << 4) | ((v[3] >> 4) << 6);
            }
        }
        let sc: Vec<u8> = scales.iter().map(|&s| s as u8).collect();
        let block = [&ql[..], &qh, &sc, &HALF].concat();
        let want: Vec<f32> = q
            .iter()
            .enumerate()
            .map(|(e, &v)| 0.5 * scales[e / 16] as f32 * (v as f32 - 32.0))
            .collect();
        assert_eq!(run(GgmlType::Q6K, &block), want);
    }

    #[test]
    fn sizes_match_ggml() {
        // ggml's type_size per block.
        let sizes = [
            (GgmlType::Q4_0, 18),
            (GgmlType::Q4_1, 20),
            (GgmlType::Q5_0, 22),
            (GgmlType::Q5_1, 24),
            (GgmlType::Q8_0, 34),
            (GgmlType::Q4K, 144),
            (GgmlType::Q5K, 176),
            (GgmlType::Q6K, 210),
        ];
        for (ty, bytes) in sizes {
            assert_eq!(ty.block_bytes(), bytes, "{ty:?}");
        }
        assert_eq!(GgmlType::Q4K.bytes_for(512), Some(288));
        assert_eq!(GgmlType::Q4K.bytes_for(100), None);
    }

    /// The integer form gives back every dequantised value, by the formula of `IntBlock` in the
    /// f32 functions' order of operations.
    #[test]
    fn integers_rebuild_every_value() {
        let mut s = 99u32;
        for ty in GgmlType::QUANTISED {
            let b: Vec<u8> = (0..ty.block_bytes())
                .map(|_| {
                    s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (s >> 16) as u8 & 0x3F
                })
                .collect();
            let want = run(ty, &b);
            let mut int = IntBlock::default();
            integers(ty, &b, &mut int);
            let (d, second) = (half16(&int.d), half16(&int.second));
            for (e, &want) in want.iter().enumerate() {
                let u = i32::from(int.u[e]);
                let got = match ty {
                    GgmlType::Q4_0 => (u - 8) as f32 * d,
                    GgmlType::Q5_0 => (u - 16) as f32 * d,
                    GgmlType::Q8_0 => (u - 128) as f32 * d,
                    GgmlType::Q4_1 | GgmlType::Q5_1 => u as f32 * d + second,
                    GgmlType::Q4K | GgmlType::Q5K => {
                        let j = e / 32;
                        d * f32::from(int.sc[j]) * u as f32 - second * f32::from(int.min[j])
                    }
                    GgmlType::Mxfp4 => (u - 12) as f32 * e8m0_half(int.d[0]),
                    _ => d * f32::from(int.sc[e / 16] as i8) * (u - 32) as f32,
                };
                assert_eq!(got.to_bits(), want.to_bits(), "{ty:?} value {e}");
            }
        }
    }
}
