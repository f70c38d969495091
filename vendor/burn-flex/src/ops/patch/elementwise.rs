//! Element-wise operations on all threads once a tensor is large enough, written in place or,
//! for a tensor another holds, anew. Upstream maps every tensor in one thread: at ResNet-18's
//! deeper layers (under 4 M values a batch of 32) the ReLU, its gradient and the optimizer's
//! updates ran on one core while the others waited. Zero-filled buffers likewise: catdog keeps
//! freed memory in the heap (src/device/allocator.rs), so `vec![0.0; n]` is a memset on the
//! calling thread, not fresh zero pages.

use alloc::vec::Vec;

use rayon::prelude::*;

/// Slices at least this long are shared out between the threads (256 KB of f32: far
/// longer than a rayon task takes to start).
pub(crate) const PARALLEL_FROM: usize = 1 << 16;

/// Values per task: 64 KB of f32, two such stay in a core's L2 cache.
pub(crate) const CHUNK: usize = 1 << 14;

/// `len` copies of `zero`, written on all threads from [`PARALLEL_FROM`] values.
pub(crate) fn zeroed<E: Send + Sync + Copy>(len: usize, zero: E) -> Vec<E> {
    if len < PARALLEL_FROM {
        return alloc::vec![zero; len];
    }
    super::par_written(len, CHUNK, |_, out| {
        out.iter_mut().for_each(|o| {
            o.write(zero);
        })
    })
}

/// `values[i] = op(values[i])` for every value.
pub(crate) fn map_in_place<E: Send + Copy>(values: &mut [E], op: impl Fn(E) -> E + Sync) {
    let map = |chunk: &mut [E]| chunk.iter_mut().for_each(|x| *x = op(*x));
    match values.len() >= PARALLEL_FROM {
        true => values.par_chunks_mut(CHUNK).for_each(map),
        false => map(values),
    }
}

/// `values[i] = op(values[i], other[i])` for every value (`other` at least as long).
pub(crate) fn zip_in_place<E: Send + Sync + Copy>(
    values: &mut [E],
    other: &[E],
    op: impl Fn(E, E) -> E + Sync,
) {
    let other = &other[..values.len()];
    let zip = |(chunk, other): (&mut [E], &[E])| {
        chunk
            .iter_mut()
            .zip(other)
            .for_each(|(x, &y)| *x = op(*x, y))
    };
    match values.len() >= PARALLEL_FROM {
        true => values
            .par_chunks_mut(CHUNK)
            .zip(other.par_chunks(CHUNK))
            .for_each(zip),
        false => zip((values, other)),
    }
}

/// `op` of each of `values`, in a new vector (for a tensor another holds too).
pub(crate) fn mapped<E: Send + Sync + Copy>(values: &[E], op: impl Fn(E) -> E + Sync) -> Vec<E> {
    if values.len() < PARALLEL_FROM {
        return values.iter().map(|&x| op(x)).collect();
    }
    super::par_written(values.len(), CHUNK, |i, out| {
        for (out, &x) in out.iter_mut().zip(&values[i * CHUNK..]) {
            out.write(op(x));
        }
    })
}
