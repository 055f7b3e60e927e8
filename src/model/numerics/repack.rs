//! Quantised weights repacked for the integer kernels (`qmatmul`): the same bits of information
//! as the GGUF blocks, laid out so that one vector instruction multiplies 16 weight rows at once.
//!
//! Rows are taken 16 at a time (a *panel*; the last is padded with zero rows). Within a panel,
//! block by block, the values are stored as unsigned integers in *groups* of 4 consecutive
//! values: group `g` of a block is 64 bytes, row `r`'s values `4g..4g+4` at bytes `4r..4r+4`.
//! A `dpbusd` of that against 4 activation bytes broadcast to every lane adds one group to 16
//! rows' sums at once, and the per-row scales then apply lane by lane. Bits are packed as the
//! file packs them:
//! - 8-bit values (Q8_0, as offset binary) take 64 bytes per group;
//! - MXFP4's values are its table's (`quant::MXFP4_VALUES`, −12..=12) plus 12, in 5 bits as
//!   Q5_0's, so that the kernels multiply them as any unsigned value (zero 12), not through a
//!   table;
//! - lower nibbles of narrower values take 64 bytes per *pair* of groups (`2i` in the low
//!   nibbles, `2i + 1` in the high ones);
//! - a fifth bit takes a plane of 64 bytes per 8 groups (bit `k` for group `8i + k`), a fifth
//!   and sixth bit a plane per 4 groups (bits `2k, 2k + 1` for group `4i + k`).
//!
//! A packed block has a *header*, before its values: the 16 rows' f16 scales `d` (MXFP4: its
//! E8M0 byte then a 0, the kernel turning it into an f32 as llama.cpp does), their second f16
//! (Q4_1's `m`, a k-quant's `dmin`), a k-quant's sub-block scales, sub-block by sub-block, 16
//! bytes each, and Q4_K/Q5_K's mins in groups of 4 sub-blocks as the values are (row `r`'s mins
//! `4i..4i + 4` at bytes `4r..4r + 4` of group `i`), so that a `dpbusd` weighs them too.
//! Headers fill whole 64-byte lines: where one is half a line short (Q4_0, Q5_0, Q8_0, Q6_K,
//! MXFP4), two blocks keep theirs side by side before both blocks' values. The values follow in the
//! order the kernel reads them, a plane right after the lower bits of its groups. With the
//! buffer starting on a line (`Packed`), no 64-byte load straddles two lines, and the lines a
//! product reads run in order through memory (decode reads each of them once, from memory).
//! The growth over the file is Q4_K/Q5_K's 6-bit scales stored as bytes (3%), MXFP4's fifth bit
//! and second scale byte (22 bytes a row and block for the file's 17: 29%), and for a row with
//! an odd number of blocks that share header lines, the unused half of its last unit.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use crate::model::format::quant::{integers, GgmlType, IntBlock};

/// Rows per panel: the lanes of a 512-bit register of f32 or i32.
pub const PANEL: usize = 16;
/// Bytes of one group of a panel.
pub const GROUP_BYTES: usize = 4 * PANEL;

/// How a sub-block's integer scale is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scales {
    /// Legacy types: one block, no sub-block scale.
    None,
    /// Q4_K, Q5_K: 6-bit scales and mins.
    WithMins,
    /// Q6_K: signed 8-bit scales.
    Signed,
}

/// How a block's scale `d` is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// An f16.
    Half,
    /// MXFP4's E8M0 byte (then a 0): `quant::e8m0_half` of it. An f16 cannot hold every one
    /// (2^−128 … 2^126).
    E8m0,
}

/// What the block's second f16 does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Second {
    None,
    /// Q4_1/Q5_1's `m`: added once per block, times the activation block's sum (`s`).
    Offset,
    /// A k-quant's `dmin`: subtracted times the sub-blocks' mins against activation sums.
    Min,
}

/// The integer form of a quantised type (`quant::IntBlock`) and its packed sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub ty: GgmlType,
    /// Values per block (32, or 256 for the k-quants): activations are quantised per block.
    pub block: usize,
    /// Values per sub-block (one integer scale each).
    pub sub: usize,
    /// Bits per value.
    pub bits: u32,
    /// Subtracted from every value.
    pub zero: i32,
    pub scale: Scale,
    pub scales: Scales,
    pub second: Second,
}

impl Layout {
    /// The layout of `ty`, when it has integer kernels. A `const fn`, so that the kernels can
    /// be compiled once per type with the layout's numbers as constants.
    pub const fn of(ty: GgmlType) -> Option<Layout> {
        const fn legacy(ty: GgmlType, bits: u32, zero: i32, second: Second) -> Layout {
            Layout {
                ty,
                block: 32,
                sub: 32,
                bits,
                zero,
                scale: Scale::Half,
                scales: Scales::None,
                second,
            }
        }
        const fn k(ty: GgmlType, sub: usize, bits: u32, zero: i32, scales: Scales) -> Layout {
            let second = match scales {
                Scales::WithMins => Second::Min,
                _ => Second::None,
            };
            Layout {
                ty,
                block: 256,
                sub,
                bits,
                zero,
                scale: Scale::Half,
                scales,
                second,
            }
        }
        Some(match ty {
            GgmlType::Q4_0 => legacy(ty, 4, 8, Second::None),
            GgmlType::Q4_1 => legacy(ty, 4, 0, Second::Offset),
            GgmlType::Q5_0 => legacy(ty, 5, 16, Second::None),
            GgmlType::Q5_1 => legacy(ty, 5, 0, Second::Offset),
            GgmlType::Q8_0 => legacy(ty, 8, 128, Second::None),
            GgmlType::Q4K => k(ty, 32, 4, 0, Scales::WithMins),
            GgmlType::Q5K => k(ty, 32, 5, 0, Scales::WithMins),
            GgmlType::Q6K => k(ty, 16, 6, 32, Scales::Signed),
            GgmlType::Mxfp4 => Layout {
                scale: Scale::E8m0,
                ..legacy(ty, 5, 12, Second::None)
            },
            GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => return None,
        })
    }

    /// Groups of 4 values per block.
    pub const fn groups(&self) -> usize {
        self.block / 4
    }

    /// Sub-blocks per block.
    pub const fn subs(&self) -> usize {
        self.block / self.sub
    }

    /// Bytes of the values' lower bits (all 8, or the nibbles) of one block of a panel.
    const fn low_bytes(&self) -> usize {
        if self.bits == 8 {
            self.groups() * GROUP_BYTES
        } else {
            self.groups() / 2 * GROUP_BYTES
        }
    }

    /// Groups whose high bits share one 64-byte plane (0: no plane).
    pub const fn groups_per_plane(&self) -> usize {
        match self.bits {
            5 => 8,
            6 => 4,
            _ => 0,
        }
    }

    const fn plane_bytes(&self) -> usize {
        match self.groups_per_plane() {
            0 => 0,
            n => self.groups() / n * GROUP_BYTES,
        }
    }

    /// Where group `g`'s lower bits are, from the start of its block's values: a pair of
    /// groups per line for nibbles, and with planes, each plane's groups then the plane.
    pub const fn low_at(&self, g: usize) -> usize {
        if self.bits == 8 {
            return g * GROUP_BYTES;
        }
        match self.groups_per_plane() {
            0 => g / 2 * GROUP_BYTES,
            n => (g / n * (n / 2 + 1) + g % n / 2) * GROUP_BYTES,
        }
    }

    /// Where the plane of group `g`'s high bits is, from the start of its block's values
    /// (layouts with planes).
    pub const fn plane_at(&self, g: usize) -> usize {
        let n = self.groups_per_plane();
        (g / n * (n / 2 + 1) + n / 2) * GROUP_BYTES
    }

    /// Offsets of a packed block's header fields and of its blocks within a panel.
    pub const fn offsets(&self) -> Offsets {
        let second = 2 * PANEL;
        let sc = second
            + match self.second {
                Second::None => 0,
                _ => 2 * PANEL,
            };
        let min = sc
            + match self.scales {
                Scales::None => 0,
                _ => self.subs() * PANEL,
            };
        let header = min
            + match self.scales {
                Scales::WithMins => self.subs() * PANEL,
                _ => 0,
            };
        // Every header is whole 32-byte halves of a line: two blocks share their header lines
        // where one would leave half a line (Q4_0, Q5_0, Q8_0, Q6_K and MXFP4).
        let per_unit = if header.is_multiple_of(LINE) { 1 } else { 2 };
        let values = self.low_bytes() + self.plane_bytes();
        let headers = (per_unit * header).next_multiple_of(LINE);
        Offsets {
            second,
            sc,
            min,
            header,
            headers,
            values,
            per_unit,
            unit: headers + per_unit * values,
        }
    }
}

/// A cache line: blocks and their values start on one.
const LINE: usize = 64;

/// Where things are in a panel (`Layout::offsets`). A panel is units of `per_unit` blocks: their
/// headers, then each block's values. In a header: the rows' `d` first, then the fields below.
#[derive(Clone, Copy, Debug)]
pub struct Offsets {
    pub second: usize,
    pub sc: usize,
    pub min: usize,
    header: usize,
    /// A unit's header lines.
    headers: usize,
    values: usize,
    per_unit: usize,
    unit: usize,
}

impl Offsets {
    /// Block `b`'s header, from the start of its panel.
    pub const fn header(&self, b: usize) -> usize {
        b / self.per_unit * self.unit + b % self.per_unit * self.header
    }

    /// Block `b`'s values, from the start of its panel.
    pub const fn values(&self, b: usize) -> usize {
        b / self.per_unit * self.unit + self.headers + b % self.per_unit * self.values
    }

    /// Bytes of a panel of `blocks` blocks.
    pub const fn panel(&self, blocks: usize) -> usize {
        blocks.div_ceil(self.per_unit) * self.unit
    }
}

/// Packed panels, in memory that starts on a cache line.
pub struct Packed {
    lines: Vec<Line>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE]);

impl Packed {
    fn zeroed(len: usize) -> Packed {
        let mut lines = Vec::with_capacity(len.div_ceil(LINE));
        huge_pages(lines.spare_capacity_mut());
        lines.resize(len.div_ceil(LINE), Line([0; LINE]));
        Packed { lines, len }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `Line` is 64 bytes without padding; `len` lies within the lines.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

/// Asks the kernel to back the whole 2 MiB pages inside `memory` (not yet touched) with huge
/// pages, where it only does so when asked (`transparent_hugepage` set to `madvise`). A product
/// streams its matrix once per token in decode, a new 4 KiB page every 64 lines. Measured with
/// `examples/kernel_bandwidth` (2 threads, 9728 × 2560, interleaved rounds on a noisy machine):
/// Q6_K 23.1 → 27.2 GB/s, the mean of 6 rounds; Q4_K no difference over 3.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn huge_pages<T>(memory: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = memory.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(memory);
        let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if first < last {
            // SAFETY: the range lies inside `memory`, which this process owns; the advice
            // changes how its pages are backed, never their contents. A refusal (an older
            // kernel, huge pages off) leaves 4 KiB pages, as before.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
}

/// Where a matrix's repacked form is kept: for the matrix's life (the dense weights), or in a
/// [`PackCache`] that may let it go (a mixture's experts, issue 45).
pub enum Packing {
    Kept(OnceLock<Packed>),
    Cached {
        cache: Arc<PackCache>,
        slot: Arc<Slot>,
    },
}

/// A matrix's place in a [`PackCache`]: its packed form while held, and when it was last used.
#[derive(Default)]
pub struct Slot {
    packed: Mutex<Option<Arc<Packed>>>,
    last: AtomicU64,
}

/// A packed form as `Packing::get` hands it out: borrowed, or shared with the cache (which may
/// let go of its copy meanwhile; this one lives until dropped).
pub enum PackedRef<'a> {
    Kept(&'a Packed),
    Cached(Arc<Packed>),
}

impl std::ops::Deref for PackedRef<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            PackedRef::Kept(p) => p.bytes(),
            PackedRef::Cached(p) => p.bytes(),
        }
    }
}

impl Packing {
    pub fn kept() -> Packing {
        Packing::Kept(OnceLock::new())
    }

    pub fn cached(cache: &Arc<PackCache>) -> Packing {
        Packing::Cached {
            cache: Arc::clone(cache),
            slot: Arc::default(),
        }
    }

    /// The packed form, made by `pack` when not held. Repacking is deterministic, so a form let
    /// go of and made again has the same bytes: the budget changes speed, never a bit.
    pub fn get(&self, pack: impl FnOnce() -> Packed) -> PackedRef<'_> {
        match self {
            Packing::Kept(once) => PackedRef::Kept(once.get_or_init(pack)),
            Packing::Cached { cache, slot } => PackedRef::Cached(cache.get(slot, pack)),
        }
    }
}

/// Issue 45: repacked matrices held within a byte budget, the least recently used let go of
/// first. A mixture's experts are repacked on their first use (the file's pages handed back
/// after): without a bound the heap would grow to every expert any token chose, over a long
/// run the whole file, which may not fit in memory. Past the budget an expert is repacked
/// again from the mapped file when next chosen (slower, never different).
pub struct PackCache {
    limit: AtomicUsize,
    clock: AtomicU64,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    bytes: usize,
    /// The largest `bytes` has been.
    peak: usize,
    slots: Vec<Arc<Slot>>,
}

impl PackCache {
    /// A cache of at most `limit` bytes (one matrix larger than that is still held while it is
    /// the last one used).
    pub fn new(limit: usize) -> PackCache {
        PackCache {
            limit: AtomicUsize::new(limit),
            clock: AtomicU64::new(0),
            held: Mutex::default(),
        }
    }

    /// Sets the most bytes held from the next repack on (matrices held past it are let go of
    /// then, least recently used first).
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// The bytes held now and the most ever held.
    pub fn held(&self) -> (usize, usize) {
        let held = self.held.lock().expect("no panic while held");
        (held.bytes, held.peak)
    }

    fn get(&self, slot: &Arc<Slot>, pack: impl FnOnce() -> Packed) -> Arc<Packed> {
        slot.last.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        if let Some(p) = slot.packed.lock().expect("no panic while held").as_ref() {
            return Arc::clone(p);
        }
        // Packed outside the locks: other matrices' products go on meanwhile.
        let fresh = Arc::new(pack());
        // Lock order: the cache, then a slot (the fast path above takes a slot alone).
        let mut held = self.held.lock().expect("no panic while held");
        {
            let mut mine = slot.packed.lock().expect("no panic while held");
            if let Some(p) = mine.as_ref() {
                // Another thread packed it first.
                return Arc::clone(p);
            }
            *mine = Some(Arc::clone(&fresh));
        }
        held.bytes += fresh.bytes().len();
        held.slots.push(Arc::clone(slot));
        while held.bytes > self.limit.load(Ordering::Relaxed) {
            let victim = held
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| !Arc::ptr_eq(s, slot))
                .min_by_key(|(_, s)| s.last.load(Ordering::Relaxed))
                .map(|(i, _)| i);
            let Some(i) = victim else { break };
            let victim = held.slots.swap_remove(i);
            let gone = victim.packed.lock().expect("no panic while held").take();
            held.bytes -= gone.map_or(0, |p| p.bytes().len());
        }
        held.peak = held.peak.max(held.bytes);
        fresh
    }
}

/// The experts' repack budget a model is loaded with: half of `MemAvailable` (the rest is for
/// the dense weights, the KV cache and the page cache the experts are repacked from); without
/// `/proc/meminfo`, unbounded. `Transformer::set_expert_budget` sets another for one model.
pub fn expert_budget() -> usize {
    available_memory().map_or(usize::MAX, |b| b / 2)
}

fn available_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Panels repacked between two calls of `pack`'s `done` (1,024 rows).
const CHUNK_PANELS: usize = 64;

/// Repacks `rows` rows of `bytes` (GGUF blocks of `layout.ty`, `cols` values a row): panel by
/// panel, block by block. After each chunk of rows, `done` gets the range of `bytes` it read,
/// so that the caller can let go of it while the rest is packed.
pub fn pack(
    layout: &Layout,
    cols: usize,
    rows: usize,
    bytes: &[u8],
    done: impl Fn(Range<usize>),
) -> Packed {
    let nb = cols / layout.block;
    let bb = layout.ty.block_bytes();
    let off = layout.offsets();
    let panel_bytes = off.panel(nb);
    let mut out = Packed::zeroed(rows.div_ceil(PANEL) * panel_bytes);
    for (chunk, panels) in out
        .bytes_mut()
        .chunks_mut(CHUNK_PANELS * panel_bytes)
        .enumerate()
    {
        let first = chunk * CHUNK_PANELS;
        panels
            .par_chunks_exact_mut(panel_bytes)
            .enumerate()
            .for_each(|(i, panel)| {
                let p = first + i;
                let mut ints: Vec<IntBlock> = (0..PANEL).map(|_| IntBlock::default()).collect();
                for b in 0..nb {
                    for (r, int) in ints.iter_mut().enumerate() {
                        let row = p * PANEL + r;
                        if row < rows {
                            integers(layout.ty, &bytes[(row * nb + b) * bb..][..bb], int);
                        } else {
                            // Padding: zero scales, so the padded lanes are 0 and never read.
                            *int = IntBlock::default();
                        }
                    }
                    pack_block(layout, &off, &ints, panel, b);
                }
            });
        let row_bytes = nb * bb;
        let end = ((first + CHUNK_PANELS) * PANEL).min(rows);
        done(first * PANEL * row_bytes..end * row_bytes);
    }
    out
}

/// Block `b` of 16 rows into its panel. Group by group: each group's places (its lower bits'
/// bytes, its plane's and the shifts into them) are worked out once for its 16 rows, not once per
/// value, which made the repack of a 1.5B model's weights about a third of a 64-token
/// `generate-text` (it runs once, at the first product).
fn pack_block(layout: &Layout, off: &Offsets, ints: &[IntBlock], panel: &mut [u8], b: usize) {
    let (header, values) = (off.header(b), off.values(b));
    let per_plane = layout.groups_per_plane();
    let width = layout.bits.saturating_sub(4);
    for g in 0..layout.groups() {
        let low = values + layout.low_at(g);
        let low_shift = 4 * (g % 2);
        let plane = (per_plane > 0).then(|| values + layout.plane_at(g));
        let high_shift = match per_plane {
            0 => 0,
            n => width * (g % n) as u32,
        };
        for (r, int) in ints.iter().enumerate() {
            let u = &int.u[4 * g..4 * g + 4];
            let lows = &mut panel[low + 4 * r..][..4];
            if layout.bits == 8 {
                lows.copy_from_slice(u);
            } else {
                for (l, &u) in lows.iter_mut().zip(u) {
                    *l |= (u & 0xF) << low_shift;
                }
            }
            if let Some(plane) = plane {
                for (h, &u) in panel[plane + 4 * r..][..4].iter_mut().zip(u) {
                    *h |= ((u32::from(u >> 4)) << high_shift) as u8;
                }
            }
        }
    }
    for (r, int) in ints.iter().enumerate() {
        panel[header + 2 * r..][..2].copy_from_slice(&int.d);
        if layout.second != Second::None {
            panel[header + off.second + 2 * r..][..2].copy_from_slice(&int.second);
        }
        if layout.scales != Scales::None {
            for j in 0..layout.subs() {
                panel[header + off.sc + j * PANEL + r] = int.sc[j];
                if layout.scales == Scales::WithMins {
                    panel[header + off.min + j / 4 * GROUP_BYTES + 4 * r + j % 4] = int.min[j];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Value `e` (0..block) of row `r` (0..16) of a packed block whose values start at
    /// `values`: the unsigned integer.
    fn value(layout: &Layout, values: &[u8], r: usize, e: usize) -> u8 {
        let (g, at) = (e / 4, 4 * r + e % 4);
        let low = values[layout.low_at(g) + at];
        let low = if layout.bits == 8 {
            low
        } else {
            (low >> (4 * (g % 2))) & 0xF
        };
        let per_plane = layout.groups_per_plane();
        if per_plane == 0 {
            return low;
        }
        let width = layout.bits - 4;
        let plane = values[layout.plane_at(g) + at];
        let high = (plane >> (width * (g % per_plane) as u32)) & ((1 << width) - 1);
        low | (high << 4)
    }

    /// Every value, scale and min of every row comes back from the packed form, and every
    /// block's values start on a cache line (odd and even numbers of blocks).
    #[test]
    fn packing_keeps_every_integer() {
        let mut s = 7u32;
        for ty in GgmlType::QUANTISED {
            for nb in [2, 3] {
                let layout = Layout::of(ty).unwrap();
                let (rows, cols) = (21, nb * layout.block);
                let bytes: Vec<u8> = (0..rows * cols / ty.block_len() * ty.block_bytes())
                    .map(|_| {
                        s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        (s >> 16) as u8
                    })
                    .collect();
                let packed = pack(&layout, cols, rows, &bytes, |_| {});
                let packed = packed.bytes();
                assert!((packed.as_ptr() as usize).is_multiple_of(LINE));
                let off = layout.offsets();
                let panel_bytes = off.panel(nb);
                assert!(panel_bytes.is_multiple_of(LINE), "{ty:?}");
                assert_eq!(packed.len(), rows.div_ceil(PANEL) * panel_bytes);
                let mut int = IntBlock::default();
                for row in 0..rows {
                    let panel = &packed[(row / PANEL) * panel_bytes..][..panel_bytes];
                    for b in 0..nb {
                        let bb = ty.block_bytes();
                        integers(ty, &bytes[(row * nb + b) * bb..][..bb], &mut int);
                        assert!(off.values(b).is_multiple_of(LINE), "{ty:?}");
                        let (header, values) = (&panel[off.header(b)..], &panel[off.values(b)..]);
                        let r = row % PANEL;
                        for e in 0..layout.block {
                            assert_eq!(value(&layout, values, r, e), int.u[e], "{ty:?}");
                        }
                        assert_eq!(header[2 * r..][..2], int.d);
                        if layout.second != Second::None {
                            assert_eq!(header[off.second + 2 * r..][..2], int.second);
                        }
                        for j in 0..layout.subs() {
                            if layout.scales != Scales::None {
                                assert_eq!(header[off.sc + j * PANEL + r], int.sc[j], "{ty:?}");
                            }
                            if layout.scales == Scales::WithMins {
                                let at = off.min + j / 4 * GROUP_BYTES + 4 * r + j % 4;
                                assert_eq!(header[at], int.min[j], "{ty:?}");
                            }
                        }
                    }
                }
            }
        }
    }
}
