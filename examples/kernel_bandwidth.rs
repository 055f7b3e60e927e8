//! How fast the integer kernels read weights that are not in any cache: the measure behind
//! `qmatmul`'s `PREFETCH`. Decode multiplies one activation row by every weight matrix once per
//! token, so its speed is the rate at which a product of one row streams its matrix from
//! memory.
//!
//! `cargo run --release --example kernel_bandwidth -- TYPE ROWS COLS [ACTIVATION_ROWS]`, with
//! TYPE one of q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k: 40 random matrices of that shape (more
//! than the caches hold, for the usual shapes), each multiplied in turn, five rounds, three
//! times; prints GB/s of the file's bytes and multiply-adds per second, and GB per CPU-second
//! of the process (user and system time, `getrusage`): on a machine shared with other work the
//! wall-clock rate follows the scheduler, the rate per CPU-second far less. Threads: rayon's
//! (`RAYON_NUM_THREADS`).

use std::time::Instant;

use deltalogic::model::format::gguf::BlockBytes;
use deltalogic::model::format::quant::{type_name, GgmlType};
use deltalogic::model::numerics::qmatmul::{qmatmul_t_into, Activations, QMatrix};

const MATRICES: usize = 40;
const ROUNDS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: kernel_bandwidth TYPE ROWS COLS [ACTIVATION_ROWS]";
    // ggml's names of the types with integer kernels.
    let ty = args
        .first()
        .and_then(|name| {
            (0..=u32::from(u8::MAX)).find_map(|id| {
                let ty = GgmlType::from_id(id).filter(|t| GgmlType::QUANTISED.contains(t))?;
                let known = type_name(id);
                known
                    .split(' ')
                    .next()?
                    .eq_ignore_ascii_case(name)
                    .then_some(ty)
            })
        })
        .expect(usage);
    let number = |i: usize, default: Option<usize>| -> usize {
        match args.get(i) {
            Some(s) => s.parse().expect(usage),
            None => default.expect(usage),
        }
    };
    let (rows, cols, t) = (number(1, None), number(2, None), number(3, Some(1)));
    assert!(
        cols.is_multiple_of(ty.block_len()),
        "{cols} columns are not whole blocks of {ty:?}"
    );
    let row_bytes = cols / ty.block_len() * ty.block_bytes();
    let mut seed = 1u32;
    let matrices: Vec<QMatrix> = (0..MATRICES)
        .map(|_| {
            let mut bytes: Vec<u8> = (0..rows * row_bytes)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            // Finite f16 scales, as a model's are: random bytes can make infinities.
            for block in bytes.chunks_exact_mut(ty.block_bytes()) {
                for &at in ty.half_fields() {
                    block[at + 1] = 0x20 | (block[at + 1] & 0x07);
                }
            }
            QMatrix::new(ty, cols, BlockBytes::Owned(bytes), true)
        })
        .collect();
    let x: Vec<f32> = (0..t * cols)
        .map(|i| ((i * 31 % 97) as f32 - 48.0) / 13.0)
        .collect();
    let mut out = vec![0f32; t * rows];
    let pass = |out: &mut [f32]| {
        for m in &matrices {
            qmatmul_t_into(&mut Activations::new(&x), m, out, rows, 0);
        }
    };
    // The first pass repacks the matrices.
    pass(&mut out);
    let bytes: usize = matrices.iter().map(QMatrix::file_bytes).sum();
    for _ in 0..3 {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        for _ in 0..ROUNDS {
            pass(&mut out);
        }
        let (seconds, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!(
            "{ty:?} {rows} x {cols}, {t} row(s): {:.2} GB/s of file bytes, {:.1} G multiply-adds/s, \
             {:.2} GB per CPU-second",
            (bytes * ROUNDS) as f64 / seconds / 1e9,
            (MATRICES * ROUNDS * rows * cols * t) as f64 / seconds / 1e9,
            (bytes * ROUNDS) as f64 / cpu / 1e9
        );
    }
    std::hint::black_box(&out);
}

/// The CPU time of this process so far (all threads, user and system), in seconds.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()), 0);
        usage.assume_init()
    };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    time(usage.ru_utime) + time(usage.ru_stime)
}
